package fakellm

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Behaviour is how the fake judge reads a dialogue, to play a judge whose
// robustness probes (docs/judges.md, "Robustness probes") have something
// to find. The zero value answers from a hash of the whole prompt, as the
// fake always did: any change to the prompt, however neutral, may move its
// answer.
type Behaviour string

// The behaviours. Each reads the dialogue from the prompt's speaker lines
// ("NAME: text").
const (
	// BehaveStable answers from the words of the dialogue's last line (the
	// reply judged) alone: letters and digits, lower-cased, without the
	// speaker's name. White space, markdown, the speakers' names and a
	// sentence added to an earlier turn do not move it, and it answers the
	// same prompt the same at any temperature.
	BehaveStable Behaviour = "stable"
	// BehaveRandom answers as BehaveStable at temperature 0 (or none set)
	// and at random, anew for every request, at a temperature above 0.
	BehaveRandom Behaviour = "random"
	// BehaveLength answers by the reply's length alone: on a numeric
	// scale a step up for each doubling of its characters (the lowest up
	// to 32 characters), YES from 80 characters and NO below.
	BehaveLength Behaviour = "length"
	// BehaveNames answers as BehaveStable, but with the speakers' names
	// mixed in: other names, another answer.
	BehaveNames Behaviour = "names"
)

// ParseBehaviour reads a behaviour's name; "" and "hash" are the default.
func ParseBehaviour(s string) (Behaviour, bool) {
	switch b := Behaviour(strings.TrimSpace(s)); b {
	case "", "hash":
		return "", true
	case BehaveStable, BehaveRandom, BehaveLength, BehaveNames:
		return b, true
	}
	return "", false
}

var speakerLine = regexp.MustCompile(`^([A-Z][A-Z0-9_]*): (.*)$`)

// dialogue returns the speaker lines of the question's first user message
// (the prompt; a re-ask comes after it): each line's name and text.
func (q *question) dialogue() (names []string, texts []string) {
	for _, m := range q.messages {
		if m.role != "user" {
			continue
		}
		for _, l := range strings.Split(m.text, "\n") {
			if sm := speakerLine.FindStringSubmatch(strings.TrimSpace(l)); sm != nil {
				names, texts = append(names, sm[1]), append(texts, sm[2])
			}
		}
		break
	}
	return names, texts
}

// plain keeps a text's letters and digits, lower-cased.
func plain(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// behave chooses the answer (an index of allowed) as q.behaviour says,
// and says how; false leaves the choice to the prompt's hash.
func (q *question) behave(allowed []string) (int, string, bool) {
	if q.behaviour == "" || len(allowed) == 0 {
		return 0, "", false
	}
	names, texts := q.dialogue()
	if len(texts) == 0 {
		return 0, "", false
	}
	reply := texts[len(texts)-1]
	stable := func(extra ...string) int {
		return choose(allowed, unit(mix(promptHash(append([]string{q.model, q.instructions(), plain(reply)}, extra...)...), 1)))
	}
	switch q.behaviour {
	case BehaveStable:
		return stable(), "read from the reply's words alone in this %d-character prompt", true
	case BehaveRandom:
		if q.temperature > 0 {
			return choose(allowed, unit(q.draw)), "drawn at random at temperature above 0 for this %d-character prompt", true
		}
		return stable(), "read from the reply's words alone at temperature 0 in this %d-character prompt", true
	case BehaveNames:
		uniq := slices.Compact(slices.Sorted(slices.Values(names)))
		return stable(uniq...), "read from the reply's words and the speakers' names in this %d-character prompt", true
	case BehaveLength:
		chars := len([]rune(reply))
		if i, ok := lengthAnswer(allowed, chars); ok {
			return i, "read from the reply's length alone in this %d-character prompt", true
		}
		return stable(), "read from the reply's words alone in this %d-character prompt", true
	}
	return 0, "", false
}

// instructions is the prompt without its dialogue lines: which rubric
// item is asked, so that one reply gets its own answer per item.
func (q *question) instructions() string {
	for _, m := range q.messages {
		if m.role != "user" {
			continue
		}
		var b strings.Builder
		for _, l := range strings.Split(m.text, "\n") {
			if !speakerLine.MatchString(strings.TrimSpace(l)) {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
	return ""
}

// lengthAnswer is BehaveLength's answer to a reply of chars characters:
// on a numeric scale, ascending, one step per doubling from 32 characters;
// YES from 80 characters, NO below; false for other scales.
func lengthAnswer(allowed []string, chars int) (int, bool) {
	nums := slices.Clone(allowed)
	if !slices.ContainsFunc(nums, func(s string) bool { return !isInt(s) }) {
		slices.SortFunc(nums, func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		})
		step := 0
		if chars > 32 {
			step = int(math.Log2(float64(chars) / 32))
		}
		return slices.Index(allowed, nums[min(step, len(nums)-1)]), true
	}
	yes, no := slices.Index(allowed, "YES"), slices.Index(allowed, "NO")
	if yes < 0 || no < 0 {
		return 0, false
	}
	if chars >= 80 {
		return yes, true
	}
	return no, true
}
