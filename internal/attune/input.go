package attune

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxActive bounds the active time one submission, edit or draft may
// report for an item. Totals add up over edits, so an unbounded report
// would overflow them; no one labels one dialogue for a day.
const MaxActive = 24 * time.Hour

// CheckActiveMS returns a ValidationError naming field when ms, a reported
// active time in milliseconds, is negative or over MaxActive.
func CheckActiveMS(field string, ms int64) error {
	if ms < 0 || ms > MaxActive.Milliseconds() {
		return Invalid(field, fmt.Sprintf("must be between 0 and %d (milliseconds, at most %s)", MaxActive.Milliseconds(), MaxActive))
	}
	return nil
}

// TextProblem says what makes s unfit to store as text — invalid UTF-8 or
// a NUL byte, neither of which PostgreSQL's text holds — or "" when s is
// fine. Every path that takes text from a person or a file (forms, the
// API's JSON, dataset and labels files) asks it, so that such input is a
// clear refusal naming its field instead of a failed statement.
func TextProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8 text"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL byte (\\u0000), which text cannot hold"
	}
	return ""
}

// NameProblem says what makes s unfit as a name shown to others — what
// TextProblem finds, or a character that reorders the text around it
// (the bidirectional embeddings, overrides and isolates, U+202A–U+202E
// and U+2066–U+2069): a project named with U+202E reads backwards, and
// reverses what follows it on the page — or "" when s is fine. Names of
// projects and judges are held to it.
func NameProblem(s string) string {
	if p := TextProblem(s); p != "" {
		return p
	}
	for _, r := range s {
		if r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069' {
			return fmt.Sprintf("contains the direction control U+%04X, which would reorder how the name reads; remove it", r)
		}
	}
	return ""
}

// CheckText returns a ValidationError naming field when s is not
// storable text (see TextProblem).
func CheckText(field, s string) error {
	if p := TextProblem(s); p != "" {
		return Invalid(field, p)
	}
	return nil
}
