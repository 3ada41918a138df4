package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

func TestProjectAndImportCommands(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.NewURL(t))
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, stdin, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	must("a-long-password\n", "user", "add", "--email", "lee@example.org", "--role", "lead", "--password-stdin")
	must("a-long-password\n", "user", "add", "--email", "ann@example.org", "--role", "annotator", "--password-stdin")
	out := must("", "project", "create", "--name", "Pilot", "--rubric", "coaching-conversation@2.0", "--overlap", "2", "--lead", "lee@example.org")
	if !strings.Contains(out, `created project "Pilot"`) {
		t.Fatal(out)
	}
	if _, err := runCmd(t, env, "", "project", "create", "--name", "Pilot", "--rubric", "coaching-conversation@2.0"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := runCmd(t, env, "", "project", "create", "--name", "X", "--rubric", "nope@1"); err == nil || !strings.Contains(err.Error(), "no rubric nope@1") {
		t.Fatalf("unknown rubric: %v", err)
	}
	if _, err := runCmd(t, env, "", "project", "create", "--name", "X", "--rubric", "coaching-conversation@2.0", "--overlap", "11"); err == nil {
		t.Fatal("overlap 11 accepted")
	}
	must("", "project", "add-member", "--project", "Pilot", "--email", "ann@example.org")

	// The alt-test's ε: by who the annotators are, or a custom one.
	epsilonOf := func(name string) (float64, string) {
		t.Helper()
		var shown struct {
			Epsilon float64 `json:"epsilon"`
			Pool    string  `json:"annotator_pool"`
		}
		if err := json.Unmarshal([]byte(must("", "project", "show", name, "--json")), &shown); err != nil {
			t.Fatal(err)
		}
		return shown.Epsilon, shown.Pool
	}
	if e, pool := epsilonOf("Pilot"); e != 0.15 || pool != "trained" {
		t.Fatalf("default ε %v %s", e, pool)
	}
	must("", "project", "create", "--name", "Experts", "--rubric", "coaching-conversation@2.0", "--annotators", "experts")
	must("", "project", "create", "--name", "Custom", "--rubric", "coaching-conversation@2.0", "--epsilon", "0.25")
	if e, pool := epsilonOf("Experts"); e != 0.2 || pool != "experts" {
		t.Fatalf("experts ε %v %s", e, pool)
	}
	if e, pool := epsilonOf("Custom"); e != 0.25 || pool != "custom" {
		t.Fatalf("custom ε %v %s", e, pool)
	}
	out = must("", "project", "set", "--project", "Custom", "--annotators", "crowd")
	if e, _ := epsilonOf("Custom"); e != 0.1 || !strings.Contains(out, "alt-test ε 0.1 (a crowd)") {
		t.Fatalf("set crowd: %v %s", e, out)
	}
	for _, args := range [][]string{
		{"project", "create", "--name", "Y", "--rubric", "coaching-conversation@2.0", "--epsilon", "1"},
		{"project", "create", "--name", "Y", "--rubric", "coaching-conversation@2.0", "--annotators", "students"},
		{"project", "create", "--name", "Y", "--rubric", "coaching-conversation@2.0", "--annotators", "crowd", "--epsilon", "0.3"},
		{"project", "set", "--project", "Custom", "--epsilon", "0"},
	} {
		if _, err := runCmd(t, env, "", args...); err == nil || !strings.Contains(err.Error(), "epsilon") {
			t.Errorf("%v: %v, want an error about epsilon", args, err)
		}
	}
	if e, _ := epsilonOf("Custom"); e != 0.1 {
		t.Fatalf("a refused set changed ε to %v", e)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"id":"c1","messages":[{"role":"user","content":"I feel stuck."},{"role":"assistant","content":"What feels most stuck?"},{"role":"user","content":"Work."},{"role":"assistant","content":"Tell me more."}]}
{"id":"c2","turns":[{"role":"user","text":"I'm tired."},{"role":"assistant","text":"That sounds draining."}],"meta":{"source":"pilot"}}
`), 0o644)
	out = must("", "import", "--project", "Pilot", good)
	if !strings.Contains(out, "2 new, 0 updated, 0 unchanged") {
		t.Fatalf("import: %s", out)
	}
	out = must("", "import", good, "--project", "Pilot")
	if !strings.Contains(out, "0 new, 0 updated, 2 unchanged") {
		t.Fatalf("re-import: %s", out)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id":"c3","messages":[{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi"}]}
{"id":"c4","messages":[{"role":"bot","content":"Hi"}]}
`), 0o644)
	var stderr strings.Builder
	err := run(t.Context(), []string{"import", "--project", "Pilot", bad}, env, strings.NewReader(""), &strings.Builder{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "nothing was imported") || !strings.Contains(stderr.String(), "line 2: messages[0].role") {
		t.Fatalf("bad import: %v\n%s", err, stderr.String())
	}

	out = must("", "project", "show", "Pilot", "--json")
	var shown struct {
		Items         int   `json:"items"`
		Overlap       int   `json:"overlap"`
		ItemsByLabels []int `json:"items_by_labels"`
		Members       []struct {
			Email, Role string
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	if shown.Items != 2 || shown.Overlap != 2 || len(shown.ItemsByLabels) != 3 || shown.ItemsByLabels[0] != 2 || len(shown.Members) != 2 {
		t.Fatalf("show --json = %+v", shown)
	}
	out = must("", "project", "list")
	if !strings.Contains(out, "Pilot") || !strings.Contains(out, "coaching-conversation@2.0") {
		t.Fatalf("list: %s", out)
	}

	var tokenOut strings.Builder
	if err := run(t.Context(), []string{"token", "create", "--email", "ann@example.org", "--name", "script"}, env, strings.NewReader(""), &tokenOut, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if tok := strings.TrimSpace(tokenOut.String()); !strings.HasPrefix(tok, "att_") || len(tok) < 40 {
		t.Fatalf("token create printed %q", tok)
	}
	out = must("", "token", "list", "--email", "ann@example.org")
	if !strings.Contains(out, "script") || strings.Contains(out, strings.TrimSpace(tokenOut.String())) {
		t.Fatalf("token list shows the secret or lacks the token:\n%s", out)
	}
}
