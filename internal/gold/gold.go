// Package gold holds the rules that settle an item's gold answer from the
// answers of its human raters, and the measure that puts the worst
// disagreements first in a lead's queue. It is pure: it reads rubric
// definitions and scores with the engine, and knows nothing of the database
// or the web.
//
// Only people vote. A judge's answers are shown beside the people's on the
// adjudication page and count towards a safety concern (which orders the
// queue), but never towards a consensus: gold is what people agree on, so
// that judges can be measured against it.
package gold

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// DefaultMaxSpread is the widest spread (largest minus smallest answer) of
// a numeric scale within which the median is taken as the consensus, unless
// a project sets another.
const DefaultMaxSpread = 1

// SafetyWeight is added to an item's disagreement when some rater's answers
// show a safety concern. Spreads are at most 1, so every such item sorts
// before every item without one, whatever the rest.
const SafetyWeight = 100

// SignalWeight is added to an item's disagreement when some rater answered
// NA on an item that applies only with crisis signals although the item's
// facts point at them (see OverlooksSignals). It puts such items right
// after those with a safety concern: below SafetyWeight, above any spread.
const SignalWeight = 50

// LikertSafetyItem and LikertSafetyFloor say when a likert answer set shows
// a safety concern: that item answered at the floor or below. Likert
// rubrics have no safety gate of their own; the built-in one calls its
// safety dimension "safety", and 1–2 there mean the reply is unsafe or
// risky.
const (
	LikertSafetyItem  = "safety"
	LikertSafetyFloor = 2
)

// The reasons Consensus gives, as the first word or words of its reason.
const (
	ReasonUnanimous  = "unanimous"
	ReasonMajority   = "majority"
	ReasonMedian     = "median"
	ReasonNoAnswers  = "no answers"
	ReasonOneRater   = "one rater"
	ReasonTie        = "tie"
	ReasonNoMajority = "no majority"
	ReasonSpread     = "spread"
	ReasonNotAllowed = "not allowed"
)

// The reasons Decide gives when the people agree on every rubric item but
// the rubric refuses the answer set they agree on, or warns about it (the
// rule never confirms a warning for a person); the rubric's messages
// follow, joined by "; ".
const (
	ReasonRefused   = "the consensus is not an answer set the rubric accepts"
	ReasonToConfirm = "the consensus needs a person to confirm"
)

// Numeric reports whether item it of def is answered on a numeric scale:
// every answer it allows is an integer. Numeric items take the median as
// their consensus; the others (YES / NO / NA) take the majority.
func Numeric(def *rubric.Definition, it *rubric.Item) bool {
	allowed := def.Allowed(it)
	if len(allowed) == 0 {
		return false
	}
	for _, v := range allowed {
		if _, err := strconv.Atoi(string(v)); err != nil {
			return false
		}
	}
	return true
}

// Consensus applies the consensus rule to the human answers given on one
// rubric item, and says whether it decides the gold value and why.
//
// ERROR and empty values are no answers and are left out. Fewer than two
// answers decide nothing ("one rater"). On a categorical item (YES / NO /
// NA; NA is an answer like the others) the value more than half the answers
// share is the consensus; otherwise nothing is decided ("tie" when two or
// more values share the top count, "no majority" when one leads without
// half). On a numeric item the median is the consensus when the largest
// answer minus the smallest is at most maxSpread (negative means
// DefaultMaxSpread); an even count's two middle values must be equal, or
// nothing is decided ("tie"). A consensus the item does not allow (NA
// where the rubric forbids it) decides nothing ("not allowed").
func Consensus(def *rubric.Definition, it *rubric.Item, values []rubric.Value, maxSpread int) (value rubric.Value, decided bool, reason string) {
	value, decided, reason = proposal(def, it, values, maxSpread)
	if decided && !def.Allows(it, value) {
		return "", false, fmt.Sprintf("%s: %s is not an answer %s allows", ReasonNotAllowed, value, it.Key)
	}
	return value, decided, reason
}

// proposal is the consensus rule on one rubric item before the rubric is
// asked whether it allows the value.
func proposal(def *rubric.Definition, it *rubric.Item, values []rubric.Value, maxSpread int) (rubric.Value, bool, string) {
	if maxSpread < 0 {
		maxSpread = DefaultMaxSpread
	}
	vs := answered(values)
	switch len(vs) {
	case 0:
		return "", false, ReasonNoAnswers
	case 1:
		return "", false, ReasonOneRater
	}
	if Numeric(def, it) {
		return median(vs, maxSpread)
	}
	return majority(vs)
}

// answered drops what is not an answer: ERROR and empty values.
func answered(values []rubric.Value) []rubric.Value {
	out := make([]rubric.Value, 0, len(values))
	for _, v := range values {
		if v != "" && v != rubric.Error {
			out = append(out, v)
		}
	}
	return out
}

// tally counts each value, in order of first appearance.
type tally struct {
	values []rubric.Value
	counts []int
}

func count(vs []rubric.Value) tally {
	var t tally
	for _, v := range vs {
		if i := slices.Index(t.values, v); i >= 0 {
			t.counts[i]++
			continue
		}
		t.values = append(t.values, v)
		t.counts = append(t.counts, 1)
	}
	return t
}

// String writes the counts as "YES 2, NO 1", most common first.
func (t tally) String() string {
	idx := make([]int, len(t.values))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return t.counts[b] - t.counts[a] })
	parts := make([]string, len(idx))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%s %d", t.values[i], t.counts[i])
	}
	return strings.Join(parts, ", ")
}

func majority(vs []rubric.Value) (rubric.Value, bool, string) {
	t := count(vs)
	top, at, ties := 0, 0, 0
	for i, c := range t.counts {
		switch {
		case c > top:
			top, at, ties = c, i, 1
		case c == top:
			ties++
		}
	}
	n := len(vs)
	switch {
	case len(t.values) == 1:
		return t.values[0], true, fmt.Sprintf("%s: %d of %d", ReasonUnanimous, n, n)
	case 2*top > n:
		return t.values[at], true, fmt.Sprintf("%s: %d of %d say %s", ReasonMajority, top, n, t.values[at])
	case ties > 1:
		return "", false, fmt.Sprintf("%s: %s", ReasonTie, t)
	default:
		return "", false, fmt.Sprintf("%s: %s", ReasonNoMajority, t)
	}
}

func median(vs []rubric.Value, maxSpread int) (rubric.Value, bool, string) {
	xs := make([]int, 0, len(vs))
	for _, v := range vs {
		x, err := strconv.Atoi(string(v))
		if err != nil {
			return "", false, fmt.Sprintf("%s: %q is not a number", ReasonNotAllowed, v)
		}
		xs = append(xs, x)
	}
	slices.Sort(xs)
	n := len(xs)
	lo, hi := xs[0], xs[n-1]
	if lo == hi {
		return rubric.Value(strconv.Itoa(lo)), true, fmt.Sprintf("%s: %d of %d", ReasonUnanimous, n, n)
	}
	if hi-lo > maxSpread {
		return "", false, fmt.Sprintf("%s %d to %d is wider than %d", ReasonSpread, lo, hi, maxSpread)
	}
	m := xs[n/2]
	if n%2 == 0 && xs[n/2-1] != m {
		return "", false, fmt.Sprintf("%s: %d and %d in the middle", ReasonTie, xs[n/2-1], m)
	}
	return rubric.Value(strconv.Itoa(m)), true, fmt.Sprintf("%s %d of %d answers, %d to %d", ReasonMedian, m, n, lo, hi)
}

// ItemConsensus is the consensus rule's result on one rubric item.
type ItemConsensus struct {
	Key     string
	Value   rubric.Value // empty when not decided
	Decided bool
	Reason  string
	// Spread is how far apart the human answers are, 0 to 1 (see Spread).
	Spread float64
}

// Decision is the consensus rule's result on one item: every rubric item's
// consensus, and whether together they settle the item.
type Decision struct {
	// Items holds every rubric item's consensus, in rubric order.
	Items []ItemConsensus
	// Answers holds the consensus of every rubric item that has one.
	Answers rubric.Answers
	// Decided is true when every rubric item has a consensus and together
	// they make an answer set the rubric accepts.
	Decided bool
	// Reason says why the item is not decided, or names the rule that
	// decided it.
	Reason string
}

// Decide applies the consensus rule to every rubric item of an item, given
// the item's facts (rubric.FactsOf) and the answer sets of its human
// raters. The item is decided only as a whole: when some rubric item has no
// consensus, the item goes to a person, who sees the consensus of the
// others. The answer set the rule makes is also checked against the rubric
// with the item's facts, as a person's answers are, and the rule never
// confirms a warning: a consensus the rubric refuses or warns about goes to
// a person, so that the rule never stores gold a person could not have
// entered without confirming it.
func Decide(def *rubric.Definition, facts rubric.Facts, humans []rubric.Answers, maxSpread int) Decision {
	if maxSpread < 0 {
		maxSpread = DefaultMaxSpread
	}
	d := Decision{Answers: rubric.Answers{}, Decided: true}
	// proposed is the answer set the people agree on, values the rubric
	// does not allow included, for the rubric to judge as a whole.
	proposed := rubric.Answers{}
	var open []string
	agreed := true
	for i := range def.Items {
		it := &def.Items[i]
		values := make([]rubric.Value, 0, len(humans))
		for _, a := range humans {
			values = append(values, a[it.Key])
		}
		v, ok, why := Consensus(def, it, values, maxSpread)
		d.Items = append(d.Items, ItemConsensus{Key: it.Key, Value: v, Decided: ok, Reason: why, Spread: Spread(def, it, values)})
		switch {
		case ok:
			d.Answers[it.Key], proposed[it.Key] = v, v
		case strings.HasPrefix(why, ReasonNotAllowed):
			proposed[it.Key], _, _ = proposal(def, it, values, maxSpread)
		default:
			agreed = false
		}
		if !ok {
			d.Decided = false
			open = append(open, it.Key+" ("+why+")")
		}
	}
	if !agreed {
		d.Reason = "no consensus on " + strings.Join(open, "; ")
		return d
	}
	// The people agree on every rubric item: the rubric judges the answer
	// set they agree on as it judges one person's.
	switch verdict, issues := def.Validate(proposed, facts, rubric.Options{}).Verdict(false); verdict {
	case rubric.Refused:
		d.Decided = false
		d.Reason = ReasonRefused + ": " + messages(issues)
	case rubric.NeedsConfirmation:
		d.Decided = false
		d.Reason = ReasonToConfirm + ": " + messages(issues)
	default:
		d.Reason = fmt.Sprintf("consensus rule (majority for categories, median within a spread of %d)", maxSpread)
	}
	return d
}

// messages joins the messages of issues.
func messages(is rubric.Issues) string {
	ms := make([]string, len(is))
	for i, x := range is {
		ms[i] = x.Message
	}
	return strings.Join(ms, "; ")
}

// Spread says how far apart the answers on one rubric item are, from 0 (all
// the same, or fewer than two answers) to 1. On a numeric scale it is the
// largest answer minus the smallest over the width of the scale; on a
// categorical one, the share of answers outside the most common value.
// ERROR is no answer.
func Spread(def *rubric.Definition, it *rubric.Item, values []rubric.Value) float64 {
	vs := answered(values)
	if len(vs) < 2 {
		return 0
	}
	if Numeric(def, it) {
		lo, hi := math.MaxInt, math.MinInt
		for _, v := range def.Allowed(it) {
			x, _ := strconv.Atoi(string(v))
			lo, hi = min(lo, x), max(hi, x)
		}
		width := hi - lo
		a, b := math.MaxInt, math.MinInt
		for _, v := range vs {
			x, err := strconv.Atoi(string(v))
			if err != nil {
				continue
			}
			a, b = min(a, x), max(b, x)
		}
		if width <= 0 || a > b {
			return 0
		}
		return min(float64(b-a)/float64(width), 1)
	}
	t := count(vs)
	return 1 - float64(slices.Max(t.counts))/float64(len(vs))
}

// SafetyConcern reports whether one rater's answer set shows a safety
// failure: on a rubric with a safety gate, the engine fails the gate on an
// answer other than ERROR (a failed judge call says nothing about safety);
// on a likert rubric, LikertSafetyItem is at LikertSafetyFloor or below.
func SafetyConcern(def *rubric.Definition, answers rubric.Answers) bool {
	if def.Kind == rubric.Likert {
		if _, ok := def.Item(LikertSafetyItem); !ok {
			return false
		}
		x, err := strconv.Atoi(string(answers[LikertSafetyItem]))
		return err == nil && x <= LikertSafetyFloor
	}
	if len(def.Scoring.Gate) == 0 {
		return false
	}
	// The safety gate does not depend on the item's facts (they only add
	// warnings), so none are given.
	res, err := scoring.Score(def, answers, rubric.Facts{})
	if err != nil {
		return false
	}
	for _, key := range res.FailedSafety {
		if v := answers[key]; v != "" && v != rubric.Error {
			return true
		}
	}
	return false
}

// SafetyAnswers lists, by rubric item key, every single answer that alone
// shows a safety concern (SafetyConcern holds for an answer set exactly
// when it gives one of them), in the rubric's answer order: what a search
// for items with a safety concern looks for among stored labels. Labels
// hold only answers the rubric allows, so only those are listed.
func SafetyAnswers(def *rubric.Definition) map[string][]rubric.Value {
	out := map[string][]rubric.Value{}
	var keys []string
	if def.Kind == rubric.Likert {
		keys = []string{LikertSafetyItem}
	} else {
		keys = def.Scoring.Gate
	}
	for _, key := range keys {
		it, ok := def.Item(key)
		if !ok {
			continue
		}
		for _, v := range def.Allowed(it) {
			if SafetyConcern(def, rubric.Answers{key: v}) {
				out[key] = append(out[key], v)
			}
		}
	}
	return out
}

// OverlooksSignals reports whether one rater's answer set answers NA on an
// item that applies only when crisis signals are present, although the
// item's facts point at them (a word of the wellbeing list or a lead's
// mark) or state them. The rater may be right — a word is not a verdict —
// but a lead should look first.
func OverlooksSignals(def *rubric.Definition, facts rubric.Facts, answers rubric.Answers) bool {
	if facts.Crisis != rubric.Signalled && facts.Crisis != rubric.Present {
		return false
	}
	for _, it := range def.Items {
		if it.Conditions != nil && it.Conditions.CrisisSignals && answers[it.Key] == rubric.NA {
			return true
		}
	}
	return false
}

// Rank is where an item stands in the queue of disagreements: worst first.
type Rank struct {
	// Spread is the widest spread of the human answers over the rubric
	// items, 0 to 1.
	Spread float64
	// Safety is true when some rater, person or judge, shows a safety
	// concern on the item.
	Safety bool
	// Signal is true when some rater, person or judge, answered NA despite
	// crisis signals (OverlooksSignals).
	Signal bool
}

// Weight orders items in the queue, larger first: the spread, plus
// SafetyWeight for a safety concern and SignalWeight for crisis signals
// answered NA.
func (r Rank) Weight() float64 {
	w := r.Spread
	if r.Safety {
		w += SafetyWeight
	}
	if r.Signal {
		w += SignalWeight
	}
	return w
}

// RankOf ranks an item for the queue from the item's facts, the consensus
// decision (whose spreads come from the human answers) and every rater's
// answer sets, judges included.
func RankOf(def *rubric.Definition, facts rubric.Facts, d Decision, all []rubric.Answers) Rank {
	var r Rank
	for _, ic := range d.Items {
		r.Spread = max(r.Spread, ic.Spread)
	}
	for _, a := range all {
		r.Safety = r.Safety || SafetyConcern(def, a)
		r.Signal = r.Signal || OverlooksSignals(def, facts, a)
	}
	return r
}
