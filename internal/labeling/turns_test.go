package labeling_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
)

// TestParseEvidence: turns typed as the page's form holds them are read
// by item, separators as people type them; a word that is no number is
// an issue on its item naming the word, and its turns are left out; an
// empty text is no evidence. What the numbers mean is left to the rubric.
func TestParseEvidence(t *testing.T) {
	t.Parallel()
	got, issues := labeling.ParseEvidence(map[string]string{
		"CQ3": "2, 5", "CQ4": " 3;1  4 ", "CQ5": "", "CQ6": "2, x", "CQ7": "0, -1, 99", "CQ1": "2,,3", "CQ2": "two",
	})
	want := rubric.Evidence{"CQ3": {2, 5}, "CQ4": {3, 1, 4}, "CQ7": {0, -1, 99}, "CQ1": {2, 3}}
	if len(got) != len(want) {
		t.Fatalf("evidence %v, want %v", got, want)
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: turns %v, want %v", k, got[k], w)
		}
	}
	if len(issues) != 2 || issues[0].Item != "CQ2" || issues[1].Item != "CQ6" {
		t.Fatalf("issues %v, want one on CQ2 then one on CQ6", issues)
	}
	for _, is := range issues {
		if is.Severity != rubric.Blocking {
			t.Errorf("issue %v does not block", is)
		}
	}
	if m := issues[1].Message; !strings.Contains(m, `CQ6: "x" is not a turn number`) || !strings.Contains(m, "such as 2, 5") {
		t.Errorf("message %q", m)
	}
	if s := labeling.TurnsText([]int{2, 5}); s != "2, 5" {
		t.Errorf("TurnsText = %q", s)
	}
	if turns, bad := labeling.ParseTurns(labeling.TurnsText([]int{1, 12})); bad != "" || !slices.Equal(turns, []int{1, 12}) {
		t.Errorf("round trip: %v %q", turns, bad)
	}
}
