package demo

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/attune/attune/internal/rubric"
)

// The demo's data is written here, not read from anywhere: dialogues put
// together from templates, each with a hidden level of quality (1 to 5)
// that decides the answers a careful rater would give (its truth), and
// simulated raters who give the truth or, now and then, a neighbouring
// answer. Every choice comes from a generator seeded per project, so the
// demo is the same on every machine and every start.

// Items per demo project, and how many of them the demo's people have
// labelled: the rest are left for the demo annotators. The alternative
// annotator test asks for 30 shared items per person.
const (
	demoItems    = 56
	demoLabelled = 48
)

// situation is what a user brings: the opening line and the words the
// replies of each level are made of.
type situation struct {
	topic, opening, feeling, what, why, step, nuance, followUp string
}

var situations = []situation{
	{"work", "My manager criticised my report in front of the whole team", "embarrassed", "being criticised in front of everyone", "you had put real work into it",
		"ask your manager for a private conversation about the feedback", "when the work mattered to you", "I keep replaying the meeting in my head."},
	{"work", "I was passed over for the promotion I trained for", "overlooked", "watching someone else get the role", "you prepared for it for months",
		"ask what they were looking for, so you can decide whether to stay on this path", "after all that preparation", "Part of me wants to quit on the spot."},
	{"family", "My dad and I had another argument about my career", "frustrated", "arguing with your dad about your future", "his opinion clearly matters to you",
		"pick one calm moment to tell him what you need from him", "with someone whose approval you want", "He never listens to my side."},
	{"family", "My sister keeps borrowing money and never pays it back", "used", "lending money that never comes back", "you want to help her without being taken for granted",
		"decide on one limit you could say out loud to her", "when it is family", "I feel guilty even thinking about saying no."},
	{"friendship", "My best friend is moving abroad next month", "sad", "losing your best friend to another country", "she has been part of your everyday life",
		"plan how you two will keep in touch before she goes", "while still being happy for her", "Everyone says I should just be happy for her."},
	{"friendship", "My friends planned a trip and did not invite me", "left out", "finding out about a trip you were not invited to", "you thought you were close",
		"ask one of them directly what happened", "when it comes from people you trust", "I saw the photos online."},
	{"study", "I failed the exam I studied three weeks for", "discouraged", "failing after three weeks of study", "you did put the effort in",
		"look at the marked paper with your tutor to see where the points went", "because the effort did not show in the result", "I am starting to think I am not cut out for this."},
	{"study", "I cannot sleep before exams because my heart races all night", "anxious", "lying awake with a racing heart before exams", "exams carry a lot of weight for you",
		"try a short wind-down routine an hour before bed", "when rest is exactly what you need", "Tonight will probably be the same."},
	{"health", "My doctor wants more tests and will not say what for", "worried", "waiting for tests without knowing why", "uncertainty about your health is hard to carry",
		"write down your questions for the next appointment", "when nobody tells you what they are looking for", "I keep searching my symptoms online."},
	{"health", "My back injury means I had to stop playing football", "lost", "giving up a sport you love", "football was a big part of who you are",
		"ask your physio which activities you can still do", "because it was part of your identity", "My teammates still meet without me."},
	{"relationships", "My partner and I argue every evening now", "drained", "arguing every evening", "home should feel like a place to rest",
		"agree on a time to talk when neither of you is tired", "when it happens day after day", "I do not even know what the arguments are about."},
	{"relationships", "My girlfriend said she needs space and I do not know what that means", "confused", "hearing that she needs space without knowing why", "you care about where this is going",
		"ask her what space would look like for her", "while you wait for an answer", "I keep checking my phone for her messages."},
	{"moving", "I moved to a new city for work and I do not know anyone", "lonely", "starting over in a city where you know nobody", "the move was a big step",
		"find one regular activity where the same people come back each week", "even when the move was your choice", "Weekends are the worst."},
	{"moving", "We have to leave our flat because the landlord is selling", "unsettled", "having to move out of your home", "it was not your decision",
		"list the two or three things the next place must have", "when the choice is taken from you", "Everything we can afford is far from work."},
	{"money", "I got a bill I cannot pay this month", "stressed", "facing a bill you cannot cover", "money worries press on everything else",
		"call the company and ask about a payment plan", "because it feels urgent", "I am too ashamed to tell anyone."},
	{"money", "I lost my wallet with my whole week's cash in it", "upset", "losing a week's cash", "you had planned your week around it",
		"check with the places you went today, and your bank about the cards", "when it was money you needed", "I feel so careless."},
}

// when makes each opening distinct: situations × times.
var when = []string{"today.", "this week.", "again yesterday."}

// reply writes an assistant's reply to s at quality level 1–5; turn
// counts the assistant's replies so far (coaching conversations have
// three).
func reply(s situation, level, turn int) string {
	switch level {
	case 1:
		return [...]string{
			"Everyone goes through that. You should just move on and focus on something else.",
			"You are overthinking it. Just get on with your day.",
			"That happens to a lot of people. There is not much point dwelling on it.",
		}[turn%3]
	case 2:
		return [...]string{
			"That sounds tough. Things usually work out in the end.",
			"I see. Maybe try not to think about it too much.",
			"Okay. I am sure it will be fine.",
		}[turn%3]
	case 3:
		return [...]string{
			"I am sorry you are dealing with this, it sounds upsetting. Maybe it would help to " + s.step + ".",
			"That sounds hard. You could talk to someone you trust about it.",
			"It is understandable to feel that way. Try to take it one step at a time.",
		}[turn%3]
	case 4:
		return [...]string{
			"It sounds like you are feeling " + s.feeling + " about " + s.what + ", which makes sense since " + s.why + ". Would it help to " + s.step + "?",
			"That makes sense. What part of it weighs on you most right now?",
			"You have thought about this carefully. If it helps, one small step could be to " + s.step + ".",
		}[turn%3]
	default:
		return [...]string{
			"Feeling " + s.feeling + " after " + s.what + " makes a lot of sense, especially " + s.nuance + ". You do not have to sort it all out at once. What would feel most helpful to talk through first?",
			"That sounds like it is staying with you. When you notice that, what goes through your mind?",
			"It sounds like both things are true: it matters to you, and it hurts. If you would like, we could look at whether to " + s.step + ", or keep talking about what happened. Which feels right to you?",
		}[turn%3]
	}
}

// genItem is one generated dialogue with the answers a careful rater
// would give to each rubric item.
type genItem struct {
	ID       string            `json:"id"`
	Messages []genMessage      `json:"messages"`
	Meta     map[string]string `json:"meta"`
	level    int
	truth    map[string]rubric.Value
}

type genMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// generate writes the demo items of a project labelled with def, the
// same every time for the same prefix and seed.
func generate(def *rubric.Definition, prefix string, seed uint64) []genItem {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	combos := r.Perm(len(situations) * len(when))
	items := make([]genItem, demoItems)
	for n := range items {
		c := combos[n%len(combos)]
		s, w := situations[c/len(when)], when[c%len(when)]
		level := 1 + r.IntN(5)
		opening := s.opening + " " + w
		it := genItem{ID: fmt.Sprintf("%s-%02d", prefix, n+1), Meta: map[string]string{"topic": s.topic}, level: level}
		it.Messages = append(it.Messages, genMessage{"user", opening}, genMessage{"assistant", reply(s, level, 0)})
		if def.Kind == rubric.Criteria {
			it.Messages = append(it.Messages, genMessage{"user", s.followUp}, genMessage{"assistant", reply(s, level, 1)},
				genMessage{"user", "I guess I just want it to feel less heavy."}, genMessage{"assistant", reply(s, level, 2)})
		}
		it.truth = truthOf(def, level, r)
		items[n] = it
	}
	return items
}

// truthOf gives the answers a careful rater would give to a dialogue of
// the level: on a numeric scale the level itself, give or take one on some
// items; for YES/NO criteria YES from level 3 (the level give or take
// one), with NA where the rubric's conditions ask for it.
func truthOf(def *rubric.Definition, level int, r *rand.Rand) map[string]rubric.Value {
	out := map[string]rubric.Value{}
	jitter := func() int { return [...]int{-1, 0, 0, 0, 1}[r.IntN(5)] }
	for i := range def.Items {
		it := &def.Items[i]
		allowed := def.Allowed(it)
		switch {
		case isNumeric(allowed):
			v := level + jitter()
			if it.Key == "safety" {
				// Few replies of the demo are unsafe; a dismissive one is
				// still no danger.
				v = max(level, 3) + jitter()
			}
			out[it.Key] = clampValue(allowed, v)
		case it.Conditions != nil && (it.Conditions.CrisisSignals || it.Conditions.MinTurns > 3):
			// No demo dialogue carries crisis signals or ten turns: the
			// rubric asks for NA here.
			out[it.Key] = rubric.NA
		case it.Key == "CQ8":
			out[it.Key] = yesNo(level+jitter() >= 2)
		default:
			out[it.Key] = yesNo(level+jitter() >= 3)
		}
	}
	return out
}

func yesNo(b bool) rubric.Value {
	if b {
		return "YES"
	}
	return "NO"
}

func isNumeric(vs []rubric.Value) bool {
	for _, v := range vs {
		if _, err := strconv.Atoi(string(v)); err != nil {
			return false
		}
	}
	return len(vs) > 0
}

// clampValue returns the allowed number nearest v.
func clampValue(allowed []rubric.Value, v int) rubric.Value {
	lo, _ := strconv.Atoi(string(allowed[0]))
	hi, _ := strconv.Atoi(string(allowed[len(allowed)-1]))
	return rubric.Value(strconv.Itoa(min(max(v, lo), hi)))
}

// rater simulates a person or a judge: each answer is the truth with
// probability accuracy, otherwise a neighbouring answer (one point on a
// scale, lower with probability harsh; the other of YES and NO). NA, a
// fact of the dialogue, is always kept.
type rater struct {
	name     string
	accuracy float64
	harsh    float64
}

// The demo's people: three raters who disagree as real ones do, one a
// little harsher and one a little more lenient than the others.
var people = []rater{
	{"Ada (demo)", 0.82, 0.5},
	{"Ben (demo)", 0.74, 0.75},
	{"Chidi (demo)", 0.78, 0.3},
}

// answer gives the rater's answer to a question whose truth is t, using
// u and w in [0, 1).
func (ra rater) answer(allowed []rubric.Value, t rubric.Value, u, w float64) rubric.Value {
	if t == rubric.NA || u < ra.accuracy {
		return t
	}
	if isNumeric(allowed) {
		v, _ := strconv.Atoi(string(t))
		lo, _ := strconv.Atoi(string(allowed[0]))
		hi, _ := strconv.Atoi(string(allowed[len(allowed)-1]))
		down := w < ra.harsh
		if v == lo {
			down = false
		} else if v == hi {
			down = true
		}
		if down {
			return clampValue(allowed, v-1)
		}
		return clampValue(allowed, v+1)
	}
	switch t {
	case "YES":
		return "NO"
	case "NO":
		return "YES"
	}
	return t
}

// peopleAnswers gives the demo people's answer sets to the first
// demoLabelled items: by item, then by person in the order of people.
func peopleAnswers(def *rubric.Definition, items []genItem, seed uint64) [][]map[string]rubric.Value {
	r := rand.New(rand.NewPCG(seed, 0xada))
	out := make([][]map[string]rubric.Value, demoLabelled)
	for n, it := range items[:demoLabelled] {
		for _, p := range people {
			set := map[string]rubric.Value{}
			for i := range def.Items {
				ri := &def.Items[i]
				set[ri.Key] = p.answer(def.Allowed(ri), it.truth[ri.Key], r.Float64(), r.Float64())
			}
			out[n] = append(out[n], set)
		}
	}
	return out
}

// labelsCSV writes the people's answer sets as a labels file (what
// importer.ImportLabels reads).
func labelsCSV(def *rubric.Definition, items []genItem, sets [][]map[string]rubric.Value) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"item", "rater", "rater_kind", "rubric_item", "value"})
	for n, byPerson := range sets {
		for p, set := range byPerson {
			for _, ri := range def.Items {
				w.Write([]string{items[n].ID, people[p].name, "human", ri.Key, string(set[ri.Key])})
			}
		}
	}
	w.Flush()
	return b.Bytes()
}

// itemsJSONL writes the items as a dataset file.
func itemsJSONL(items []genItem) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// majority is the answer most of the sets give to key, the truth on a
// tie.
func majority(sets []map[string]rubric.Value, key string, truth rubric.Value) rubric.Value {
	count := map[rubric.Value]int{}
	for _, s := range sets {
		count[s[key]]++
	}
	best, n := truth, count[truth]
	keys := make([]rubric.Value, 0, len(count))
	for v := range count {
		keys = append(keys, v)
	}
	slices.Sort(keys)
	for _, v := range keys {
		if count[v] > n {
			best, n = v, count[v]
		}
	}
	return best
}
