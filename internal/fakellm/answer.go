package fakellm

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// message is one message of a request, whatever API it came by.
type message struct {
	role, text string
}

// question is what a request asks, as far as the fake reads it.
type question struct {
	model    string
	messages []message
	// schema is the JSON schema structured output must follow, if asked.
	schema json.RawMessage
	// jsonObject asks for any JSON object (OpenAI's json_object format).
	jsonObject bool
	// sample is mixed into the hash when sampling (temperature above 0
	// with a seed), so that samples of one prompt differ.
	sample string
	// oracle is Options.Answer.
	oracle func(prompt string, allowed []string) (string, bool)
	// turns is Options.Turns.
	turns func(prompt, answer string) []int
	// forced is the answer the X-Fake-Answer header asks for, given
	// whether or not the question allows it; "" lets the hash choose.
	forced string
	// behaviour is Options.Behaviour; temperature the request's (0 when
	// it sets none); draw a number of this request alone, for the random
	// behaviour.
	behaviour   Behaviour
	temperature float64
	draw        uint64
}

// reply is the fake's answer to a question.
type reply struct {
	text string
	// value is the answer in text, "" in a garbage reply.
	value string
	// alternatives is the distribution of the answer token, most likely
	// first; empty in a garbage reply.
	alternatives []alternative
}

type alternative struct {
	token   string
	logprob float64
}

// reask reports whether the conversation already holds an answer of the
// model: the fake then sees a re-ask.
func (q *question) reask() bool {
	return slices.ContainsFunc(q.messages, func(m message) bool { return m.role == "assistant" })
}

// answer writes the fake's deterministic reply.
func (q *question) answer(garbage bool) reply {
	allowed, instruction := q.allowed()
	structured := q.schema != nil || q.jsonObject
	if garbage {
		if structured {
			return reply{text: `{"reasoning":"Hard to say.","answer":"MAYBE"}`}
		}
		return reply{text: "Hmm, hard to say. I would rather not commit to anything here."}
	}
	parts := []string{q.model, q.sample}
	for _, m := range q.messages {
		parts = append(parts, m.role, m.text)
	}
	h := promptHash(parts...)
	if q.forced != "" && !slices.Contains(allowed, q.forced) {
		// A model breaking the rules it was given: the answer is one the
		// question does not offer.
		allowed = append(slices.Clip(allowed), q.forced)
	}
	i := choose(allowed, unit(mix(h, 1)))
	how := "chosen from a hash of the %d-character prompt without reading it"
	if k, why, ok := q.behave(allowed); ok {
		i, how = k, why
	}
	if q.oracle != nil {
		if v, ok := q.oracle(q.lastUser(), allowed); ok {
			if k := slices.Index(allowed, v); k >= 0 {
				i, how = k, "given by the demo's simulated judge for this %d-character prompt"
			}
		}
	}
	if q.forced != "" {
		i, how = slices.Index(allowed, q.forced), "forced by the X-Fake-Answer header for this %d-character prompt"
	}
	v := allowed[i]
	size := 0
	for _, m := range q.messages {
		size += len(m.text)
	}
	reasoning := fmt.Sprintf("A fake judge's answer: %s, one of %s, "+how+".", v, strings.Join(allowed, ", "), size)
	r := reply{value: v, alternatives: distribution(allowed, i, unit(mix(h, 2)))}
	switch {
	case structured:
		var turns []int
		if q.turns != nil && takesTurns(q.schema) {
			turns = q.turns(q.lastUser(), v)
		}
		b, _ := json.Marshal(struct {
			Reasoning string `json:"reasoning"`
			Answer    string `json:"answer"`
			Turns     []int  `json:"turns,omitempty"`
		}{reasoning, v, turns})
		r.text = string(b)
	case only.MatchString(instruction):
		r.text = v
	default:
		r.text = "Reasoning: " + reasoning + "\nAnswer: " + v
	}
	return r
}

var (
	// list matches an enumeration of answers: "YES, NO or NA",
	// "1, 2, 3, 4 or 5".
	list = regexp.MustCompile(`\b(?:[A-Z]{2,}|\d+)(?:\s*,\s*(?:[A-Z]{2,}|\d+))*\s*,?\s+or\s+(?:[A-Z]{2,}|\d+)\b`)
	// listItem matches one answer of a list.
	listItem = regexp.MustCompile(`[A-Z]{2,}|\d+`)
	// scale matches a range of integers: "1-5", "1–5", "1 to 5".
	scale = regexp.MustCompile(`\b(\d+)\s*(?:-|–|—|to)\s*(\d+)\b`)
	// speaker matches a dialogue line such as "USER: …", which is the
	// dialogue's text, not the prompt's instructions.
	speaker = regexp.MustCompile(`^[A-Z]+: `)
	// only matches an instruction to give the answer alone.
	only = regexp.MustCompile(`(?i)\bonly\b`)
)

// defaultAnswers are used when a prompt names none.
var defaultAnswers = []string{"1", "2", "3", "4", "5"}

// allowed finds the answers the question allows — the schema's enum, or
// the last list or range in the instructions of the last user message (or
// an earlier one), or 1–5 — and the instruction line the fake reads for
// "ONLY".
func (q *question) allowed() ([]string, string) {
	last := ""
	for i := len(q.messages) - 1; i >= 0; i-- {
		if q.messages[i].role == "user" {
			last = lastLine(q.messages[i].text)
			break
		}
	}
	if vs := enum(q.schema); len(vs) > 0 {
		return vs, last
	}
	for i := len(q.messages) - 1; i >= 0; i-- {
		m := q.messages[i]
		if m.role != "user" && m.role != "system" {
			continue
		}
		lines := strings.Split(m.text, "\n")
		for j := len(lines) - 1; j >= 0; j-- {
			l := lines[j]
			if speaker.MatchString(l) {
				continue
			}
			if vs := fromLine(l); len(vs) > 0 {
				return vs, l + " " + last
			}
		}
	}
	return defaultAnswers, last
}

// lastUser returns the text of the last user message, "" when there is
// none.
func (q *question) lastUser() string {
	for i := len(q.messages) - 1; i >= 0; i-- {
		if q.messages[i].role == "user" {
			return q.messages[i].text
		}
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// fromLine reads a list or a range of answers from one line.
func fromLine(l string) []string {
	if ms := list.FindAllString(l, -1); len(ms) > 0 {
		return listItem.FindAllString(ms[len(ms)-1], -1)
	}
	ms := scale.FindAllStringSubmatch(l, -1)
	for k := len(ms) - 1; k >= 0; k-- {
		a, errA := strconv.Atoi(ms[k][1])
		b, errB := strconv.Atoi(ms[k][2])
		if errA == nil && errB == nil && b > a && b-a <= 20 {
			var vs []string
			for x := a; x <= b; x++ {
				vs = append(vs, strconv.Itoa(x))
			}
			return vs
		}
	}
	return nil
}

// takesTurns reports whether a reply may carry "turns": any JSON object
// may, but a schema (which structured output follows) must list it.
func takesTurns(schema json.RawMessage) bool {
	if len(schema) == 0 {
		return true
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &doc) != nil {
		return false
	}
	_, ok := doc.Properties["turns"]
	return ok
}

// enum finds the allowed answers in a JSON schema: the enum of the
// "answer" property, or else the first enum anywhere.
func enum(schema json.RawMessage) []string {
	if len(schema) == 0 {
		return nil
	}
	var doc any
	if json.Unmarshal(schema, &doc) != nil {
		return nil
	}
	if m, ok := doc.(map[string]any); ok {
		if props, ok := m["properties"].(map[string]any); ok {
			if ans, ok := props["answer"].(map[string]any); ok {
				if vs := enumValues(ans["enum"]); len(vs) > 0 {
					return vs
				}
			}
		}
	}
	return firstEnum(doc)
}

func firstEnum(v any) []string {
	switch x := v.(type) {
	case map[string]any:
		if vs := enumValues(x["enum"]); len(vs) > 0 {
			return vs
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if vs := firstEnum(x[k]); len(vs) > 0 {
				return vs
			}
		}
	case []any:
		for _, e := range x {
			if vs := firstEnum(e); len(vs) > 0 {
				return vs
			}
		}
	}
	return nil
}

func enumValues(v any) []string {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range arr {
		switch x := e.(type) {
		case string:
			out = append(out, x)
		case float64:
			out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
		}
	}
	return out
}

// choose picks an answer index for u in [0, 1). Answers are weighted so
// that a demo looks like judging rather than noise: on a five-point scale
// 4 is likeliest, then 3; YES is likelier than NO, and NO than NA.
func choose(allowed []string, u float64) int {
	w := make([]float64, len(allowed))
	five := []float64{1, 3, 6, 7, 3}
	for i, v := range allowed {
		switch {
		case len(allowed) == 5 && isInt(v):
			w[i] = five[i]
		case v == "YES":
			w[i] = 7
		case v == "NO":
			w[i] = 2
		default:
			w[i] = 1
		}
	}
	total := 0.0
	for _, x := range w {
		total += x
	}
	acc := 0.0
	for i, x := range w {
		acc += x / total
		if u < acc {
			return i
		}
	}
	return len(allowed) - 1
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// distribution gives the answer token's alternatives: the chosen answer
// most likely (between 0.55 and 0.95, by u), the rest of the mass over the
// other answers, nearer ones likelier, and a little on a token that is no
// answer at all, as real models show.
func distribution(allowed []string, chosen int, u float64) []alternative {
	pc := 0.55 + 0.4*u
	rest := 1 - pc
	filler := rest * 0.1
	rest -= filler
	var alts []alternative
	total := 0.0
	for i := range allowed {
		if i != chosen {
			total += 1 / (1 + math.Abs(float64(i-chosen)))
		}
	}
	alts = append(alts, alternative{allowed[chosen], math.Log(pc)})
	for i, v := range allowed {
		if i != chosen {
			p := rest * (1 / (1 + math.Abs(float64(i-chosen)))) / total
			alts = append(alts, alternative{v, math.Log(p)})
		}
	}
	if len(allowed) == 1 {
		filler += rest
	}
	alts = append(alts, alternative{"The", math.Log(filler)})
	sort.SliceStable(alts, func(i, j int) bool { return alts[i].logprob > alts[j].logprob })
	return alts
}

// reToken splits text into rough tokens: words, and single other
// characters, each with the space before it.
var reToken = regexp.MustCompile(`\s*[A-Za-z0-9]+|\s*[^A-Za-z0-9\s]|\s+`)

// tokenize splits r's text into tokens and says which one is the answer
// (-1 for none): the last standalone occurrence of the value.
func (r reply) tokenize() ([]string, int) {
	if r.value == "" {
		return reToken.FindAllString(r.text, -1), -1
	}
	at := -1
	for from := len(r.text); from > 0; {
		i := strings.LastIndex(r.text[:from], r.value)
		if i < 0 {
			break
		}
		if !word(r.text, i-1) && !word(r.text, i+len(r.value)) {
			at = i
			break
		}
		from = i
	}
	if at < 0 {
		return reToken.FindAllString(r.text, -1), -1
	}
	toks := reToken.FindAllString(r.text[:at], -1)
	idx := len(toks)
	toks = append(toks, r.value)
	toks = append(toks, reToken.FindAllString(r.text[at+len(r.value):], -1)...)
	return toks, idx
}

func word(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
