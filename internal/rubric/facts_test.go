package rubric_test

import (
	"slices"
	"testing"

	"github.com/attune/attune/internal/rubric"
)

func TestFactsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		texts  []string
		marked bool
		crisis rubric.Presence
		terms  []string
	}{
		{"no signal leaves crisis unknown", []string{"Work is hard.", "That sounds hard."}, false, rubric.Unknown, nil},
		{"a word of the list", []string{"I'm too scared to commit suicide like he did!", "I enjoy living life"}, false, rubric.Signalled, []string{"suicide"}},
		{"every word, in order, from any role", []string{"I took an overdose", "Overdoses can be dangerous; is this about suicide?"}, false, rubric.Signalled, []string{"overdose", "suicide"}},
		{"a lead's mark", []string{"I feel low."}, true, rubric.Signalled, nil},
		{"an exception is no signal", []string{"I was killing myself laughing"}, false, rubric.Unknown, nil},
	}
	for _, tt := range tests {
		f := rubric.FactsOf(7, tt.texts, tt.marked)
		if f.Turns != 7 || f.Crisis != tt.crisis || !slices.Equal(f.Terms, tt.terms) || f.Marked != tt.marked {
			t.Errorf("%s: FactsOf = %+v; want crisis %v, terms %q, marked %v", tt.name, f, tt.crisis, tt.terms, tt.marked)
		}
	}
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	block := rubric.Issue{Item: "CQ8", Severity: rubric.Blocking, Message: "b"}
	warn := rubric.Issue{Item: "CQ9", Severity: rubric.Warning, Message: "w"}
	tests := []struct {
		issues    rubric.Issues
		confirmed bool
		want      rubric.Verdict
		behind    rubric.Issues
	}{
		{nil, false, rubric.Accepted, nil},
		{rubric.Issues{warn}, false, rubric.NeedsConfirmation, rubric.Issues{warn}},
		{rubric.Issues{warn}, true, rubric.Accepted, nil},
		{rubric.Issues{warn, block}, true, rubric.Refused, rubric.Issues{block}},
		{rubric.Issues{block}, false, rubric.Refused, rubric.Issues{block}},
	}
	for _, tt := range tests {
		got, behind := tt.issues.Verdict(tt.confirmed)
		if got != tt.want || !slices.Equal(behind, tt.behind) {
			t.Errorf("%v.Verdict(%v) = %s, %v; want %s, %v", tt.issues, tt.confirmed, got, behind, tt.want, tt.behind)
		}
	}
}
