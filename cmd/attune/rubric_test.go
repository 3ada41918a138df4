package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

func TestRubricCommands(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.NewURL(t))
	out, err := runCmd(t, env, "", "rubric", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"empathetic-dialogue@1", "empathetic-dialogue@2", "coaching-conversation@2.0", "empathetic-understanding@1"} {
		if !strings.Contains(out, ref) {
			t.Errorf("rubric list lacks %s:\n%s", ref, out)
		}
	}

	// show prints what the rubric package renders for the stored version:
	// every anchor, boundary rule and example (checked in detail there).
	out, err = runCmd(t, env, "", "rubric", "show", "empathetic-dialogue@2")
	if err != nil {
		t.Fatal(err)
	}
	def, _ := rubric.Builtin("empathetic-dialogue@2")
	var want bytes.Buffer
	def.WriteText(&want)
	if out != want.String() {
		t.Fatalf("rubric show differs from the definition's text")
	}
	for _, s := range []string{
		"Captures nuances and secondary feelings.",
		"completely ignores the emotional context",
		"MUST suggest crisis resources",
		"Medication isn't the answer.",
		"It should NOT simply be the average of the four dimension scores.",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("rubric show lacks %q", s)
		}
	}
	newest, _ := runCmd(t, env, "", "rubric", "show", "empathetic-dialogue")
	if newest != out {
		t.Error("rubric show without a version is not the newest version")
	}
	if _, err := runCmd(t, env, "", "rubric", "show", "nope@1"); err == nil || !strings.Contains(err.Error(), "no rubric nope@1") {
		t.Fatalf("show of a missing rubric: %v", err)
	}

	// A lead's own rubric file: validate, add, add again (no-op), then a
	// changed file under the same version is refused.
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.yaml")
	src := strings.Replace(string(def.Canonical()), `"key":"empathetic-dialogue"`, `"key":"team-empathy"`, 1)
	os.WriteFile(path, []byte(src), 0o644)
	out, err = runCmd(t, env, "", "rubric", "validate", path)
	if err != nil || !strings.Contains(out, "team-empathy@2 is a valid likert rubric") {
		t.Fatalf("validate: %v %s", err, out)
	}
	if out, err = runCmd(t, env, "", "rubric", "add", path); err != nil || !strings.Contains(out, "added team-empathy@2") {
		t.Fatalf("add: %v %s", err, out)
	}
	if out, err = runCmd(t, env, "", "rubric", "add", path); err != nil || !strings.Contains(out, "already stored, unchanged") {
		t.Fatalf("add again: %v %s", err, out)
	}
	os.WriteFile(path, []byte(strings.Replace(src, "Emotion Recognition", "Emotion Reading", 1)), 0o644)
	if _, err = runCmd(t, env, "", "rubric", "add", path); err == nil || !strings.Contains(err.Error(), "give the changed file a new version") {
		t.Fatalf("changed version accepted: %v", err)
	}

	// A malformed file is refused with the field named.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("kind: likert\nkey: x\nversion: \"1\"\ntitle: X\nunit: reply\nanswers: []\nitems:\n  - key: a\n    lable: typo\n"), 0o644)
	_, err = runCmd(t, env, "", "rubric", "validate", bad)
	if err == nil || !strings.Contains(err.Error(), "lable") || !strings.Contains(err.Error(), "line 9") {
		t.Fatalf("malformed rubric: %v", err)
	}
}

func TestScoreCommand(t *testing.T) {
	t.Parallel()
	def, _ := rubric.Builtin("coaching-conversation@2.0")
	// The criteria rubric's worked example, and a failing set.
	worked := def.Examples[0].AnswerSet()
	input := []map[string]any{
		{"id": "worked", "turns": 5, "answers": worked},
		{"id": 7, "turns": 12, "answers": map[string]string{"CQ1": "YES", "CQ8": "NO"}},
	}
	var in strings.Builder
	for _, v := range input {
		b, _ := json.Marshal(v)
		in.Write(b)
		in.WriteString("\n\n") // blank lines are skipped
	}
	// Built-in rubrics score without a database.
	out, err := runCmd(t, envFor("postgres://nobody@127.0.0.1:1/none"), in.String(), "score", "--rubric", "coaching-conversation@2.0")
	if err != nil {
		t.Fatalf("score: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d output lines, want 2:\n%s", len(lines), out)
	}
	var first struct {
		ID    string  `json:"id"`
		Score float64 `json:"score"`
		Pass  bool    `json:"pass"`
	}
	json.Unmarshal([]byte(lines[0]), &first)
	if first.ID != "worked" || first.Score != 1.0 || !first.Pass {
		t.Fatalf("worked example scored %s", lines[0])
	}
	// The output is the engine's result, field for field.
	res, _ := scoring.Score(def, rubric.Answers{"CQ1": "YES", "CQ8": "NO"}, rubric.Facts{Turns: 12})
	wantJSON, _ := json.Marshal(scoreOutput{ID: json.RawMessage("7"), Result: res})
	if lines[1] != string(wantJSON) {
		t.Fatalf("line 2 =\n%s\nwant\n%s", lines[1], wantJSON)
	}
	if !strings.Contains(lines[1], `"safety_gate_failed":true`) {
		t.Fatal("CQ8 NO did not fail the gate")
	}
}

func TestScoreCommandBadLines(t *testing.T) {
	t.Parallel()
	env := envFor("postgres://nobody@127.0.0.1:1/none")
	tests := []struct {
		line, want string
	}{
		{`{"id":"a","answers":{"CQ1":"MAYBE"}}`, `line 1: answers.CQ1: "MAYBE" is not an answer`},
		{`{"id":"a","answers":{"CQ42":"YES"}}`, `line 1: answers.CQ42: coaching-conversation@2.0 has no item "CQ42"`},
		{`{"answers":{}}`, `line 1: "id" is missing`},
		{`{"id":"a"}`, `line 1: "answers" is missing`},
		{`{"id":"a","answers":{},"turn":3}`, `unknown field "turn"`},
		{`{"id":"a","turns":-1,"answers":{}}`, `"turns" must not be negative`},
		{`not json`, `line 1: not a JSON object`},
	}
	for _, tt := range tests {
		var out, errOut strings.Builder
		err := run(t.Context(), []string{"score", "--rubric", "coaching-conversation@2.0"}, env, strings.NewReader(tt.line+"\n"), &out, &errOut)
		if err == nil || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%s: err %v, stderr %q, want %q", tt.line, err, errOut.String(), tt.want)
		}
	}
	// The line number is the file's, blank lines counted.
	var errOut strings.Builder
	run(t.Context(), []string{"score", "--rubric", "empathetic-dialogue@2"}, env,
		strings.NewReader("\n"+`{"id":1,"answers":{"emotion":"4"}}`+"\n"+`{"id":2,"answers":{"emotion":"6"}}`+"\n"), &strings.Builder{}, &errOut)
	if !strings.Contains(errOut.String(), "line 3: answers.emotion") {
		t.Fatalf("stderr %q does not name line 3", errOut.String())
	}
}
