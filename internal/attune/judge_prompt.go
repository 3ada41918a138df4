package attune

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// MaxPromptBytes bounds one rubric item's prompt template in a judge's
// prompt version: far above any real prompt, low enough that a pasted
// file does not become every call's cost.
const MaxPromptBytes = 64 << 10

// JudgePrompt is one immutable version of a judge's prompts for one
// rubric version: a template per rubric item key, each holding the
// rubric's slot (such as "{{Dialog}}") exactly once. Version 1 is the
// rubric's own prompts, verbatim; a later version is a lead's edit of a
// copy of its parent. A run records the version it used.
type JudgePrompt struct {
	ID              int64
	JudgeID         int64
	RubricVersionID int64
	Version         int
	// ParentID and ParentVersion name the version this one was edited
	// from (nil and 0 for version 1).
	ParentID      *int64
	ParentVersion int
	Prompts       map[string]string
	CreatedBy     *int64
	AuthorEmail   string // "" for version 1 and the command line
	CreatedAt     time.Time
	Runs          int // runs that used the version
}

// PromptField is the form field of a rubric item's template, the key a
// ValidationError from ValidatePrompts uses.
func PromptField(key string) string { return "prompt_" + key }

// ValidatePrompts checks a new version's templates against the rubric
// they are for: keys are the rubric's item keys, slot the placeholder the
// renderer replaces with the dialogue. Every item needs a template, no
// other key may appear, and each template must be storable text (see
// TextProblem), at most MaxPromptBytes long and hold slot exactly once,
// or the renderer could not place the dialogue. A new version must differ
// from parent, the version it was edited from (nil: none). Problems come
// back as a *ValidationError with one message per template (PromptField).
func ValidatePrompts(prompts map[string]string, keys []string, slot string, parent map[string]string) error {
	bad := map[string]string{}
	known := make(map[string]bool, len(keys))
	for _, k := range keys {
		known[k] = true
		t, ok := prompts[k]
		switch {
		case !ok || t == "":
			bad[PromptField(k)] = "Enter the prompt for this item."
		case TextProblem(t) != "":
			bad[PromptField(k)] = "The prompt " + TextProblem(t) + "."
		case len(t) > MaxPromptBytes:
			bad[PromptField(k)] = fmt.Sprintf("The prompt is %d bytes long; the most is %d.", len(t), MaxPromptBytes)
		case countSlot(t, slot) != 1:
			bad[PromptField(k)] = fmt.Sprintf("The prompt must hold %s exactly once: it is where the dialogue goes.", slot)
		}
	}
	for k := range prompts {
		if !known[k] {
			bad["prompts"] = fmt.Sprintf("The rubric has no item %q.", k)
		}
	}
	if len(bad) == 0 && parent != nil && maps.Equal(prompts, parent) {
		bad["prompts"] = "Nothing changed: edit a prompt to make a new version."
	}
	if len(bad) > 0 {
		return &ValidationError{Fields: bad}
	}
	return nil
}

func countSlot(t, slot string) int {
	if slot == "" {
		return 0
	}
	return strings.Count(t, slot)
}

// MayEditPrompts reports whether actor may make a new prompt version of
// the judge: its owner, an admin, or the command line (nil). A prompt
// decides what every later run of the judge asks, as its connection
// decides where its key goes, so the same people own both.
func (j *Judge) MayEditPrompts(actor *User) bool { return j.MayChangeConnection(actor) }
