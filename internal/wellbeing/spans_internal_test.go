package wellbeing

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// plainSpans is spans written the plain way, rune by rune into a builder:
// the fast spans must split every text exactly as it does.
func plainSpans(text string) ([]string, [][2]int) {
	var out []string
	var at [][2]int
	var b strings.Builder
	start, end := -1, 0
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			at = append(at, [2]int{start, end})
			b.Reset()
		}
		start = -1
	}
	for i, r := range text {
		_, width := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\'' || r == '’' || r == 'ʼ':
			if start >= 0 {
				end = i + width
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
			end = i + width
			b.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return out, at
}

func FuzzSpansAsPlain(f *testing.F) {
	for _, s := range []string{
		"", "I don't want to LIVE", "don’t'", "'quoted' words", "Ärger über ÖL", "x\xffy", "self-harm\u00ad",
		"ß suicide\u0301", "ʼtis 42nd", "UPPER lower MiXeD9", "end'", "a''b", "日本語 text",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		gotWords, gotAt := spans(text)
		wantWords, wantAt := plainSpans(text)
		if !slices.Equal(gotWords, wantWords) || !slices.Equal(gotAt, wantAt) {
			t.Fatalf("spans(%q) = %q %v, want %q %v", text, gotWords, gotAt, wantWords, wantAt)
		}
	})
}

func BenchmarkMatches(b *testing.B) {
	text := strings.Repeat("It has been like this for months. I don't know what to do, and I'm tired. ", 8)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			spans(text)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			plainSpans(text)
		}
	})
}
