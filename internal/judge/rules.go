package judge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/rubric"
)

// RuleError says that a reply's answer is one a judge may not give here
// (rubric.Definition.JudgeRefuses): NA on an item answered YES or NO only,
// or NA on an item whose condition holds for this dialogue. Such an answer
// is not stored, as a person's would be refused; it is re-asked like an
// unreadable reply, and an ERROR with the reason if the re-ask breaks the
// rule too.
type RuleError struct {
	Value rubric.Value
	// Reason is the rubric's message, naming the item and the facts.
	Reason string
	// Permitted are the answers the rubric leaves for this dialogue.
	Permitted []rubric.Value
}

// Error returns the reason, prefixed.
func (e *RuleError) Error() string { return "judge: answer refused: " + e.Reason }

// ReadAnswer reads the answer to item (an item of def) from a reply as
// Parse does, then holds it to the rule on a judge's answers
// (rubric.Definition.JudgeRefuses) with the facts of the labelled item. It
// returns a *ParseError when no answer can be read and a *RuleError when
// the answer read is one a judge may not give here; either is a reply
// that is not an answer, to be re-asked (ReAskAfter). Turns past the end
// of the dialogue are a *ParseError, as other turns that break the rule
// on evidence are in Parse.
func ReadAnswer(def *rubric.Definition, item *rubric.Item, text string, structured bool, f rubric.Facts) (Answer, error) {
	a, err := Parse(def, item, text, structured)
	if err != nil {
		return a, err
	}
	// Parse knew no dialogue: the turns are held to its length here.
	if perr := checkTurns(def, item, a, f); perr != nil {
		return Answer{}, perr
	}
	if reason, refused := def.JudgeRefuses(item, a.Value, f); refused {
		return a, &RuleError{Value: a.Value, Reason: reason, Permitted: def.Permitted(item, f)}
	}
	return a, nil
}

// ReAskAfter returns the conversation for the one follow-up call after a
// reply that is not an answer, and true; false when err is of another
// kind. An unreadable reply is re-asked as ReAsk says; a forbidden answer
// is sent back with the rubric's reason and the answers left.
func ReAskAfter(prompt Prompt, reply string, err error, allowed []rubric.Value) ([]Message, bool) {
	var pe *ParseError
	var re *RuleError
	switch {
	case errors.As(err, &pe):
		return ReAsk(prompt, reply, pe, allowed), true
	case errors.As(err, &re):
		if strings.TrimSpace(reply) == "" {
			reply = "(no reply)"
		}
		msgs := make([]Message, 0, len(prompt.Messages)+2)
		msgs = append(msgs, prompt.Messages...)
		msgs = append(msgs,
			Message{Role: RoleAssistant, Content: reply},
			Message{Role: RoleUser, Content: fmt.Sprintf(
				"Your answer %s cannot be accepted for this conversation: %s. Reply again with exactly one of %s as the answer.",
				re.Value, strings.TrimSuffix(re.Reason, "."), orList(re.Permitted))},
		)
		return msgs, true
	}
	return nil, false
}

// notAnswer says, for a lead, why a reply is not an answer: the problem of
// a *ParseError or the reason of a *RuleError; "" for any other error.
func notAnswer(err error) string {
	var pe *ParseError
	var re *RuleError
	switch {
	case errors.As(err, &pe):
		return "the reply held no readable answer: " + pe.Problem
	case errors.As(err, &re):
		return "the answer " + string(re.Value) + " breaks the rubric's rule: " + re.Reason
	}
	return ""
}
