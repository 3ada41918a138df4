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

// CheckText returns a ValidationError naming field when s is not
// storable text (see TextProblem).
func CheckText(field, s string) error {
	if p := TextProblem(s); p != "" {
		return Invalid(field, p)
	}
	return nil
}
