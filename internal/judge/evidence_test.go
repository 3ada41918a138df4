package judge_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/rubric"
)

// threeTurns is one conversation of three turns.
const threeTurns = `{"id":"t3","messages":[{"role":"user","content":"I'm overwhelmed at work."},{"role":"assistant","content":"That sounds exhausting. What weighs most?"},{"role":"user","content":"Saying no."},{"role":"assistant","content":"Just say no more often."},{"role":"user","content":"It's not that easy."},{"role":"assistant","content":"What makes it hard for you?"}]}
`

type evidenceRow struct {
	key, value, method, reason string
	evidence                   []int
}

func (f *fixture) evidence(t *testing.T) []evidenceRow {
	t.Helper()
	rows, err := f.db.Pool().Query(context.Background(), `
		SELECT l.rubric_item_key, l.value, d.method, d.reason, l.evidence
		FROM labels l JOIN raters r ON r.id = l.rater_id JOIN judge_label_details d ON d.label_id = l.id
		WHERE r.judge_id = $1 ORDER BY l.rubric_item_key`, f.judge.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []evidenceRow
	for rows.Next() {
		var e evidenceRow
		if err := rows.Scan(&e.key, &e.value, &e.method, &e.reason, &e.evidence); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJudgeTurnEvidence: a judge's turns are held to the rule a person's
// are, on a three-turn dialogue. Valid turns on a NO are stored with the
// label; turns past the dialogue's end, or on a YES, are refused as an
// unreadable answer is (re-asked once, then an ERROR with the problem);
// a NO without turns is an answer like any other.
func TestJudgeTurnEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		settings attune.JudgeSettings
		policy   rubric.EvidencePolicy
		answer   string
		turns    func(prompt string) []int
		// value and evidence are what every label must hold; reason is a
		// part of an ERROR's reason.
		value, method, reason string
		evidence              []int
	}{
		{name: "NO at turn 2", answer: "NO", turns: func(string) []int { return []int{2} }, value: "NO", method: "structured", evidence: []int{2}},
		{name: "turn past the end", answer: "NO", turns: func(string) []int { return []int{9} }, value: "ERROR", method: "error",
			reason: "turn 9 does not exist; this dialogue has 3 turns"},
		{name: "turns on YES", answer: "YES", turns: func(string) []int { return []int{2} }, value: "ERROR", method: "error",
			reason: "turn evidence goes only with NO"},
		{name: "no turns", answer: "NO", turns: func(string) []int { return nil }, value: "NO", method: "structured"},
		// The re-ask names the problem, and turns corrected there are kept.
		{name: "corrected on the re-ask", answer: "NO", turns: func(prompt string) []int {
			if strings.Contains(prompt, "could not be read") && strings.Contains(prompt, "turn 9 does not exist") {
				return []int{3}
			}
			return []int{9}
		}, value: "NO", method: "reasked-structured", evidence: []int{3}},
		// Samples that agree give the value and the turns of the first.
		{name: "sampled", settings: attune.JudgeSettings{Samples: 3}, answer: "NO", turns: func(string) []int { return []int{1, 3} },
			value: "NO", method: "sampled", evidence: []int{1, 3}},
		// A project that takes no evidence keeps none of the judge's.
		{name: "project takes none", policy: rubric.EvidenceOff, answer: "NO", turns: func(string) []int { return []int{2} },
			value: "NO", method: "structured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, setup{rubric: "coaching-conversation@2.0", data: threeTurns, settings: tc.settings, evidence: tc.policy, fake: fakellm.Options{
				Answer: func(prompt string, allowed []string) (string, bool) { return tc.answer, true },
				Turns:  func(prompt, _ string) []int { return tc.turns(prompt) },
			}})
			run := f.run(t, 0)
			if run.Status != attune.RunCompleted {
				t.Fatalf("run ended %s (%s)", run.Status, run.Reason)
			}
			rows := f.evidence(t)
			if len(rows) != len(f.def.Items) {
				t.Fatalf("%d labels, want %d", len(rows), len(f.def.Items))
			}
			for _, r := range rows {
				if r.value != tc.value || r.method != tc.method || !slices.Equal(r.evidence, tc.evidence) ||
					tc.reason != "" && !strings.Contains(r.reason, tc.reason) {
					t.Errorf("%s = %s by %s, evidence %v, reason %q; want %s by %s, evidence %v, reason with %q",
						r.key, r.value, r.method, r.evidence, r.reason, tc.value, tc.method, tc.evidence, tc.reason)
				}
				if tc.reason == "" && r.reason != "" {
					t.Errorf("%s: reason %q on an answer", r.key, r.reason)
				}
			}
		})
	}
}
