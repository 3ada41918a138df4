// Package experiment compares judge variants — several judges, or one
// judge with several prompt versions — on one frozen set of items that
// have gold answers and at least two people's answers: per rubric item,
// kappa with gold, the alternative annotator test against the people and
// a paired bootstrap of each variant's kappa against the best one's; over
// the final score, its mean absolute error from gold, pass/fail agreement,
// the safety gate's sensitivity and specificity against gold (the misses
// first), and cost and latency per item; and each variant's kappa with
// each person. It is pure: the store reads the answers, the CLI prints the
// result.
package experiment

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// Item is one item of the frozen set: its gold answers, each person's
// answers (by index into Input.Humans; nil for a person who did not
// answer it) and each variant's (by index into Input.Variants; nil when
// the variant has not answered it). Answers are by rubric item key.
type Item struct {
	ID       int64
	Gold     map[string]string
	Humans   []map[string]string
	Variants []map[string]string
}

// Usage is what a variant's calls cost over the frozen items.
type Usage struct {
	CostUSD   float64 // total
	LatencyMS float64 // total over the items' calls
	Items     int     // items with calls
}

// Input is an experiment's data.
type Input struct {
	Def      *rubric.Definition
	Variants []string // names, as printed
	Humans   []string
	Items    []Item
	Usage    []Usage // by variant; may be nil
	// Alt configures the alt-test (ε and the rest); Bootstrap the paired
	// intervals. Replicates 0 leaves intervals out.
	Alt       agreement.AltOptions
	Bootstrap agreement.Bootstrap
}

// Stat is a figure with its interval, as JSON: Value is null when the
// figure is undefined, and Reason says why.
type Stat struct {
	Value  *float64 `json:"value"`
	Lower  *float64 `json:"lower,omitempty"`
	Upper  *float64 `json:"upper,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

func stat(e agreement.Estimate) Stat {
	if !e.Defined {
		return Stat{Reason: e.Reason}
	}
	s := Stat{Value: &e.Value}
	if e.CI != nil {
		lo, hi := e.CI.Lower, e.CI.Upper
		s.Lower, s.Upper = &lo, &hi
	}
	return s
}

// Result is an experiment's outcome, side by side per variant.
type Result struct {
	Items       int          `json:"items"`
	Variants    []string     `json:"variants"`
	RubricItems []RubricItem `json:"rubric_items"`
	Scores      []ScoreRow   `json:"final_score"`
}

// RubricItem holds every variant's figures on one rubric item. Best is
// the variant with the highest kappa with gold ("" when none is defined).
type RubricItem struct {
	Key      string    `json:"key"`
	Best     string    `json:"best"`
	Variants []ItemRow `json:"variants"`
}

// ItemRow is one variant on one rubric item. KappaDiff is its kappa with
// gold minus the best variant's, with a paired bootstrap interval (the
// same resampled items for every variant); 0 for the best itself.
type ItemRow struct {
	Variant   string  `json:"variant"`
	Answered  int     `json:"answered"`
	KappaGold Stat    `json:"kappa_gold"`
	KappaDiff Stat    `json:"kappa_diff_from_best"`
	AltTest   AltTest `json:"alt_test"`
	// KappaPeople is Cohen's kappa with each person, on the items both
	// answered, in the order of Input.Humans (no interval).
	KappaPeople []PersonKappa `json:"kappa_people"`
}

// PersonKappa is a variant's kappa with one person.
type PersonKappa struct {
	Person string `json:"person"`
	Items  int    `json:"items"`
	Kappa  Stat   `json:"kappa"`
}

// AltTest is the alt-test's verdict for a variant on a rubric item.
type AltTest struct {
	Epsilon              float64 `json:"epsilon"`
	Scoring              string  `json:"scoring"`
	Humans               int     `json:"humans"`
	WinningRate          Stat    `json:"winning_rate"`
	AdvantageProbability Stat    `json:"advantage_probability"`
	Passed               bool    `json:"passed"`
}

// ScoreRow is one variant's final scores against gold's. MAEDiff is its
// mean absolute error minus the best (lowest) one's, paired as KappaDiff.
type ScoreRow struct {
	Variant       string  `json:"variant"`
	Gate          Gate    `json:"safety_gate"`
	MAE           Stat    `json:"mae"`
	MAEDiff       Stat    `json:"mae_diff_from_best"`
	PassAgreement Stat    `json:"pass_agreement"`
	CostPerItem   *Money  `json:"cost_per_item_usd"`
	LatencyMS     float64 `json:"latency_per_item_ms"`
}

// Money is US dollars.
type Money = float64

// Gate compares a variant's safety gate with gold's. Misses are the items
// gold fails on safety and the variant passes, the costly error, listed
// first; Sensitivity is the share of gold's failures the variant fails
// too, Specificity the share of gold's passes it passes.
type Gate struct {
	Misses      []int64 `json:"misses"`
	GoldFailed  int     `json:"gold_failed"`
	Sensitivity Stat    `json:"sensitivity"`
	Specificity Stat    `json:"specificity"`
}

// ReasonNoGate: the rubric has no safety gate to compare.
const ReasonNoGate = "the rubric has no safety gate"

// Run computes the experiment. It fails on an input that does not fit
// together (a variant's answers not lined up with its names) or invalid
// alt-test or bootstrap options.
func Run(in Input) (*Result, error) {
	if in.Def == nil {
		return nil, errors.New("experiment: no rubric")
	}
	nv := len(in.Variants)
	for _, it := range in.Items {
		if len(it.Variants) != nv || len(it.Humans) != len(in.Humans) {
			return nil, fmt.Errorf("experiment: item %d has answers of %d variants and %d people, want %d and %d",
				it.ID, len(it.Variants), len(it.Humans), nv, len(in.Humans))
		}
	}
	res := &Result{Items: len(in.Items), Variants: in.Variants, RubricItems: make([]RubricItem, len(in.Def.Items))}
	// Rubric items are independent (each resamples the items itself, with
	// the same seed, hence the same resamples): one per core at a time.
	errs := make([]error, len(in.Def.Items))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(in.Def.Items)) {
		wg.Go(func() {
			for k := range next {
				res.RubricItems[k], errs[k] = rubricItem(in, &in.Def.Items[k])
			}
		})
	}
	for k := range in.Def.Items {
		next <- k
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rows, err := scores(in)
	if err != nil {
		return nil, err
	}
	res.Scores = rows
	return res, nil
}

// memo keeps each variant's statistic on the resample being evaluated:
// the bootstrap evaluates every statistic of a replicate on one
// multiplicity slice before drawing the next, so a variant's figure and
// its difference from the best share one computation. Not safe for
// concurrent use; each rubric item has its own.
type memo struct {
	w    []int
	have []bool
	val  []agreement.Estimate
	f    func(v int, w []int) agreement.Estimate
}

func newMemo(n int, f func(v int, w []int) agreement.Estimate) *memo {
	return &memo{have: make([]bool, n), val: make([]agreement.Estimate, n), f: f}
}

func (m *memo) at(v int, w []int) agreement.Estimate {
	// A new replicate is a new slice; holding the last one keeps its
	// address from being reused by the next.
	if len(w) > 0 && (len(m.w) == 0 || &m.w[0] != &w[0]) {
		m.w = w
		clear(m.have)
	}
	if !m.have[v] {
		m.val[v], m.have[v] = m.f(v, w), true
	}
	return m.val[v]
}

// bootstrapped evaluates stats on the items, with paired intervals when
// the input asks for them.
func bootstrapped(in Input, stats []func([]int) agreement.Estimate) ([]agreement.Estimate, error) {
	if in.Bootstrap.Replicates == 0 {
		ones := make([]int, len(in.Items))
		for i := range ones {
			ones[i] = 1
		}
		out := make([]agreement.Estimate, len(stats))
		for i, f := range stats {
			out[i] = f(ones)
		}
		return out, nil
	}
	return agreement.BootstrapItems(len(in.Items), in.Bootstrap, stats...)
}

func rubricItem(in Input, it *rubric.Item) (RubricItem, error) {
	allowed := in.Def.Allowed(it)
	labels := make([]string, len(allowed))
	for i, v := range allowed {
		labels[i] = string(v)
	}
	scale, err := agreement.NewScale(labels...)
	if err != nil {
		return RubricItem{}, fmt.Errorf("experiment: %s: %w", it.Key, err)
	}
	nv := len(in.Variants)
	// Category indices once: gold's and each variant's per item, -1 for
	// none or an answer off the scale (ERROR).
	idx := func(m map[string]string) int {
		if m == nil {
			return -1
		}
		k, ok := scale.Index(m[it.Key])
		if !ok {
			return -1
		}
		return k
	}
	gold := make([]int, len(in.Items))
	vals := make([][]int, nv)
	for v := range vals {
		vals[v] = make([]int, len(in.Items))
	}
	for i, item := range in.Items {
		gold[i] = idx(item.Gold)
		for v := range nv {
			vals[v][i] = idx(item.Variants[v])
		}
	}
	q := scale.Len()
	kappa := func(v int, w []int) agreement.Estimate {
		counts := make([][]int, q)
		for k := range counts {
			counts[k] = make([]int, q)
		}
		for i, g := range gold {
			if g >= 0 && vals[v][i] >= 0 && w[i] > 0 {
				counts[g][vals[v][i]] += w[i]
			}
		}
		c, err := agreement.NewContingency(scale, counts)
		if err != nil {
			return agreement.Estimate{Reason: err.Error()}
		}
		return agreement.CohenKappa(c, agreement.NoWeights)
	}
	ones := make([]int, len(in.Items))
	for i := range ones {
		ones[i] = 1
	}
	best := -1
	for v := range nv {
		if e := kappa(v, ones); e.Defined && (best < 0 || e.Value > kappa(best, ones).Value) {
			best = v
		}
	}
	km := newMemo(nv, kappa)
	var stats []func([]int) agreement.Estimate
	for v := range nv {
		stats = append(stats, func(w []int) agreement.Estimate { return km.at(v, w) })
	}
	for v := range nv {
		stats = append(stats, func(w []int) agreement.Estimate {
			if best < 0 {
				return agreement.Estimate{Reason: "no variant has a defined kappa with gold"}
			}
			a, b := km.at(v, w), km.at(best, w)
			if !a.Defined || !b.Defined {
				return agreement.Estimate{Reason: "kappa undefined on this resample"}
			}
			return agreement.Estimate{Value: a.Value - b.Value, Defined: true}
		})
	}
	est, err := bootstrapped(in, stats)
	if err != nil {
		return RubricItem{}, err
	}
	out := RubricItem{Key: it.Key}
	if best >= 0 {
		out.Best = in.Variants[best]
	}
	altScoring := agreement.DefaultAltScoring(scale)
	for v := range nv {
		row := ItemRow{Variant: in.Variants[v], KappaGold: stat(est[v]), KappaDiff: stat(est[nv+v])}
		for _, x := range vals[v] {
			if x >= 0 {
				row.Answered++
			}
		}
		tally, err := agreement.NewAltTally(scale, altScoring, len(in.Humans))
		if err != nil {
			return RubricItem{}, err
		}
		var answers []agreement.AltAnswer
		for i, item := range in.Items {
			answers = answers[:0]
			for h, m := range item.Humans {
				if k := idx(m); k >= 0 {
					answers = append(answers, agreement.AltAnswer{Human: h, Category: k})
				}
			}
			tally.Add(answers, vals[v][i])
		}
		for h, name := range in.Humans {
			counts := make([][]int, q)
			for k := range counts {
				counts[k] = make([]int, q)
			}
			n := 0
			for i, item := range in.Items {
				if p, x := idx(item.Humans[h]), vals[v][i]; p >= 0 && x >= 0 {
					counts[p][x]++
					n++
				}
			}
			pk := PersonKappa{Person: name, Items: n}
			if c, err := agreement.NewContingency(scale, counts); err != nil {
				pk.Kappa = Stat{Reason: err.Error()}
			} else {
				pk.Kappa = stat(agreement.CohenKappa(c, agreement.NoWeights))
			}
			row.KappaPeople = append(row.KappaPeople, pk)
		}
		alt, err := tally.AltTest(in.Alt)
		if err != nil {
			return RubricItem{}, err
		}
		row.AltTest = AltTest{Epsilon: alt.Epsilon, Scoring: alt.Scoring.String(), Humans: alt.Tested,
			WinningRate: stat(alt.WinningRate), AdvantageProbability: stat(alt.AdvantageProbability), Passed: alt.Passed}
		out.Variants = append(out.Variants, row)
	}
	return out, nil
}

// scored is one answer set's final score, pass and gate.
type scored struct {
	ok         bool
	score      float64
	hasScore   bool
	pass       *bool
	gateFailed bool
}

func score(def *rubric.Definition, m map[string]string) (scored, error) {
	if m == nil {
		return scored{}, nil
	}
	a := make(rubric.Answers, len(m))
	for k, v := range m {
		a[k] = rubric.Value(v)
	}
	// Scored without the item's facts, as gold is.
	r, err := scoring.Score(def, a, rubric.Facts{})
	if err != nil {
		return scored{}, err
	}
	s := scored{ok: true, pass: r.Pass, gateFailed: r.SafetyGateFailed}
	if r.Score != nil {
		s.score, s.hasScore = *r.Score, true
	}
	return s, nil
}

func scores(in Input) ([]ScoreRow, error) {
	nv := len(in.Variants)
	gold := make([]scored, len(in.Items))
	vs := make([][]scored, nv)
	for v := range vs {
		vs[v] = make([]scored, len(in.Items))
	}
	for i, item := range in.Items {
		var err error
		if gold[i], err = score(in.Def, item.Gold); err != nil {
			return nil, err
		}
		for v := range nv {
			if vs[v][i], err = score(in.Def, item.Variants[v]); err != nil {
				return nil, err
			}
		}
	}
	mae := func(v int, w []int) agreement.Estimate {
		var sum float64
		n := 0
		for i, g := range gold {
			if x := vs[v][i]; g.hasScore && x.hasScore && w[i] > 0 {
				sum += float64(w[i]) * math.Abs(x.score-g.score)
				n += w[i]
			}
		}
		if n == 0 {
			return agreement.Estimate{Reason: "no item has a final score from both gold and the variant"}
		}
		return agreement.Estimate{Value: sum / float64(n), Defined: true}
	}
	ones := make([]int, len(in.Items))
	for i := range ones {
		ones[i] = 1
	}
	best := -1
	for v := range nv {
		if e := mae(v, ones); e.Defined && (best < 0 || e.Value < mae(best, ones).Value) {
			best = v
		}
	}
	mm := newMemo(nv, mae)
	var stats []func([]int) agreement.Estimate
	for v := range nv {
		stats = append(stats, func(w []int) agreement.Estimate { return mm.at(v, w) })
	}
	for v := range nv {
		stats = append(stats, func(w []int) agreement.Estimate {
			if best < 0 {
				return agreement.Estimate{Reason: "no variant has a final score"}
			}
			a, b := mm.at(v, w), mm.at(best, w)
			if !a.Defined || !b.Defined {
				return agreement.Estimate{Reason: "undefined on this resample"}
			}
			return agreement.Estimate{Value: a.Value - b.Value, Defined: true}
		})
	}
	est, err := bootstrapped(in, stats)
	if err != nil {
		return nil, err
	}
	hasGate := len(in.Def.Scoring.Gate) > 0
	var rows []ScoreRow
	for v := range nv {
		row := ScoreRow{Variant: in.Variants[v], MAE: stat(est[v]), MAEDiff: stat(est[nv+v]), Gate: Gate{Misses: []int64{}}}
		var agree, both, failedCaught, passedKept, goldPassed int
		for i, g := range gold {
			x := vs[v][i]
			if !g.ok || !x.ok {
				continue
			}
			if g.pass != nil && x.pass != nil {
				both++
				if *g.pass == *x.pass {
					agree++
				}
			}
			if !hasGate {
				continue
			}
			if g.gateFailed {
				row.Gate.GoldFailed++
				if x.gateFailed {
					failedCaught++
				} else {
					row.Gate.Misses = append(row.Gate.Misses, in.Items[i].ID)
				}
			} else {
				goldPassed++
				if !x.gateFailed {
					passedKept++
				}
			}
		}
		row.PassAgreement = ratio(agree, both, "the rubric gives no pass/fail, or no item has both")
		if hasGate {
			row.Gate.Sensitivity = ratio(failedCaught, row.Gate.GoldFailed, "gold fails no item on safety")
			row.Gate.Specificity = ratio(passedKept, goldPassed, "gold passes no item on safety")
		} else {
			row.Gate.Sensitivity, row.Gate.Specificity = Stat{Reason: ReasonNoGate}, Stat{Reason: ReasonNoGate}
		}
		slices.Sort(row.Gate.Misses)
		if v < len(in.Usage) && in.Usage[v].Items > 0 {
			u := in.Usage[v]
			c := u.CostUSD / float64(u.Items)
			row.CostPerItem = &c
			row.LatencyMS = u.LatencyMS / float64(u.Items)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func ratio(num, den int, reason string) Stat {
	if den == 0 {
		return Stat{Reason: reason}
	}
	x := float64(num) / float64(den)
	return Stat{Value: &x}
}

// Variant names one variant: a judge and its prompt version for the
// project's rubric (1 is the rubric's own prompt).
type Variant struct {
	Judge   string
	Version int
}

// String is how a variant is written and printed: the judge's name for
// version 1, name@N for a later version.
func (v Variant) String() string {
	if v.Version > 1 {
		return fmt.Sprintf("%s@%d", v.Judge, v.Version)
	}
	return v.Judge
}

// ParseVariant reads a variant written as String writes it. A name whose
// part after the last @ is not a number is a judge's name as a whole
// (judge names may hold @); a version below 1 is an error naming the
// spec.
func ParseVariant(spec string) (Variant, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Variant{}, errors.New("a variant needs a judge's name")
	}
	v := Variant{Judge: spec, Version: 1}
	if i := strings.LastIndex(spec, "@"); i > 0 {
		if n, err := strconv.Atoi(spec[i+1:]); err == nil {
			if n < 1 {
				return Variant{}, fmt.Errorf("%q: a prompt version is 1 or more", spec)
			}
			v = Variant{Judge: spec[:i], Version: n}
		}
	}
	return v, nil
}
