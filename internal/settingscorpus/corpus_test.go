package settingscorpus_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/attune/attune/internal/settingscorpus"
)

// TestCorpusVerdicts checks the corpus against the rules themselves: each
// case is refused on exactly the fields it names, so the path tests that
// compare with the rules cannot agree on a wrong verdict.
func TestCorpusVerdicts(t *testing.T) {
	t.Parallel()
	c := settingscorpus.Load()
	check := func(kind string, k settingscorpus.Case, got map[string]string) {
		t.Helper()
		keys := slices.Sorted(maps.Keys(got))
		want := slices.Sorted(slices.Values(k.Refused))
		if !slices.Equal(keys, want) {
			t.Errorf("%s %q: refused on %v, want %v (%v)", kind, k.Name, keys, want, got)
		}
	}
	for _, k := range c.Judges {
		check("judge", k, c.WantJudge(c.Values(c.JudgeBase, k)))
	}
	for _, k := range c.Projects {
		check("project", k, c.WantProject(c.Values(c.ProjectBase, k)))
	}
}
