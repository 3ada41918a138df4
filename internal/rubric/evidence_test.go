package rubric_test

import (
	"strings"
	"testing"

	"github.com/attune/attune/internal/rubric"
)

// TestValidateEvidence holds the one rule every path uses for turn
// evidence: only on failing answers, turns within the dialogue, no repeats,
// required where the project says so, refused where it is off.
func TestValidateEvidence(t *testing.T) {
	crit := builtin(t, "coaching-conversation@2.0")
	likert := builtin(t, "empathetic-dialogue@2")
	ck := crit.Items[0].Key
	lk := likert.Items[0].Key
	facts := rubric.Facts{Turns: 5}
	cases := []struct {
		name   string
		d      *rubric.Definition
		a      rubric.Answers
		e      rubric.Evidence
		p      rubric.EvidencePolicy
		facts  rubric.Facts
		errors []string // parts of the blocking messages, in order
	}{
		{"NO with turns", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{ck: {2, 5}}, rubric.EvidenceOptional, facts, nil},
		{"NO without turns, optional", crit, rubric.Answers{ck: rubric.No}, nil, rubric.EvidenceOptional, facts, nil},
		{"NO without turns, required", crit, rubric.Answers{ck: rubric.No}, nil, rubric.EvidenceRequired, facts, []string{"requires the turn"}},
		{"YES with turns", crit, rubric.Answers{ck: rubric.Yes}, rubric.Evidence{ck: {1}}, rubric.EvidenceOptional, facts, []string{"only with NO, and the answer is YES"}},
		{"turn past the end", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{ck: {6}}, rubric.EvidenceOptional, facts, []string{"turn 6 does not exist; this dialogue has 5 turns"}},
		{"turn zero", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{ck: {0}}, rubric.EvidenceOptional, facts, []string{"turn 0 does not exist; turns are numbered from 1"}},
		{"duplicate", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{ck: {3, 3}}, rubric.EvidenceOptional, facts, []string{"turn 3 is named twice"}},
		{"unknown count takes any positive turn", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{ck: {40}}, rubric.EvidenceOptional, rubric.Facts{}, nil},
		{"off refuses turns", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{ck: {1}}, rubric.EvidenceOff, facts, []string{"does not take turn evidence"}},
		{"unknown item", crit, rubric.Answers{ck: rubric.No}, rubric.Evidence{"nope": {1}}, rubric.EvidenceOptional, facts, []string{`"nope", which is not an item`}},
		{"Likert 2 with turns", likert, rubric.Answers{lk: "2"}, rubric.Evidence{lk: {1}}, rubric.EvidenceOptional, facts, nil},
		{"Likert 3 with turns", likert, rubric.Answers{lk: "3"}, rubric.Evidence{lk: {1}}, rubric.EvidenceOptional, facts, []string{"level of 2 or less, and the answer is 3"}},
		{"Likert 1 required", likert, rubric.Answers{lk: "1"}, nil, rubric.EvidenceRequired, facts, []string{"requires the turn"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.d.ValidateEvidence(c.a, c.e, c.facts, c.p).Errors()
			if len(got) != len(c.errors) {
				t.Fatalf("got %d errors %v, want %d %v", len(got), got, len(c.errors), c.errors)
			}
			for i, want := range c.errors {
				if !strings.Contains(got[i].Message, want) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i].Message, want)
				}
			}
		})
	}
}

func TestParseEvidencePolicy(t *testing.T) {
	for in, want := range map[string]rubric.EvidencePolicy{"": rubric.EvidenceOptional, "off": rubric.EvidenceOff, "required": rubric.EvidenceRequired} {
		if got, err := rubric.ParseEvidencePolicy(in); err != nil || got != want {
			t.Errorf("ParseEvidencePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := rubric.ParseEvidencePolicy("sometimes"); err == nil {
		t.Error("ParseEvidencePolicy accepted an unknown setting")
	}
}

// TestCanFail: criteria fail on NO and Likert items on 1 or 2; a single
// rating never fails, so it takes no evidence.
func TestCanFail(t *testing.T) {
	for _, c := range []struct {
		ref  string
		want bool
	}{{"coaching-conversation@2.0", true}, {"empathetic-dialogue@2", true}, {"empathetic-understanding@1", false}} {
		d := builtin(t, c.ref)
		for i := range d.Items {
			if got := d.CanFail(&d.Items[i]); got != c.want {
				t.Errorf("%s %s: CanFail = %v, want %v", c.ref, d.Items[i].Key, got, c.want)
			}
		}
	}
}
