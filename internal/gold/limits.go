package gold

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxSpreadLimit is the widest maximum spread a project may set: beyond
// it, no rubric's numeric scale has answers far enough apart for the
// setting to mean anything but "always take the median".
const MaxSpreadLimit = 10

// MaxNote is the longest note, in characters, an adjudication keeps.
const MaxNote = 2000

// ParseMaxSpread reads a maximum spread as a lead typed it (on the gold
// page, in the API's JSON, as a command's flag) and returns it, or a
// problem that says what is allowed. Every path asks it, so that all of
// them accept the same values and refuse the rest in the same words.
func ParseMaxSpread(typed string) (int, string) {
	n, err := strconv.Atoi(strings.TrimSpace(typed))
	if err != nil {
		return 0, SpreadProblem(-1)
	}
	return n, SpreadProblem(n)
}

// SpreadProblem says what is wrong with n as a project's maximum spread,
// "" when nothing is.
func SpreadProblem(n int) string {
	if n < 0 || n > MaxSpreadLimit {
		return fmt.Sprintf("enter a whole number from 0 to %d", MaxSpreadLimit)
	}
	return ""
}

// NoteProblem says what is wrong with an adjudication's note, "" when
// nothing is.
func NoteProblem(note string) string {
	if n := utf8.RuneCountInString(note); n > MaxNote {
		return fmt.Sprintf("keep the note to %d characters or fewer (this one has %d)", MaxNote, n)
	}
	return ""
}
