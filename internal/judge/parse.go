package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/rubric"
)

// Methods say how a label's value was reached; each label records one.
// Parse gives the first three; the runner records MethodLogprob when it
// keeps a probability-weighted score and MethodSampled when the value is
// the aggregate of several samples. No method is ever switched silently:
// a label says which one produced it.
const (
	// MethodStructured: the endpoint's structured output, read as the
	// schema says.
	MethodStructured = "structured"
	// MethodParsed: strict parsing of free text — the whole reply is an
	// answer, or a JSON object with one.
	MethodParsed = "parsed"
	// MethodTolerant: tolerant parsing — an answer found inside the reply.
	MethodTolerant = "tolerant"
	// MethodLogprob: the probability-weighted score from the first output
	// token's log-probabilities.
	MethodLogprob = "logprob"
	// MethodSampled: the majority or median of several samples.
	MethodSampled = "sampled"
)

// Answer is one answer read from a model's reply.
type Answer struct {
	// Value is one of the rubric's answers, spelled as the rubric spells
	// it ("YES", "3").
	Value rubric.Value
	// Reasoning is the model's reasoning, stored as its rationale; empty
	// when the reply gave none.
	Reasoning string
	// Method is MethodStructured, MethodParsed or MethodTolerant.
	Method string
	// Note is set when Value is an answer of the rubric that this item
	// does not allow (NA where NA is invalid): it is what the model
	// answered, which ReadAnswer then refuses (rubric.JudgeRefuses).
	Note string
	// Turns is the turn evidence the reply gave with the answer (a
	// "turns" array beside it in a JSON object): the dialogue's turns,
	// from 1, where a failing answer fails. nil when it gave none, which
	// is always allowed (rubric.EvidenceOptional).
	Turns []int
	// turnsProblem says why a "turns" field is not a list of turn
	// numbers; Parse turns it into a ParseError.
	turnsProblem string
}

// ParseError says why no answer could be read from a reply. Problem is
// written to be sent back to the model in a re-ask.
type ParseError struct {
	Problem string
}

// Error returns the problem, prefixed.
func (e *ParseError) Error() string { return "judge: unreadable answer: " + e.Problem }

// Parse reads the answer to item (an item of def) from a model's reply.
//
// With structured set (the reply is structured output), a JSON object with
// "answer" and "reasoning" gives MethodStructured. Otherwise, or if that
// fails, strict parsing: the whole reply, trimmed, is an answer of the
// rubric (any letter case, a trailing full stop allowed), or a JSON object
// with "answer", "score" or "value" — MethodParsed. Otherwise tolerant
// parsing, MethodTolerant, tries in turn and takes the last valid match of:
// a JSON object anywhere in the reply with such a field; a labelled answer
// ("Answer: YES", "Score: 4", "the score is 4"); a fraction ("3/5", "4 out
// of 5"); the last line alone; and, last, the last bare answer in the text
// (a number on a numeric scale, outside ranges such as "1-5"; an answer
// spelled exactly as the rubric spells it, such as YES, on another scale).
//
// A value is read if it is among the rubric's answers, even where the item
// does not allow it (NA on CQ8): that is what the model answered, and
// Answer.Note says so; ReadAnswer, which the runner and a try use, refuses
// it by the rule on a judge's answers. When nothing valid is found
// Parse returns a *ParseError naming the problem.
//
// The "turns" beside an answer in a JSON object are its turn evidence,
// held to the rule a person's turns are (rubric.Definition.ValidateEvidence
// with rubric.EvidenceOptional: never required, but refused on an answer
// that does not fail, below 1 or named twice). Parse knows no dialogue, so
// only ReadAnswer also refuses a turn past the dialogue's end. Turns that
// break the rule make the reply unreadable as an answer outside the
// rubric's does: a *ParseError, which the runner re-asks once and then
// records as an ERROR with the problem.
func Parse(def *rubric.Definition, item *rubric.Item, text string, structured bool) (Answer, error) {
	a, err := parse(def, item, text, structured)
	if err != nil {
		return Answer{}, err
	}
	if err := checkTurns(def, item, a, rubric.Facts{}); err != nil {
		return Answer{}, err
	}
	return a, nil
}

func parse(def *rubric.Definition, item *rubric.Item, text string, structured bool) (Answer, error) {
	p := &parser{def: def, item: item, allowed: def.Allowed(item)}
	t := strings.TrimSpace(text)
	if t == "" {
		return Answer{}, p.fail("the reply was empty")
	}
	if structured {
		if a, ok := p.object([]byte(t), "answer"); ok {
			return p.done(a, MethodStructured)
		}
	}
	if v, ok := p.strict(t); ok {
		return p.done(Answer{Value: v}, MethodParsed)
	}
	if a, ok := p.object([]byte(t), answerFields...); ok {
		return p.done(a, MethodParsed)
	}
	if a, ok := p.tolerant(t); ok {
		return p.done(a, MethodTolerant)
	}
	return Answer{}, p.fail("")
}

// checkTurns holds a's turns to the rule on turn evidence, with the facts
// of the labelled item (the zero Facts when the turn count is unknown).
func checkTurns(def *rubric.Definition, item *rubric.Item, a Answer, f rubric.Facts) *ParseError {
	if len(a.Turns) == 0 {
		return nil
	}
	issues := def.ValidateEvidence(rubric.Answers{item.Key: a.Value}, rubric.Evidence{item.Key: a.Turns}, f, rubric.EvidenceOptional)
	if len(issues) == 0 {
		return nil
	}
	msgs := make([]string, len(issues))
	for i, is := range issues {
		msgs[i] = is.Message
	}
	return &ParseError{Problem: "the turns cannot be accepted: " + strings.Join(msgs, "; ")}
}

// answerFields are the JSON fields that may hold an answer, in order of
// preference.
var answerFields = []string{"answer", "score", "value"}

// reasoningFields are the JSON fields that may hold the reasoning.
var reasoningFields = []string{"reasoning", "rationale", "explanation"}

type parser struct {
	def     *rubric.Definition
	item    *rubric.Item
	allowed []rubric.Value
	// invalid is the last candidate seen that is not an answer of the
	// rubric, for the error message.
	invalid string
}

func (p *parser) fail(problem string) *ParseError {
	want := "the answer must be one of " + strings.Join(valueStrings(p.allowed), ", ")
	switch {
	case problem != "":
		return &ParseError{Problem: problem + "; " + want}
	case p.invalid != "":
		return &ParseError{Problem: fmt.Sprintf("%s; I found %q", want, p.invalid)}
	default:
		return &ParseError{Problem: want + "; I found none"}
	}
}

func (p *parser) done(a Answer, method string) (Answer, error) {
	if a.turnsProblem != "" {
		return Answer{}, &ParseError{Problem: a.turnsProblem}
	}
	a.Method = method
	a.Reasoning = strings.TrimSpace(a.Reasoning)
	if !p.def.Allows(p.item, a.Value) {
		a.Note = fmt.Sprintf("%s is not an allowed answer on %s (allowed: %s); it scores as a failure",
			a.Value, p.item.Key, orList(p.allowed))
	}
	return a, nil
}

// scaleValue returns the rubric answer s spells, comparing letters without
// case and numbers by value ("4.0" is "4").
func (p *parser) scaleValue(s string) (rubric.Value, bool) {
	for _, a := range p.def.Answers {
		if strings.EqualFold(s, string(a.Value)) {
			return a.Value, true
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int64(f)) {
		n := strconv.FormatInt(int64(f), 10)
		for _, a := range p.def.Answers {
			if string(a.Value) == n {
				return a.Value, true
			}
		}
	}
	return "", false
}

// strict reads a reply that is nothing but an answer.
func (p *parser) strict(t string) (rubric.Value, bool) {
	return p.scaleValue(strings.TrimSpace(strings.TrimSuffix(t, ".")))
}

// loose reads a candidate with the decoration models put around answers
// removed: quotes, emphasis, brackets, a trailing full stop.
func (p *parser) loose(s string) (rubric.Value, bool) {
	s = strings.Trim(strings.TrimSpace(s), "*_`\"'“”‘’()[]{}<>.,:;!")
	return p.scaleValue(strings.TrimSpace(s))
}

// object decodes data as one JSON object and reads the first of fields it
// has. A field naming something that is not an answer is remembered for
// the error message.
func (p *parser) object(data []byte, fields ...string) (Answer, bool) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return Answer{}, false
	}
	return p.fields(obj, fields)
}

func (p *parser) fields(obj map[string]json.RawMessage, fields []string) (Answer, bool) {
	for _, f := range fields {
		raw, ok := obj[f]
		if !ok {
			continue
		}
		var s string
		var n json.Number
		switch {
		case json.Unmarshal(raw, &s) == nil:
		case json.Unmarshal(raw, &n) == nil:
			s = n.String()
		default:
			p.invalid = string(raw)
			continue
		}
		v, ok := p.loose(s)
		if !ok {
			p.invalid = s
			continue
		}
		a := Answer{Value: v}
		if raw, ok := obj["turns"]; ok && string(raw) != "null" {
			if json.Unmarshal(raw, &a.Turns) != nil {
				a.turnsProblem = fmt.Sprintf("turns must be a list of turn numbers such as [2, 3]; I found %s", raw)
			}
		}
		for _, r := range reasoningFields {
			if json.Unmarshal(obj[r], &a.Reasoning) == nil && a.Reasoning != "" {
				break
			}
		}
		return a, true
	}
	return Answer{}, false
}

// Limits that keep tolerant parsing linear in practice on hostile input:
// only the tail of a long reply is scanned, and only so many places where
// a JSON object might start are tried.
const (
	maxTolerantBytes  = 64 << 10
	maxObjectAttempts = 256
)

var (
	reLabelled = regexp.MustCompile(`(?i)\b(?:final\s+answer|answer|score|rating|verdict)\b\s*(?:is|=|:|-)?\s*[*"'“”` + "`" + `\[(]*\s*([A-Za-z]+|\d+(?:\.\d+)?)`)
	reFraction = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*\d+`)
	reRange    = regexp.MustCompile(`\d+\s*(?:-|–|—|to)\s*\d+`)
	reNumber   = regexp.MustCompile(`\d+(?:\.\d+)?`)
	reShouting = regexp.MustCompile(`^[A-Z]+$`)
)

func (p *parser) tolerant(t string) (Answer, bool) {
	if len(t) > maxTolerantBytes {
		t = t[len(t)-maxTolerantBytes:]
	}
	if a, ok := p.lastObject(t); ok {
		return a, true
	}
	for _, re := range []*regexp.Regexp{reLabelled, reFraction} {
		ms := re.FindAllStringSubmatchIndex(t, -1)
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			s := t[m[2]:m[3]]
			if v, ok := p.scaleValue(s); ok {
				return Answer{Value: v, Reasoning: t[:m[0]]}, true
			}
			if reNumber.MatchString(s) || reShouting.MatchString(s) {
				p.invalid = s
			}
		}
	}
	lines := strings.Split(t, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if v, ok := p.loose(lines[i]); ok {
			return Answer{Value: v, Reasoning: strings.Join(lines[:i], "\n")}, true
		}
		if l := strings.Trim(strings.TrimSpace(lines[i]), "*_`\"'.:"); reNumber.MatchString(l) && reNumber.FindString(l) == l || reShouting.MatchString(l) {
			p.invalid = l
		}
		break
	}
	if v, at, ok := p.lastBare(t); ok {
		return Answer{Value: v, Reasoning: t[:at]}, true
	}
	return Answer{}, false
}

// lastObject finds the last JSON object in t with an answer field.
func (p *parser) lastObject(t string) (Answer, bool) {
	var found Answer
	ok := false
	attempts := 0
	for i := 0; i < len(t) && attempts < maxObjectAttempts; i++ {
		if t[i] != '{' {
			continue
		}
		attempts++
		if a, good := p.object([]byte(t[i:]), answerFields...); good {
			a.Reasoning = cmpOr(a.Reasoning, t[:i])
			found, ok = a, true
		}
	}
	return found, ok
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// lastBare finds the last answer standing alone in t: on a numeric scale a
// number that is not part of a range such as "1-5" or of a longer word; on
// another scale an answer spelled exactly as the rubric spells it, as a
// whole word.
func (p *parser) lastBare(t string) (rubric.Value, int, bool) {
	if p.numeric() {
		masked := reRange.ReplaceAllStringFunc(t, func(s string) string { return strings.Repeat(" ", len(s)) })
		ms := reNumber.FindAllStringIndex(masked, -1)
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if wordChar(masked, m[0]-1) || wordChar(masked, m[1]) {
				continue
			}
			if v, ok := p.scaleValue(masked[m[0]:m[1]]); ok {
				return v, m[0], true
			}
		}
		return "", 0, false
	}
	best, at := rubric.Value(""), -1
	for _, a := range p.def.Answers {
		v := string(a.Value)
		for from := len(t); from > 0; {
			i := strings.LastIndex(t[:from], v)
			if i < 0 {
				break
			}
			if !wordChar(t, i-1) && !wordChar(t, i+len(v)) {
				if i > at {
					best, at = a.Value, i
				}
				break
			}
			from = i
		}
	}
	return best, max(at, 0), at >= 0
}

// numeric reports whether every answer of the rubric is an integer.
func (p *parser) numeric() bool {
	return len(p.def.Answers) > 0 && !slices.ContainsFunc(p.def.Answers, func(a rubric.Answer) bool {
		_, err := strconv.Atoi(string(a.Value))
		return err != nil
	})
}

// wordChar reports whether t[i] exists and is an ASCII letter or digit.
func wordChar(t string, i int) bool {
	if i < 0 || i >= len(t) {
		return false
	}
	c := t[i]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func valueStrings(vs []rubric.Value) []string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return s
}
