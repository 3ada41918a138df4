package attune

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/attune/attune/internal/rubric"
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
	// DefaultSystemKey is the item meta key that names an item's system
	// in a project that was not given another.
	DefaultSystemKey = "system"
	MaxSystemKey     = 64 // characters
)

// The messages of a project's fields.
var (
	msgProjectName = "Enter a name for the project."
	msgOverlap     = fmt.Sprintf("Enter a whole number of annotators from 1 to %d.", MaxOverlap)
	msgLease       = fmt.Sprintf("Enter a whole number of minutes from 1 to %d.", int(MaxLease/time.Minute))
	// The settings are rubric.ParseEvidencePolicy's.
	msgEvidencePolicy = "Choose off, optional or required for turn evidence."
	msgSystemKey      = fmt.Sprintf("Enter the item meta key that names an item's system (such as %q), at most %d characters.", DefaultSystemKey, MaxSystemKey)
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
	case "epsilon":
		return msgEpsilon
	case "evidence_policy":
		return msgEvidencePolicy
	}
	return ""
}

// Validate checks a project's settings: a name of at most MaxProjectName
// characters without direction controls (NameProblem), instructions of at most MaxInstructions, an overlap from 1
// to MaxOverlap, a lease of whole minutes from one to MaxLease and an
// alt-test ε strictly between 0 and 1, a turn evidence setting
// rubric.ParseEvidencePolicy reads (empty being the default) and a system
// key of 1 to MaxSystemKey characters. It returns nil or a
// *ValidationError with a message per field (name, instructions, overlap,
// lease, epsilon, evidence_policy, system_key). The store calls it inside the
// transaction that writes the project.
func (p *Project) Validate() error {
	errs := map[string]string{}
	for field, v := range map[string]string{"name": p.Name, "instructions": p.Instructions} {
		if problem := TextProblem(v); problem != "" {
			errs[field] = "The text " + problem + "."
		}
	}
	if problem := NameProblem(p.Name); problem != "" && errs["name"] == "" {
		errs["name"] = "The name " + problem + "."
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
	if !(p.Epsilon > 0 && p.Epsilon < 1) {
		errs["epsilon"] = msgEpsilon
	}
	if _, err := rubric.ParseEvidencePolicy(string(p.EvidencePolicy)); err != nil {
		errs["evidence_policy"] = msgEvidencePolicy
	}
	if problem := TextProblem(p.SystemKey); problem != "" {
		errs["system_key"] = "The system key " + problem + "."
	} else if n := utf8.RuneCountInString(p.SystemKey); strings.TrimSpace(p.SystemKey) == "" || n > MaxSystemKey {
		errs["system_key"] = msgSystemKey
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

// The ε of the alternative annotator test by who a project's annotators
// are (Calderon, Reichart & Dror 2025): the margin a judge is granted for
// being cheaper than a person shrinks as the people become less expert.
const (
	EpsilonExperts = 0.2
	EpsilonTrained = 0.15
	EpsilonCrowd   = 0.1
	DefaultEpsilon = EpsilonTrained
)

// AnnotatorPool is one answer to "who are the annotators?" and the ε it
// sets.
type AnnotatorPool struct {
	Key     string // experts, trained or crowd
	Label   string // for a sentence: "experts", "trained annotators", "a crowd"
	Epsilon float64
}

// AnnotatorPools are the pools a lead chooses from; any other ε in (0, 1)
// is a custom one.
var AnnotatorPools = []AnnotatorPool{
	{"experts", "experts", EpsilonExperts},
	{"trained", "trained annotators", EpsilonTrained},
	{"crowd", "a crowd", EpsilonCrowd},
}

// AnnotatorsCustom is the pool key of an ε that is none of AnnotatorPools'.
const AnnotatorsCustom = "custom"

var msgEpsilon = "Choose who the annotators are, or give a custom ε as a number between 0 and 1 (0.2 for experts, 0.15 for trained annotators, 0.1 for a crowd)."

// PoolOfEpsilon is the pool whose ε is e, or AnnotatorsCustom with the
// label "custom" when no pool has it.
func PoolOfEpsilon(e float64) AnnotatorPool {
	for _, p := range AnnotatorPools {
		if p.Epsilon == e {
			return p
		}
	}
	return AnnotatorPool{Key: AnnotatorsCustom, Label: "custom", Epsilon: e}
}

// ReadEpsilon reads a project's ε from who the annotators are (a key of
// AnnotatorPools, or AnnotatorsCustom with the ε written in custom); both
// empty mean DefaultEpsilon, as for a form that predates the setting. It
// returns ok false, with the message every path shows, when the answer
// cannot be read; the range of a custom ε is checked by Project.Validate.
func ReadEpsilon(annotators, custom string) (e float64, ok bool, msg string) {
	annotators, custom = strings.TrimSpace(annotators), strings.TrimSpace(custom)
	if annotators == "" && custom == "" {
		return DefaultEpsilon, true, ""
	}
	for _, p := range AnnotatorPools {
		if p.Key == annotators {
			return p.Epsilon, true, ""
		}
	}
	if annotators == AnnotatorsCustom || annotators == "" {
		v, err := strconv.ParseFloat(custom, 64)
		if err == nil {
			return v, true, ""
		}
	}
	return 0, false, msgEpsilon
}
