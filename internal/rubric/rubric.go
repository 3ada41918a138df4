// Package rubric defines rubric definitions: the data that says what
// annotators and judges label, which answers they may give, how a rubric is
// shown and how it is scored. A definition is one version of one rubric,
// read from a YAML file (see docs/rubrics.md); the built-in rubrics are
// embedded in the binary.
//
// The package also validates an answer set against a definition, with
// messages a person can act on. It imports nothing of the web or the
// database, and a parsed Definition is never modified by this package, so
// one value may be shared between goroutines.
package rubric

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is the shape of a rubric: how its items are answered and scored.
type Kind string

// The kinds of rubric the product knows.
const (
	// Likert rubrics have dimensions and a holistic overall, each an
	// integer on a scale; the overall is judged, never computed.
	Likert Kind = "likert"
	// Criteria rubrics have criteria answered YES, NO or NA, grouped in
	// weighted categories, with a pass threshold and a safety gate.
	Criteria Kind = "criteria"
	// Single rubrics have exactly one item whose value is the score.
	Single Kind = "single"
)

// Unit is what one labelled item of a rubric is.
type Unit string

// The units a rubric can label.
const (
	// Reply is one assistant reply to one user message.
	Reply Unit = "reply"
	// Conversation is a whole multi-turn conversation.
	Conversation Unit = "conversation"
	// LastReply is the last assistant reply of a dialogue, read in context.
	LastReply Unit = "last_reply"
)

// Describe returns the unit in words, for people.
func (u Unit) Describe() string {
	switch u {
	case Reply:
		return "one assistant reply to a user's message"
	case Conversation:
		return "a whole conversation"
	case LastReply:
		return "the last assistant reply of a dialogue, read in context"
	}
	return string(u)
}

// Value is one answer to one item: an integer level such as "4" on a Likert
// scale, or YES, NO or NA on a criterion. Error is the value a failed judge
// call records.
type Value string

// The answer values with a fixed meaning across rubrics.
const (
	Yes Value = "YES"
	No  Value = "NO"
	NA  Value = "NA"
	// Error records a judge call that failed. Only a judge produces it; it
	// is never among a rubric's answers and always scores as a failure.
	Error Value = "ERROR"
)

// Definition is one version of one rubric. Definitions come from Parse or
// Builtins, which check them; the fields are exported for reading (pages,
// prompts, the loader) and must not be modified once a definition is in
// use: its hash identifies it.
type Definition struct {
	Kind    Kind   `yaml:"kind" json:"kind"`
	Key     string `yaml:"key" json:"key"`
	Version string `yaml:"version" json:"version"`
	Title   string `yaml:"title" json:"title"`
	Unit    Unit   `yaml:"unit" json:"unit"`
	Purpose string `yaml:"purpose,omitempty" json:"purpose,omitempty"`
	Scale   string `yaml:"scale,omitempty" json:"scale,omitempty"`
	Scope   string `yaml:"scope,omitempty" json:"scope,omitempty"`
	// Notes are preamble texts shown before the items.
	Notes []Section `yaml:"notes,omitempty" json:"notes,omitempty"`
	// Answers is the rubric's answer scale, in display order.
	Answers []Answer `yaml:"answers" json:"answers"`
	// Categories are the weighted groups of a criteria rubric, in the order
	// the final score sums them.
	Categories []Category `yaml:"categories,omitempty" json:"categories,omitempty"`
	Items      []Item     `yaml:"items" json:"items"`
	Scoring    Scoring    `yaml:"scoring" json:"scoring"`
	// Rules are the rubric's edge rules, checked on every answer set and
	// reported as warnings.
	Rules []Rule `yaml:"rules,omitempty" json:"rules,omitempty"`
	Judge Judge  `yaml:"judge,omitempty" json:"judge,omitempty"`
	// Examples are worked assessments of whole dialogues.
	Examples []Assessment `yaml:"examples,omitempty" json:"examples,omitempty"`
	// Sections are closing texts shown after the items.
	Sections []Section `yaml:"sections,omitempty" json:"sections,omitempty"`
}

// Section is a titled block of text from a rubric document.
type Section struct {
	Title string `yaml:"title,omitempty" json:"title,omitempty"`
	Text  string `yaml:"text" json:"text"`
}

// Answer is one value of a rubric's answer scale.
type Answer struct {
	Value   Value  `yaml:"value" json:"value"`
	Meaning string `yaml:"meaning,omitempty" json:"meaning,omitempty"`
	// Points is what the answer earns on a criteria rubric (YES 1, NO 0).
	Points *float64 `yaml:"points,omitempty" json:"points,omitempty"`
}

// Category is a weighted group of criteria.
type Category struct {
	Key        string   `yaml:"key" json:"key"`
	Label      string   `yaml:"label" json:"label"`
	Question   string   `yaml:"question,omitempty" json:"question,omitempty"`
	Weight     float64  `yaml:"weight" json:"weight"`
	WeightNote string   `yaml:"weight_note,omitempty" json:"weight_note,omitempty"`
	Notes      []string `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// Item is one dimension or criterion: the thing a rater answers.
type Item struct {
	Key   string `yaml:"key" json:"key"`
	Label string `yaml:"label" json:"label"`
	// Category is the key of the item's category (criteria rubrics).
	Category   string `yaml:"category,omitempty" json:"category,omitempty"`
	Definition string `yaml:"definition,omitempty" json:"definition,omitempty"`
	ChecksFor  string `yaml:"checks_for,omitempty" json:"checks_for,omitempty"`
	// Steps are evaluation steps, in order.
	Steps []string `yaml:"steps,omitempty" json:"steps,omitempty"`
	// Answers narrows the rubric's answers for this item; empty means all
	// of them. On a criteria rubric an item whose answers leave out NA is
	// NA-invalid: NA there scores as a failure.
	Answers []Value `yaml:"answers,omitempty" json:"answers,omitempty"`
	// NANote says when NA applies, or why it is not valid.
	NANote     string      `yaml:"na_note,omitempty" json:"na_note,omitempty"`
	Conditions *Conditions `yaml:"conditions,omitempty" json:"conditions,omitempty"`
	Levels     []Level     `yaml:"levels,omitempty" json:"levels,omitempty"`
	Boundary   []Guidance  `yaml:"boundary,omitempty" json:"boundary,omitempty"`
	Examples   []Example   `yaml:"examples,omitempty" json:"examples,omitempty"`
	Failures   []string    `yaml:"failure_examples,omitempty" json:"failure_examples,omitempty"`
	// Prompt is the judge prompt for this item; it holds the definition's
	// Judge.Slot exactly once when a slot is set.
	Prompt string `yaml:"prompt,omitempty" json:"prompt,omitempty"`
}

// Conditions say when an item applies. When they do not hold, NA is the
// expected answer.
type Conditions struct {
	// MinTurns is the least number of turns for the item to apply.
	MinTurns int `yaml:"min_turns,omitempty" json:"min_turns,omitempty"`
	// CrisisSignals makes the item apply only when crisis signals are
	// present.
	CrisisSignals bool `yaml:"crisis_signals,omitempty" json:"crisis_signals,omitempty"`
	// NAException names a case, not known from the facts, in which NA is
	// right even though the conditions hold; NA then draws a warning to
	// confirm, not an error.
	NAException string `yaml:"na_exception,omitempty" json:"na_exception,omitempty"`
}

// Level describes one answer of an item's scale.
type Level struct {
	Value       Value  `yaml:"value" json:"value"`
	Label       string `yaml:"label,omitempty" json:"label,omitempty"`
	Description string `yaml:"description" json:"description"`
}

// Guidance is one rule of boundary guidance, such as "1 vs 2".
type Guidance struct {
	Title string `yaml:"title,omitempty" json:"title,omitempty"`
	Text  string `yaml:"text" json:"text"`
}

// Example is a worked example of one item: a user's text, a response, the
// score it earns and, where the rubric gives it, why.
type Example struct {
	Score Value `yaml:"score" json:"score"`
	// Boundary marks an example that sits on a boundary between levels.
	Boundary bool   `yaml:"boundary,omitempty" json:"boundary,omitempty"`
	User     string `yaml:"user" json:"user"`
	Response string `yaml:"response" json:"response"`
	Why      string `yaml:"why,omitempty" json:"why,omitempty"`
}

// Title returns the example's heading, e.g. "Score 3 example (boundary)".
func (e Example) Title() string {
	if e.Boundary {
		return fmt.Sprintf("Score %s example (boundary)", e.Score)
	}
	return fmt.Sprintf("Score %s example", e.Score)
}

// Scoring holds a definition's scoring settings.
type Scoring struct {
	// PassThreshold is the least unrounded final score that passes
	// (criteria rubrics).
	PassThreshold float64 `yaml:"pass_threshold,omitempty" json:"pass_threshold,omitempty"`
	// Gate lists the safety gate items, in order: any of them failing
	// fails the gate (criteria rubrics).
	Gate []string `yaml:"gate,omitempty" json:"gate,omitempty"`
	// Round is the number of decimals the final score is rounded to
	// (criteria rubrics).
	Round int `yaml:"round,omitempty" json:"round,omitempty"`
	// ScoreItem is the item whose value is the score (likert and single
	// rubrics).
	ScoreItem string `yaml:"score_item,omitempty" json:"score_item,omitempty"`
	// Mean lists the items whose mean is reported as the dimension mean
	// (likert rubrics). It is a report, never the score.
	Mean  []string `yaml:"mean,omitempty" json:"mean,omitempty"`
	Notes []string `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// Rule is an edge rule: when all its clauses hold, the answer set draws a
// warning about Item that a person can confirm.
type Rule struct {
	Key string `yaml:"key" json:"key"`
	// Source is the rubric text the rule checks.
	Source  string   `yaml:"source,omitempty" json:"source,omitempty"`
	When    []Clause `yaml:"when" json:"when"`
	Item    string   `yaml:"item" json:"item"`
	Warning string   `yaml:"warning" json:"warning"`
}

// Clause is one test of a rule: an item's value against a value, or a fact
// of the labelled item.
type Clause struct {
	// Item is the key of the item tested; empty when Fact is set.
	Item string `yaml:"item,omitempty" json:"item,omitempty"`
	// Fact is "crisis_signals" (holds when they are present) or "turns"
	// (compared with Op and Value).
	Fact string `yaml:"fact,omitempty" json:"fact,omitempty"`
	// Op is eq, ne, lt, le, gt or ge; lt to ge compare numbers.
	Op    string `yaml:"op,omitempty" json:"op,omitempty"`
	Value Value  `yaml:"value,omitempty" json:"value,omitempty"`
}

// Judge says how a dialogue is written into the judge prompts.
type Judge struct {
	// Slot is the placeholder each prompt holds once, e.g. "{{Dialog}}".
	Slot string `yaml:"slot,omitempty" json:"slot,omitempty"`
	// User and Assistant are the line prefixes for the two roles, e.g.
	// "USER" and "BOT", written as "USER: text".
	User      string `yaml:"user,omitempty" json:"user,omitempty"`
	Assistant string `yaml:"assistant,omitempty" json:"assistant,omitempty"`
}

// Assessment is a worked assessment of a whole dialogue: the dialogue, an
// answer for every item with its reasoning, and the result.
type Assessment struct {
	Title   string           `yaml:"title,omitempty" json:"title,omitempty"`
	Turns   []Turn           `yaml:"turns" json:"turns"`
	Answers []AssessedAnswer `yaml:"answers" json:"answers"`
	Score   float64          `yaml:"score" json:"score"`
	Pass    bool             `yaml:"pass" json:"pass"`
}

// Turn is one user message with the assistant reply to it.
type Turn struct {
	User      string `yaml:"user" json:"user"`
	Assistant string `yaml:"assistant" json:"assistant"`
}

// AssessedAnswer is one item's answer in a worked assessment.
type AssessedAnswer struct {
	Item   string `yaml:"item" json:"item"`
	Answer Value  `yaml:"answer" json:"answer"`
	Why    string `yaml:"why,omitempty" json:"why,omitempty"`
}

// AnswerSet returns the assessment's answers keyed by item.
func (a Assessment) AnswerSet() Answers {
	out := make(Answers, len(a.Answers))
	for _, x := range a.Answers {
		out[x.Item] = x.Answer
	}
	return out
}

// Ref names one version of one rubric, written key@version.
type Ref struct {
	Key     string
	Version string
}

// String returns the ref as key@version.
func (r Ref) String() string { return r.Key + "@" + r.Version }

// ParseRef parses "key@version", such as "empathetic-dialogue@2". Both parts
// must be non-empty and the key must be a valid rubric key.
func ParseRef(s string) (Ref, error) {
	key, version, ok := strings.Cut(s, "@")
	if !ok {
		return Ref{}, fmt.Errorf("rubric: ref %q: want key@version", s)
	}
	if err := checkKey(key); err != nil {
		return Ref{}, fmt.Errorf("rubric: ref %q: %w", s, err)
	}
	if err := checkVersion(version); err != nil {
		return Ref{}, fmt.Errorf("rubric: ref %q: %w", s, err)
	}
	return Ref{Key: key, Version: version}, nil
}

// Ref returns the definition's key@version.
func (d *Definition) Ref() Ref { return Ref{Key: d.Key, Version: d.Version} }

// Item returns the item with the given key, or false.
func (d *Definition) Item(key string) (*Item, bool) {
	for i := range d.Items {
		if d.Items[i].Key == key {
			return &d.Items[i], true
		}
	}
	return nil, false
}

// Allowed returns the answers a rater may give on item it, in display order.
func (d *Definition) Allowed(it *Item) []Value {
	if len(it.Answers) > 0 {
		return it.Answers
	}
	out := make([]Value, len(d.Answers))
	for i, a := range d.Answers {
		out[i] = a.Value
	}
	return out
}

// Allows reports whether v is among the answers a rater may give on it.
func (d *Definition) Allows(it *Item, v Value) bool {
	if len(it.Answers) > 0 {
		return slices.Contains(it.Answers, v)
	}
	return d.answer(v) != nil
}

// NAInvalid reports whether NA is an answer of the rubric that item it does
// not allow: NA there is refused from a person and scores as a failure.
func (d *Definition) NAInvalid(it *Item) bool {
	return d.answer(NA) != nil && !d.Allows(it, NA)
}

// answer returns the scale entry for v, or nil.
func (d *Definition) answer(v Value) *Answer {
	for i := range d.Answers {
		if d.Answers[i].Value == v {
			return &d.Answers[i]
		}
	}
	return nil
}

// Points returns what answer v earns on item it of a criteria rubric, and
// whether it counts as a failed check. An answer the item does not allow
// (NA where NA is invalid, ERROR, anything unknown) earns 0 and fails; so
// does an allowed answer worth 0 points, such as NO.
func (d *Definition) Points(it *Item, v Value) (points float64, failed bool) {
	if !d.Allows(it, v) {
		return 0, true
	}
	a := d.answer(v)
	if a == nil || a.Points == nil {
		return 0, true
	}
	return *a.Points, *a.Points == 0
}

// CategoryItems returns the items of category key, in item order.
func (d *Definition) CategoryItems(key string) []*Item {
	var out []*Item
	for i := range d.Items {
		if d.Items[i].Category == key {
			out = append(out, &d.Items[i])
		}
	}
	return out
}

// InGate reports whether the item key is one of the safety gate's: any of
// them failing fails the gate. Rubrics without a gate have none.
func (d *Definition) InGate(key string) bool {
	return slices.Contains(d.Scoring.Gate, key)
}

// GateFirst returns keys with the safety gate's items first, each part in
// the order given: what a lead settling gold should see before the rest.
func (d *Definition) GateFirst(keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if d.InGate(k) {
			out = append(out, k)
		}
	}
	for _, k := range keys {
		if !d.InGate(k) {
			out = append(out, k)
		}
	}
	return out
}

// label names an item for messages: "CP3 (Arc + coherence + depth)".
func (it *Item) label() string {
	if it.Label == "" || it.Label == it.Key {
		return it.Key
	}
	return it.Key + " (" + it.Label + ")"
}

// BoundaryGuidance returns the item's boundary guidance for the boundary
// between the answers lower and upper: the rules whose title names the
// two, such as "3 vs 4" (also "3|4", "3/4", "3–4", either order). Untitled
// or otherwise titled rules are about no one boundary and are left out.
func (it *Item) BoundaryGuidance(lower, upper Value) []Guidance {
	var out []Guidance
	for _, g := range it.Boundary {
		a, b, ok := boundaryTitle(g.Title)
		if ok && (a == lower && b == upper || a == upper && b == lower) {
			out = append(out, g)
		}
	}
	return out
}

// boundaryTitle reads a title of the form "A vs B" (or A|B, A/B, A–B,
// A-B) into its two answers.
func boundaryTitle(title string) (Value, Value, bool) {
	t := strings.TrimSpace(title)
	for _, sep := range []string{" vs. ", " vs ", "|", "/", "–", "-"} {
		if a, b, ok := strings.Cut(t, sep); ok {
			a, b = strings.TrimSpace(a), strings.TrimSpace(b)
			if a != "" && b != "" && !strings.ContainsAny(a+b, " \t") {
				return Value(a), Value(b), true
			}
		}
	}
	return "", "", false
}
