package gold

import (
	"strings"
	"testing"
)

func TestParseMaxSpread(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typed   string
		want    int
		problem bool
	}{
		{"0", 0, false}, {"1", 1, false}, {" 3 ", 3, false}, {"10", 10, false},
		{"11", 0, true}, {"-1", 0, true}, {"", 0, true}, {"abc", 0, true}, {"1.5", 0, true},
	} {
		n, p := ParseMaxSpread(c.typed)
		if (p != "") != c.problem || (!c.problem && n != c.want) {
			t.Errorf("ParseMaxSpread(%q) = %d, %q", c.typed, n, p)
		}
		if c.problem && p != "enter a whole number from 0 to 10" {
			t.Errorf("ParseMaxSpread(%q) says %q", c.typed, p)
		}
	}
}

func TestNoteProblem(t *testing.T) {
	t.Parallel()
	// Characters, not bytes: 2,000 é are allowed though they are 4,000 bytes.
	if p := NoteProblem(strings.Repeat("é", MaxNote)); p != "" {
		t.Errorf("a note of %d characters: %q", MaxNote, p)
	}
	if p := NoteProblem(strings.Repeat("é", MaxNote+1)); p != "keep the note to 2000 characters or fewer (this one has 2001)" {
		t.Errorf("a note one too long: %q", p)
	}
}
