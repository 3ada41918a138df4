package attune

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits and defaults of a project's settings. Every path that creates or
// changes a project (the web form, the command line, the store) holds it
// to these through Project.Validate.
const (
	MaxProjectName  = 200   // characters
	MaxInstructions = 20000 // characters of Markdown
	MaxOverlap      = 10
	MaxLease        = 24 * time.Hour
	DefaultOverlap  = 3
	DefaultLease    = 30 * time.Minute
)

// The messages of a project's fields.
var (
	msgProjectName = "Enter a name for the project."
	msgOverlap     = fmt.Sprintf("Enter a whole number of annotators from 1 to %d.", MaxOverlap)
	msgLease       = fmt.Sprintf("Enter a whole number of minutes from 1 to %d.", int(MaxLease/time.Minute))
)

// ProjectFieldMessage is the message of a project's field that could not
// be read at all (overlap or lease not a number): the same as for one out
// of range, on every path.
func ProjectFieldMessage(field string) string {
	switch field {
	case "overlap":
		return msgOverlap
	case "lease":
		return msgLease
	}
	return ""
}

// Validate checks a project's settings: a name of at most MaxProjectName
// characters, instructions of at most MaxInstructions, an overlap from 1
// to MaxOverlap and a lease of whole minutes from one to MaxLease. It
// returns nil or a *ValidationError with a message per field (name,
// instructions, overlap, lease). The store calls it inside the
// transaction that writes the project.
func (p *Project) Validate() error {
	errs := map[string]string{}
	for field, v := range map[string]string{"name": p.Name, "instructions": p.Instructions} {
		if problem := TextProblem(v); problem != "" {
			errs[field] = "The text " + problem + "."
		}
	}
	switch n := utf8.RuneCountInString(p.Name); {
	case errs["name"] != "":
	case strings.TrimSpace(p.Name) == "":
		errs["name"] = msgProjectName
	case n > MaxProjectName:
		errs["name"] = fmt.Sprintf("Keep the name to %d characters or fewer (this one has %d).", MaxProjectName, n)
	}
	if n := utf8.RuneCountInString(p.Instructions); n > MaxInstructions && errs["instructions"] == "" {
		errs["instructions"] = fmt.Sprintf("Keep the instructions to %d characters or fewer (these have %d).", MaxInstructions, n)
	}
	if p.Overlap < 1 || p.Overlap > MaxOverlap {
		errs["overlap"] = msgOverlap
	}
	if p.Lease < time.Minute || p.Lease > MaxLease || p.Lease%time.Minute != 0 {
		errs["lease"] = msgLease
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}
