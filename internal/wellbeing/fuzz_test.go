package wellbeing_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/attune/attune/internal/wellbeing"
)

// norm writes text as the scan reads it: lower-case words of letters and
// digits, apostrophes dropped, anything else a space.
func norm(text string) string {
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == '\'' || r == '’' || r == 'ʼ':
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(' ')
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// FuzzMatches: every match lies inside the text, in order and apart from
// the others, and covers exactly its term; Scan finds something exactly
// when Matches does.
func FuzzMatches(f *testing.F) {
	for _, s := range []string{
		"I'm too scared to commit suicide like he did! I enjoy living life",
		"I don’t want to live", "Self‐harm, SELF HARMING", "killing myself laughing, then kill myself",
		"x overdose overdose", "", "ß suicide\u0301", "self-\u00adharm",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ms := wellbeing.Matches(text)
		at := 0
		for _, m := range ms {
			if m.Start < at || m.End <= m.Start || m.End > len(text) {
				t.Fatalf("Matches(%q): %+v out of order or bounds", text, ms)
			}
			if got := norm(text[m.Start:m.End]); got != m.Term {
				t.Fatalf("Matches(%q): %q covers %q, not its term", text, text[m.Start:m.End], got)
			}
			at = m.End
		}
		_, found := wellbeing.Scan(text)
		if found != (len(ms) > 0) || found != (len(wellbeing.Found(text)) > 0) {
			t.Fatalf("Scan(%q) found %v; Matches %+v", text, found, ms)
		}
	})
}
