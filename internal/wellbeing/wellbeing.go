// Package wellbeing holds what attune does to look after the people who
// label: it finds dialogues that mention suicide or self-harm, so that the
// workspace can announce them with a content note before showing them, and
// it keeps track of stretches of continuous work, so that the workspace can
// offer a break. It is pure: no web, no database. docs/wellbeing.md lists
// the words and states the policy; a test keeps the two in step.
package wellbeing

import (
	"slices"
	"time"
	"unicode"
	"unicode/utf8"
)

// terms are the words and phrases that mark a dialogue as mentioning
// suicide or self-harm. They are matched on whole words, ignoring case,
// apostrophes and the hyphen in "self-harm", so "Don't" matches "dont" and
// "self harm" matches "self-harm". The list favours phrases a person uses
// about themselves; words with many everyday senses ("cut myself" while
// cooking, "can't go on" at work) are left out, and leads mark what the
// list misses. Keep docs/wellbeing.md in step.
var terms = []string{
	// Suicide.
	"suicide", "suicides", "suicidal", "suicidality",
	"kill myself", "killing myself", "killed myself",
	"end my life", "ending my life", "end it all", "ending it all",
	"take my own life", "taking my own life", "take my life",
	"want to die", "wanna die", "wish i was dead", "wish i were dead",
	"better off dead", "better off without me",
	"no reason to live", "nothing to live for", "not worth living",
	"dont want to live", "do not want to live",
	"dont want to be alive", "do not want to be alive",
	"want to be here anymore", "want to be here any more",
	"unalive", "unaliving",
	"hang myself", "hanging myself",
	// Self-harm.
	"self harm", "self harming", "self harmed", "selfharm",
	"self injury", "self injuring", "self injure",
	"harm myself", "harming myself", "hurt myself on purpose",
	"want to hurt myself", "wanted to hurt myself",
	"cutting myself",
	"overdose", "overdosed", "overdosing",
}

// exceptions are everyday phrases that contain a term without meaning it;
// a term inside one of them does not count.
var exceptions = []string{
	"killing myself laughing", "kill myself laughing",
	"cutting myself some slack", "cutting myself off",
}

// Terms returns the words and phrases the scan looks for, as documented.
func Terms() []string { return append([]string(nil), terms...) }

// Exceptions returns the everyday phrases in which a term does not count.
func Exceptions() []string { return append([]string(nil), exceptions...) }

// phrase is a term split into normalised words.
type phrase struct {
	text  string
	words []string
}

// byFirst indexes the terms and the exceptions by their first word, so a
// scan looks only at phrases that can start at each word.
var byFirst, exceptFirst = index(terms), index(exceptions)

func index(list []string) map[string][]phrase {
	m := map[string][]phrase{}
	for _, t := range list {
		w := words(t)
		m[w[0]] = append(m[w[0]], phrase{text: t, words: w})
	}
	return m
}

// words splits text into lower-case words of letters and digits.
// Apostrophes vanish (don't → dont) and every other character separates
// words (self-harm → self harm).
func words(text string) []string {
	ws, _ := spans(text)
	return ws
}

// spans splits text as words does, and also returns where each word starts
// and ends in text, in bytes, so that a match can be shown in place.
func spans(text string) ([]string, [][2]int) {
	// Pages scan every message of a dialogue on every view, so the words
	// are lower-cased into one buffer and cut from one string made of it,
	// rather than built one allocation each.
	lower := make([]byte, 0, len(text))
	// About one word in five bytes of prose; append grows past it.
	cuts := make([][2]int, 0, len(text)/5+1) // each word's bounds in lower
	at := make([][2]int, 0, cap(cuts))
	start, end, from := -1, 0, 0
	flush := func() {
		if start >= 0 && len(lower) > from {
			cuts = append(cuts, [2]int{from, len(lower)})
			at = append(at, [2]int{start, end})
		}
		start, from = -1, len(lower)
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				if start < 0 {
					start = i
				}
				lower = append(lower, c)
				end = i + 1
			case 'A' <= c && c <= 'Z':
				if start < 0 {
					start = i
				}
				lower = append(lower, c+'a'-'A')
				end = i + 1
			case c == '\'':
				if start >= 0 {
					end = i + 1
				}
			default:
				flush()
			}
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '’' || r == 'ʼ':
			if start >= 0 {
				end = i + width
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
			lower = utf8.AppendRune(lower, unicode.ToLower(r))
			end = i + width
		default:
			flush()
		}
		i += width
	}
	flush()
	all := string(lower)
	out := make([]string, len(cuts))
	for k, c := range cuts {
		out[k] = all[c[0]:c[1]]
	}
	return out, at
}

// Match is one place a term occurs in a text: the term in its documented
// spelling, and the bytes of the text it covers, Start inclusive and End
// exclusive, from the first letter of its first word to the last letter
// of its last.
type Match struct {
	Term       string
	Start, End int
}

// Matches returns every place a term occurs in text, in order and never
// overlapping, by the rules Scan applies (whole words, not inside an
// exception). Where two terms start at one word the longer is taken.
func Matches(text string) []Match {
	ws, at := spans(text)
	excluded := make([]bool, len(ws))
	for i := range ws {
		for _, p := range exceptFirst[ws[i]] {
			if match(ws, i, p.words) {
				for j := range p.words {
					excluded[i+j] = true
				}
			}
		}
	}
	var out []Match
	for i := 0; i < len(ws); i++ {
		if excluded[i] {
			continue
		}
		var best *phrase
		for k, p := range byFirst[ws[i]] {
			if match(ws, i, p.words) && (best == nil || len(p.words) > len(best.words)) {
				best = &byFirst[ws[i]][k]
			}
		}
		if best == nil {
			continue
		}
		n := len(best.words)
		out = append(out, Match{Term: best.text, Start: at[i][0], End: at[i+n-1][1]})
		i += n - 1
	}
	return out
}

// Found returns the distinct terms found in the texts, in their documented
// spelling, in the order they first occur. It finds what Scan finds, and
// every other term too.
func Found(texts ...string) []string {
	found := make([][]Match, len(texts))
	for i, text := range texts {
		found[i] = Matches(text)
	}
	return TermsOf(found...)
}

// TermsOf returns the terms of matches (each text's Matches, in order), each
// once, in the order they first occur: Found for texts already scanned.
func TermsOf(matches ...[]Match) []string {
	var out []string
	for _, ms := range matches {
		for _, m := range ms {
			if !slices.Contains(out, m.Term) {
				out = append(out, m.Term)
			}
		}
	}
	return out
}

// Scan reports the first term found in the texts (in the documented
// spelling) and whether one was found. A term is found only as whole
// words, never inside a longer word ("suitcase" holds no "suicide") nor
// inside one of the exceptions.
func Scan(texts ...string) (term string, found bool) {
	for _, text := range texts {
		ws := words(text)
		excluded := make([]bool, len(ws))
		for i := range ws {
			for _, p := range exceptFirst[ws[i]] {
				if match(ws, i, p.words) {
					for j := range p.words {
						excluded[i+j] = true
					}
				}
			}
		}
		for i := range ws {
			if excluded[i] {
				continue
			}
			for _, p := range byFirst[ws[i]] {
				if match(ws, i, p.words) {
					return p.text, true
				}
			}
		}
	}
	return "", false
}

// match reports whether want occurs in ws starting at i.
func match(ws []string, i int, want []string) bool {
	if i+len(want) > len(ws) {
		return false
	}
	for j, w := range want {
		if ws[i+j] != w {
			return false
		}
	}
	return true
}

// Gap is the pause that ends a stretch of continuous work: a person who
// has been away this long has had a break.
const Gap = 10 * time.Minute

// DefaultBreakAfter is how long a stretch runs before a break is offered,
// unless configured otherwise.
const DefaultBreakAfter = 50 * time.Minute

// Stretch is a spell of continuous work: when it started and when the
// person was last seen working. The zero Stretch is no stretch.
type Stretch struct {
	Start time.Time
	Last  time.Time
}

// Visit returns the stretch after the person is seen working at now: the
// same stretch carried on, or a new one starting now when there was none
// or the last sighting is more than Gap ago.
func (s Stretch) Visit(now time.Time) Stretch {
	if s.Start.IsZero() || now.Sub(s.Last) > Gap || now.Before(s.Start) {
		return Stretch{Start: now, Last: now}
	}
	return Stretch{Start: s.Start, Last: now}
}

// Length is how long the stretch has lasted at now.
func (s Stretch) Length(now time.Time) time.Duration {
	if s.Start.IsZero() {
		return 0
	}
	return now.Sub(s.Start)
}

// Due reports whether a break should be offered at now: the stretch has
// run for at least after.
func (s Stretch) Due(now time.Time, after time.Duration) bool {
	return !s.Start.IsZero() && after > 0 && s.Length(now) >= after
}
