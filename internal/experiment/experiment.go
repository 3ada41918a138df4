// Package experiment compares judge variants — several judges, or one
// judge with several prompt versions — on one frozen set of items that
// have gold answers and at least two people's answers: per rubric item,
// kappa with gold, the alternative annotator test against the people and
// each variant's kappa against the best one's, with simultaneous paired
// bootstrap intervals and a verdict (see versusBest); over the final
// score, its mean absolute error from gold (against the best likewise),
// pass/fail agreement,
// the safety gate's sensitivity and specificity against gold (the misses
// first), and cost and latency per item; and each variant's kappa with
// each person. It is pure: the store reads the answers, the CLI prints the
// result.
package experiment

import (
	"encoding/binary"
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
	// Bootstrap sets the paired intervals; Replicates 0 leaves them out.
	Bootstrap agreement.Bootstrap
}

// Stat is a figure with its interval, as JSON: Value is null when the
// figure is undefined, and Reason says why. Method names the interval
// when it is not the figure's own bootstrap interval: a difference from
// the best carries comparisonMethod's name for its simultaneous interval.
type Stat struct {
	Value  *float64 `json:"value"`
	Lower  *float64 `json:"lower,omitempty"`
	Upper  *float64 `json:"upper,omitempty"`
	Method string   `json:"method,omitempty"`
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
// gold minus the best variant's, with the simultaneous interval of
// versusBest (0, without an interval, for the best itself); VersusBest is
// the verdict that interval gives, one of the Verdict constants.
type ItemRow struct {
	Variant    string  `json:"variant"`
	Answered   int     `json:"answered"`
	KappaGold  Stat    `json:"kappa_gold"`
	KappaDiff  Stat    `json:"kappa_diff_from_best"`
	VersusBest string  `json:"verdict_vs_best"`
	AltTest    AltTest `json:"alt_test"`
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

// AltTest is the alt-test's verdict for a variant on a rubric item. The
// winning rate and advantage probability have no interval, so they are
// written as agreement.AltFigure is: {"value": v} or {"value": null,
// "reason": why}. Result, FewHumans and Reason are agreement.AltResult's
// Verdict, FewHumans and Reason.
type AltTest struct {
	Epsilon              float64 `json:"epsilon"`
	EpsilonUnusual       bool    `json:"epsilon_unusual"`
	Scoring              string  `json:"scoring"`
	Humans               int     `json:"humans"`
	WinningRate          Stat    `json:"winning_rate"`
	AdvantageProbability Stat    `json:"advantage_probability"`
	Result               string  `json:"result"`
	Passed               bool    `json:"passed"`
	FewHumans            bool    `json:"few_annotators"`
	Reason               string  `json:"reason,omitempty"`
	// MinItems is the least number of shared items an annotator is
	// tested on; Progress, when Result is cannot_tell, how far the data
	// is from a verdict (agreement.AltProgress).
	MinItems int    `json:"min_items"`
	Progress string `json:"progress,omitempty"`
	// Items says which items the test was run on: "shared", every item
	// the variant and two people answered, as the agreement report runs
	// it. Run fills in only Scoring, the rubric item's default; the test
	// is report.ExperimentAltTests', so that the experiment page, its API
	// and the CLI give the report's answer and the work is done once.
	Items string `json:"items"`
}

// ScoreRow is one variant's final scores against gold's. MAEDiff is its
// mean absolute error minus the best (lowest) one's, with its interval
// and verdict VersusBest as KappaDiff's.
type ScoreRow struct {
	Variant       string  `json:"variant"`
	Gate          Gate    `json:"safety_gate"`
	MAE           Stat    `json:"mae"`
	MAEDiff       Stat    `json:"mae_diff_from_best"`
	VersusBest    string  `json:"verdict_vs_best"`
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
	// Each rubric item, and the final score, is a part: what is computed
	// once (the alt-test, kappa with each person, the safety gate) and a
	// group of statistics the bootstrap resamples. Parts are independent:
	// one per core at a time.
	nk := len(in.Def.Items)
	workers := runtime.GOMAXPROCS(0)
	codes, err := categories(in, workers)
	if err != nil {
		return nil, err
	}
	parts := make([]part, nk+1)
	errs := make([]error, nk+1)
	each(nk+1, workers, func(k int) {
		if k < nk {
			parts[k], errs[k] = rubricItem(in, &in.Def.Items[k], codes[k])
		} else {
			parts[k], errs[k] = scores(in)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	groups := make([]agreement.ItemStats, len(parts))
	for k, p := range parts {
		groups[k] = p.stats
	}
	est, err := bootstrapped(in, workers, groups)
	if err != nil {
		return nil, err
	}
	// The differences from the best need the replicates of every variant
	// together, which the figures' own intervals do not give: a second
	// pass over the same resamples collects them.
	var reps [][][]float64
	if in.Bootstrap.Replicates > 0 {
		if _, reps, err = agreement.BootstrapItemReplicates(len(in.Items), in.Bootstrap, workers, groups...); err != nil {
			return nil, err
		}
	}
	replicates := func(k int) [][]float64 {
		if reps == nil {
			return nil
		}
		return reps[k]
	}
	res := &Result{Items: len(in.Items), Variants: in.Variants, RubricItems: make([]RubricItem, nk)}
	for k := range nk {
		res.RubricItems[k] = parts[k].item
		diffs, verdicts := versusBest(est[k], replicates(k), parts[k].best, false, in.Bootstrap.Level, len(in.Items),
			"no variant has a defined kappa with gold", "the variant's kappa with gold is undefined")
		for v := range res.RubricItems[k].Variants {
			row := &res.RubricItems[k].Variants[v]
			row.KappaGold, row.KappaDiff, row.VersusBest = stat(est[k][v]), diffs[v], verdicts[v]
		}
	}
	res.Scores = parts[nk].scores
	diffs, verdicts := versusBest(est[nk], replicates(nk), parts[nk].best, true, in.Bootstrap.Level, len(in.Items),
		"no variant has a final score", "the variant has no final score on an item gold scores")
	for v := range res.Scores {
		res.Scores[v].MAE, res.Scores[v].MAEDiff, res.Scores[v].VersusBest = stat(est[nk][v]), diffs[v], verdicts[v]
	}
	return res, nil
}

// part is a rubric item's or the final score's share of an experiment:
// its figures but the resampled ones, which stats computes (variant v's
// figure is statistic v), and the best variant on the data (-1 for none).
type part struct {
	item   RubricItem
	scores []ScoreRow
	stats  agreement.ItemStats
	best   int
}

// each calls f(0) … f(n-1) on up to workers goroutines.
func each(n, workers int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for k := range next {
				f(k)
			}
		})
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
}

// bootstrapped evaluates the groups of statistics on the items, with
// paired intervals (the same resamples for every group) when the input
// asks for them.
func bootstrapped(in Input, workers int, groups []agreement.ItemStats) ([][]agreement.Estimate, error) {
	if in.Bootstrap.Replicates == 0 {
		ones := make([]int, len(in.Items))
		for i := range ones {
			ones[i] = 1
		}
		out := make([][]agreement.Estimate, len(groups))
		for g, st := range groups {
			out[g] = make([]agreement.Estimate, st.N)
			st.Eval(ones, out[g])
		}
		return out, nil
	}
	return agreement.BootstrapItemGroups(len(in.Items), in.Bootstrap, workers, groups...)
}

// kappaGold computes every variant's kappa with gold on a rubric item,
// resample after resample. Items that answered alike — gold and every
// variant in the same categories — fall in the same contingency cells,
// so a resample's tables are filled from the weight of each such tuple
// of answers rather than item by item: a few hundred tuples instead of
// thousands of items. Counts are integers, so the order they are added
// in changes nothing.
type kappaGold struct {
	q, nv  int
	tuple  []int // per item, its tuple of answers
	cells  []int // per tuple and variant, the cell gold·q+variant; -1 when either has no answer
	weight []int // per tuple, on the resample being evaluated
	counts []int // a q×q table
}

func newKappaGold(q int, gold []int, vals [][]int) *kappaGold {
	nv := len(vals)
	k := &kappaGold{q: q, nv: nv, tuple: make([]int, len(gold)), counts: make([]int, q*q)}
	seen := map[string]int{}
	key := make([]byte, 0, 2*(nv+1))
	for i, g := range gold {
		key = key[:0]
		key = binary.LittleEndian.AppendUint16(key, uint16(g+1))
		for v := range nv {
			key = binary.LittleEndian.AppendUint16(key, uint16(vals[v][i]+1))
		}
		t, ok := seen[string(key)]
		if !ok {
			t = len(seen)
			seen[string(key)] = t
			for v := range nv {
				c := -1
				if x := vals[v][i]; g >= 0 && x >= 0 {
					c = g*q + x
				}
				k.cells = append(k.cells, c)
			}
		}
		k.tuple[i] = t
	}
	k.weight = make([]int, len(seen))
	return k
}

func (k *kappaGold) eval(w []int, out []agreement.Estimate) {
	clear(k.weight)
	for i, t := range k.tuple {
		k.weight[t] += w[i]
	}
	for v := range k.nv {
		clear(k.counts)
		for t, n := range k.weight {
			if c := k.cells[t*k.nv+v]; c >= 0 {
				k.counts[c] += n
			}
		}
		out[v] = agreement.CohenKappaCounts(k.counts, k.q)
	}
}

// itemCodes are the answers to one rubric item as category indices on
// its scale: gold's, each variant's and each person's per item, -1 for
// none or an answer off the scale (ERROR).
type itemCodes struct {
	scale  *agreement.Scale
	gold   []int
	vals   [][]int // by variant
	people [][]int // by person
}

// categories reads every answer of the input once, all rubric items of an
// answer set together (a pass per rubric item would walk every answer
// set's map a dozen times), on up to workers goroutines.
func categories(in Input, workers int) ([]itemCodes, error) {
	n, nk := len(in.Items), len(in.Def.Items)
	codes := make([]itemCodes, nk)
	keys := make([]string, nk)
	for k := range in.Def.Items {
		it := &in.Def.Items[k]
		keys[k] = it.Key
		var labels []string
		for _, v := range in.Def.Allowed(it) {
			labels = append(labels, string(v))
		}
		scale, err := agreement.NewScale(labels...)
		if err != nil {
			return nil, fmt.Errorf("experiment: %s: %w", it.Key, err)
		}
		c := itemCodes{scale: scale, gold: make([]int, n), vals: make([][]int, len(in.Variants)), people: make([][]int, len(in.Humans))}
		for v := range c.vals {
			c.vals[v] = make([]int, n)
		}
		for h := range c.people {
			c.people[h] = make([]int, n)
		}
		codes[k] = c
	}
	fill := func(m map[string]string, i int, at func(c *itemCodes) []int) {
		for k := range codes {
			x := -1
			if v, ok := m[keys[k]]; ok {
				if c, ok := codes[k].scale.Index(v); ok {
					x = c
				}
			}
			at(&codes[k])[i] = x
		}
	}
	chunks := max(1, min(n/256, 4*workers))
	each(chunks, workers, func(chunk int) {
		for i := chunk * n / chunks; i < (chunk+1)*n/chunks; i++ {
			item := &in.Items[i]
			fill(item.Gold, i, func(c *itemCodes) []int { return c.gold })
			for v, m := range item.Variants {
				fill(m, i, func(c *itemCodes) []int { return c.vals[v] })
			}
			for h, m := range item.Humans {
				fill(m, i, func(c *itemCodes) []int { return c.people[h] })
			}
		}
	})
	return codes, nil
}

func rubricItem(in Input, it *rubric.Item, codes itemCodes) (part, error) {
	nv := len(in.Variants)
	scale, gold, vals, people := codes.scale, codes.gold, codes.vals, codes.people
	q := scale.Len()
	kg := newKappaGold(q, gold, vals)
	ones := make([]int, len(in.Items))
	for i := range ones {
		ones[i] = 1
	}
	full := make([]agreement.Estimate, nv)
	kg.eval(ones, full)
	best := bestOf(full, false)
	out := RubricItem{Key: it.Key}
	if best >= 0 {
		out.Best = in.Variants[best]
	}
	altScoring := agreement.DefaultAltScoring(scale)
	counts := make([]int, q*q)
	for v := range nv {
		row := ItemRow{Variant: in.Variants[v]}
		for _, x := range vals[v] {
			if x >= 0 {
				row.Answered++
			}
		}
		for h, name := range in.Humans {
			clear(counts)
			n := 0
			for i, p := range people[h] {
				if x := vals[v][i]; p >= 0 && x >= 0 {
					counts[p*q+x]++
					n++
				}
			}
			row.KappaPeople = append(row.KappaPeople, PersonKappa{Person: name, Items: n,
				Kappa: stat(agreement.CohenKappaCounts(counts, q))})
		}
		// The test itself is the agreement report's, on every shared
		// item (report.ExperimentAltTests); the frozen set alone would
		// answer the same question on fewer items, and differently.
		row.AltTest = AltTest{Scoring: altScoring.String()}
		out.Variants = append(out.Variants, row)
	}
	return part{item: out, stats: agreement.ItemStats{N: nv, Eval: kg.eval}, best: best}, nil
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

func scores(in Input) (part, error) {
	nv := len(in.Variants)
	gold := make([]scored, len(in.Items))
	vs := make([][]scored, nv)
	for v := range vs {
		vs[v] = make([]scored, len(in.Items))
	}
	// A score depends only on the values of the rubric's items, and most
	// answer sets repeat another's: each distinct one is scored once.
	seen := map[string]scored{}
	var key []byte
	scoreOnce := func(m map[string]string) (scored, error) {
		if m == nil {
			return scored{}, nil
		}
		key = key[:0]
		for _, it := range in.Def.Items {
			v, ok := m[it.Key]
			if !ok {
				key = append(key, 0)
				continue
			}
			key = append(key, 1)
			key = binary.AppendUvarint(key, uint64(len(v)))
			key = append(key, v...)
		}
		if s, ok := seen[string(key)]; ok {
			return s, nil
		}
		s, err := score(in.Def, m)
		if err == nil {
			seen[string(key)] = s
		}
		return s, err
	}
	for i, item := range in.Items {
		var err error
		if gold[i], err = scoreOnce(item.Gold); err != nil {
			return part{}, err
		}
		for v := range nv {
			if vs[v][i], err = scoreOnce(item.Variants[v]); err != nil {
				return part{}, err
			}
		}
	}
	ma := newMAE(gold, vs)
	ones := make([]int, len(in.Items))
	for i := range ones {
		ones[i] = 1
	}
	full := make([]agreement.Estimate, nv)
	ma.eval(ones, full)
	best := bestOf(full, true)
	hasGate := len(in.Def.Scoring.Gate) > 0
	var rows []ScoreRow
	for v := range nv {
		row := ScoreRow{Variant: in.Variants[v], Gate: Gate{Misses: []int64{}}}
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
	return part{scores: rows, stats: agreement.ItemStats{N: nv, Eval: ma.eval}, best: best}, nil
}

// mae computes every variant's mean absolute error from gold's final
// score, resample after resample. Each variant's sum runs over the items
// in their order, as a floating-point sum must to give the same figure
// every time.
type mae struct {
	nv   int
	at   []int     // items where gold has a score
	errs []float64 // per such item and variant, the absolute error; NaN when the variant has no score
	sum  []float64
	n    []int
}

func newMAE(gold []scored, vs [][]scored) *mae {
	nv := len(vs)
	m := &mae{nv: nv, sum: make([]float64, nv), n: make([]int, nv)}
	for i, g := range gold {
		if !g.hasScore {
			continue
		}
		m.at = append(m.at, i)
		for v := range nv {
			e := math.NaN()
			if x := vs[v][i]; x.hasScore {
				e = math.Abs(x.score - g.score)
			}
			m.errs = append(m.errs, e)
		}
	}
	return m
}

func (m *mae) eval(w []int, out []agreement.Estimate) {
	clear(m.sum)
	clear(m.n)
	for j, i := range m.at {
		if w[i] == 0 {
			continue
		}
		for v, e := range m.errs[j*m.nv : (j+1)*m.nv] {
			if !math.IsNaN(e) {
				m.sum[v] += float64(w[i]) * e
				m.n[v] += w[i]
			}
		}
	}
	for v := range m.nv {
		if m.n[v] == 0 {
			out[v] = agreement.Estimate{Reason: "no item has a final score from both gold and the variant"}
		} else {
			out[v] = agreement.Estimate{Value: m.sum[v] / float64(m.n[v]), Defined: true}
		}
	}
}

// bestOf is the variant with the highest defined figure (the lowest when
// lowerBetter), the first of equals, or -1 when none is defined.
func bestOf(full []agreement.Estimate, lowerBetter bool) int {
	best := -1
	for v, e := range full {
		if e.Defined && (best < 0 || (!lowerBetter && e.Value > full[best].Value) || (lowerBetter && e.Value < full[best].Value)) {
			best = v
		}
	}
	return best
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
