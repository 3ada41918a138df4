package kit

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// Capitalize starts a store message with a capital, as a sentence on the page.
func Capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// PublicText is the message of err fit to show, as a sentence: a
// validation error's field messages without the field names.
func PublicText(err error) string {
	var v *attune.ValidationError
	if errors.As(err, &v) {
		msgs := make([]string, 0, len(v.Fields))
		for _, m := range v.Fields {
			msgs = append(msgs, Capitalize(m))
		}
		slices.Sort(msgs)
		return strings.Join(msgs, " ")
	}
	return Capitalize(attune.PublicMessage(err))
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FieldErrors returns the messages per field of a validation error (an
// empty map for none).
func FieldErrors(err error) map[string]string {
	var v *attune.ValidationError
	if errors.As(err, &v) {
		return v.Fields
	}
	return map[string]string{}
}

// Has reports whether errs has a message for field.
func Has(errs map[string]string, field string) bool {
	_, ok := errs[field]
	return ok
}

// Count writes a whole number with thousands separated, as 1,234,567.
func Count(n int64) string { return Group(strconv.FormatInt(n, 10)) }

// Group puts commas between the thousands of a decimal number's whole part.
func Group(s string) string {
	whole, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	whole = strings.TrimPrefix(whole, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// Tokens writes a call's or a sum's tokens in a line.
func Tokens(in, cached, out int64) string {
	return fmt.Sprintf("%s in (%s cached), %s out", Count(in), Count(cached), Count(out))
}

// Positive is n when it is set (above 0), else nil: null in the JSON, as
// a form's empty field.
func Positive(n int) *int {
	if n > 0 {
		return &n
	}
	return nil
}

// FormatTime writes a moment to the minute in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// ShortTime is FormatTime, or nothing for the zero time.
func ShortTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return FormatTime(t)
}

// IsHX reports whether htmx sent the request and wants a part of the page.
// A history restore wants the whole page.
func IsHX(r *http.Request) bool {
	return r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-History-Restore-Request") != "true"
}

// RaterLabel names a rater for people: a person brought in by an import
// is marked so, since they have no account and may share a name with one.
func RaterLabel(name, kind string, imported bool) string {
	switch {
	case kind == "judge":
		return name + " (judge)"
	case imported:
		return name + " (imported)"
	}
	return name
}

// EpsilonLabel says an ε and who the annotators are: "0.2 (experts)".
func EpsilonLabel(e float64) string {
	return fmt.Sprintf("%s (%s)", strconv.FormatFloat(e, 'f', -1, 64), attune.PoolOfEpsilon(e).Label)
}

// AltEpsilonLabel is EpsilonLabel, marked when ε is outside the usual
// 0.05 to 0.3 (the lead asked for it).
func AltEpsilonLabel(e float64, unusual bool) string {
	if unusual {
		return EpsilonLabel(e) + ", an unusual ε (the usual are 0.05 to 0.3)"
	}
	return EpsilonLabel(e)
}

// ToAnswers reads a form's answers, by rubric item key, as rubric values.
func ToAnswers(in map[string]string) rubric.Answers {
	out := make(rubric.Answers, len(in))
	for k, v := range in {
		out[k] = rubric.Value(v)
	}
	return out
}
