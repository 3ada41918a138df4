package agreement

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// simFull runs the whole coverage grid of TestIntervalCoverage; by
// default only its hardest cells run.
var simFull = flag.Bool("sim", false, "run the full coverage grid of the bootstrap intervals")

// simDatasets and simReps size each cell of the -sim grid; smaller values
// screen the grid quickly, and the floor widens with fewer data sets.
var (
	simDatasets = flag.Int("sim.datasets", 1000, "simulated data sets per cell of the -sim grid")
	simReps     = flag.Int("sim.reps", 1000, "bootstrap replicates per data set of the -sim grid")
)

// coverageCase is one cell of the coverage grid: a panel of raters who
// each give an item's true answer with some accuracy, on a scale where
// the true answers are balanced or 90 % one answer.
type coverageCase struct {
	likert   bool // 1–5 with quadratic weights; else YES/NO, nominal
	close    bool // raters who rarely disagree
	skewed   bool // 90 % of true answers are one answer; else balanced
	raters   int
	items    int
	datasets int
	reps     int
}

func (c coverageCase) String() string {
	scale, bal, raters := "yesno", "balanced", "apart"
	if c.likert {
		scale = "likert"
	}
	if c.close {
		raters = "close"
	}
	if c.skewed {
		bal = "90%"
	}
	return fmt.Sprintf("%s/%s/%s/raters=%d/n=%d", scale, bal, raters, c.raters, c.items)
}

// truth returns the distribution of the true answer and, per true answer,
// the distribution of one rater's answer.
func (c coverageCase) model() (truth []float64, answer [][]float64) {
	if !c.likert {
		p := 0.5
		if c.skewed {
			p = 0.9
		}
		acc := 0.85
		if c.close {
			acc = 0.98
		}
		return []float64{p, 1 - p}, [][]float64{{acc, 1 - acc}, {1 - acc, acc}}
	}
	truth = []float64{0.2, 0.2, 0.2, 0.2, 0.2}
	if c.skewed {
		truth = []float64{0.025, 0.025, 0.025, 0.9, 0.025}
	}
	answer = make([][]float64, 5)
	for t := range 5 {
		answer[t] = make([]float64, 5)
		acc := 0.6
		if c.close {
			acc = 0.95
		}
		answer[t][t] = acc
		switch t {
		case 0:
			answer[t][1] = 1 - acc
		case 4:
			answer[t][3] = 1 - acc
		default:
			answer[t][t-1], answer[t][t+1] = (1-acc)/2, (1-acc)/2
		}
	}
	return truth, answer
}

func (c coverageCase) scale(t testing.TB) *Scale {
	if c.likert {
		return likert(t)
	}
	return mustScale(t, "YES", "NO")
}

// The statistics the report shows an interval for, on each kind of scale,
// with the Reach the report gives each.
func (c coverageCase) unitStats() ([]string, []Reach, []func(Units) Estimate) {
	if c.likert {
		return []string{"agreement", "alpha", "fleiss", "ac1", "ac2"}, []Reach{{}, AlphaReach(Ordinal), ChanceReach, ChanceReach, AC2Reach(QuadraticWeights)}, []func(Units) Estimate{
			PercentAgreement,
			func(u Units) Estimate { return KrippendorffAlpha(u, Ordinal) },
			func(u Units) Estimate { return FleissKappa(u, NoWeights) },
			GwetAC1,
			func(u Units) Estimate { return GwetAC2(u, QuadraticWeights) },
		}
	}
	return []string{"agreement", "alpha", "fleiss", "ac1"}, []Reach{{}, AlphaReach(Nominal), ChanceReach, ChanceReach}, []func(Units) Estimate{
		PercentAgreement,
		func(u Units) Estimate { return KrippendorffAlpha(u, Nominal) },
		func(u Units) Estimate { return FleissKappa(u, NoWeights) },
		GwetAC1,
	}
}

func (c coverageCase) pairStats() ([]string, []Reach, []func(Contingency) Estimate) {
	if c.likert {
		return []string{"pair agreement", "cohen kappa", "spearman"}, []Reach{{}, KappaReach(QuadraticWeights), {}}, []func(Contingency) Estimate{
			func(c Contingency) Estimate { return PairAgreement(c, NoWeights) },
			func(c Contingency) Estimate { return CohenKappa(c, QuadraticWeights) },
			Spearman,
		}
	}
	return []string{"pair agreement", "cohen kappa"}, []Reach{{}, KappaReach(NoWeights)}, []func(Contingency) Estimate{
		func(c Contingency) Estimate { return PairAgreement(c, NoWeights) },
		func(c Contingency) Estimate { return CohenKappa(c, NoWeights) },
	}
}

// population returns the units and the first two raters' table of the
// model itself (every pattern weighted by its probability times a large
// number of items), whose figures are the true values an interval is to
// cover.
func (c coverageCase) population(t testing.TB) (Units, Contingency) {
	truth, answer := c.model()
	q := len(truth)
	const big = 1e8
	patterns := map[string]float64{}
	counts := map[string][]int{}
	table := make([][]float64, q)
	for k := range table {
		table[k] = make([]float64, q)
	}
	tuple := make([]int, c.raters)
	var walk func(r int, truthAt int, p float64)
	walk = func(r, tr int, p float64) {
		if r == c.raters {
			cnt := make([]int, q)
			for _, a := range tuple {
				cnt[a]++
			}
			key := fmt.Sprint(cnt)
			patterns[key] += p
			counts[key] = cnt
			table[tuple[0]][tuple[1]] += p
			return
		}
		for a := range q {
			if answer[tr][a] > 0 {
				tuple[r] = a
				walk(r+1, tr, p*answer[tr][a])
			}
		}
	}
	for tr, p := range truth {
		walk(0, tr, p)
	}
	var list []Unit
	for key, p := range patterns {
		list = append(list, Unit{Counts: counts[key], Weight: int(math.Round(p * big))})
	}
	u, err := NewUnits(c.scale(t), list)
	if err != nil {
		t.Fatal(err)
	}
	cells := make([][]int, q)
	for k := range cells {
		cells[k] = make([]int, q)
		for l := range cells[k] {
			cells[k][l] = int(math.Round(table[k][l] * big))
		}
	}
	ct, err := NewContingency(c.scale(t), cells)
	if err != nil {
		t.Fatal(err)
	}
	return u, ct
}

// draw returns one simulated data set of the case.
func (c coverageCase) draw(t testing.TB, rng *rand.Rand) (Units, Contingency) {
	truth, answer := c.model()
	q := len(truth)
	pick := func(p []float64) int {
		x := rng.Float64()
		for k, v := range p {
			if x < v {
				return k
			}
			x -= v
		}
		return len(p) - 1
	}
	m := make(matrix, c.raters)
	for r := range m {
		m[r] = make([]int, c.items)
	}
	for i := range c.items {
		tr := pick(truth)
		for r := range m {
			m[r][i] = pick(answer[tr])
		}
	}
	_ = q
	s := c.scale(t)
	return itemUnits(t, s, m), pairTable(t, s, m[0], m[1])
}

// coverage returns, per statistic, the share of data sets whose interval
// holds the true value, over the data sets where the statistic has one,
// how many had one, and how many had theirs withheld by the statistic's
// Reach.
func (c coverageCase) coverage(t testing.TB) (names []string, cover []float64, with, withheld []int) {
	pu, pc := c.population(t)
	un, ur, us := c.unitStats()
	pn, pr, ps := c.pairStats()
	names = append(un, pn...)
	truth := make([]float64, 0, len(names))
	for _, f := range us {
		truth = append(truth, f(pu).Value)
	}
	for _, f := range ps {
		truth = append(truth, f(pc).Value)
	}
	hits := make([]int, len(names))
	with = make([]int, len(names))
	withheld = make([]int, len(names))
	rng := rand.New(rand.NewPCG(uint64(c.items), uint64(c.raters)*16+boolInt(c.likert)*4+boolInt(c.skewed)*2+boolInt(c.close)))
	for d := range c.datasets {
		u, ct := c.draw(t, rng)
		b := Bootstrap{Replicates: c.reps, Level: 0.95, Seed: uint64(d) + 1}
		ue, err := BootstrapUnits(u, b, us...)
		if err != nil {
			t.Fatal(err)
		}
		pe, err := BootstrapPairs(ct, b, ps...)
		if err != nil {
			t.Fatal(err)
		}
		WithholdUnits(ue, u, ur...)
		WithholdPairs(pe, ct, pr...)
		for i, e := range append(ue, pe...) {
			if e.NoCI != nil && e.NoCI.Reason == ReasonFewInformative {
				withheld[i]++
			}
			if e.CI == nil {
				continue
			}
			with[i]++
			if e.CI.Lower <= truth[i] && truth[i] <= e.CI.Upper {
				hits[i]++
			}
		}
	}
	cover = make([]float64, len(names))
	for i := range names {
		if with[i] > 0 {
			cover[i] = float64(hits[i]) / float64(with[i])
		}
	}
	return names, cover, with, withheld
}

func boolInt(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestIntervalCoverage holds the coverage of the intervals of every
// agreement figure the report prints, at a nominal 0.95, over the data
// sets where the figure's Reach lets it show one: in simulated data sets
// from a known panel, the share of intervals shown that hold the panel's
// true figure must not be below 0.93 by more than two standard errors of
// a simulated share (a seeded simulation, so the share is the same on
// every run). A rule that withheld every interval would pass that, so the
// share of data sets whose interval the Reach withholds is held too: at
// most 5 % from 100 items, in every cell (every figure there rests on
// enough items), and at 30 items at most 60 % (where 1–5 with 90 % one
// answer rarely holds the distant items a weighted figure rests on) —
// and whatever the cell, at least half the data sets must show an
// interval, counting those every resample withholds, except at 30
// items with one answer nine in ten.
//
// By default it runs the cells where intervals failed worst: 30 items,
// 90 % YES, two raters who rarely disagree (percentile intervals
// 0.67–0.70); AC2 of two raters on balanced 1–5 at 30 items (BCa alone
// 0.877); and quadratic kappa on 1–5 with 90 % one answer at 30 items,
// two raters who often disagree (every interval tried 0.85–0.90 before
// the Reach). -sim runs the full grid of 30, 100 and 400 items, balanced
// and 90 % one answer, two and three raters who rarely or often
// disagree, YES/NO and 1–5, with -sim.datasets data sets (1,000) of
// B = -sim.reps (1,000) each.
//
// Measured over all 48 cells (300 data sets of 500 replicates, floor
// 0.900; the 1,000 × 1,000 grid has not been run with the Reach): every
// figure shown was held at least 0.923 of the time (Fleiss' kappa of
// three raters, YES/NO, 90 % YES, 30 items; AC2 of three raters, balanced
// 1–5, 30 items), quadratic kappa on 1–5 with 90 % one answer at 30 items
// 0.959 and 0.976 (0.887 and 0.883 before the Reach). Withheld: nothing
// on balanced scales or at 400 items; at 100 items at most 11 of 300 (AC2,
// 1–5, 90 % one answer, two raters who rarely disagree); at 30 items with
// one answer nine in ten up to 8 of 300 on YES/NO, and on 1–5 14–24 % of
// kappa's and alpha's intervals and 46–53 % of AC2's.
func TestIntervalCoverage(t *testing.T) {
	cases := []coverageCase{
		{skewed: true, close: true, raters: 2, items: 30, datasets: 200, reps: 250},
		{likert: true, raters: 2, items: 30, datasets: 300, reps: 500},
		{likert: true, skewed: true, raters: 2, items: 30, datasets: 300, reps: 500},
	}
	if *simFull {
		cases = nil
		for _, likert := range []bool{false, true} {
			for _, skewed := range []bool{false, true} {
				for _, close := range []bool{false, true} {
					for _, raters := range []int{2, 3} {
						for _, n := range []int{30, 100, 400} {
							cases = append(cases, coverageCase{likert: likert, skewed: skewed, close: close, raters: raters, items: n, datasets: *simDatasets, reps: *simReps})
						}
					}
				}
			}
		}
	} else {
		t.Parallel()
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			names, cover, with, withheld := c.coverage(t)
			floor := 0.93 - 2*math.Sqrt(0.93*0.07/float64(c.datasets))
			mostWithheld := 0.05
			if c.items < 100 {
				mostWithheld = 0.60
			}
			var b strings.Builder
			for i, n := range names {
				fmt.Fprintf(&b, " %s=%.3f(%d,-%d)", n, cover[i], with[i], withheld[i])
				if share := float64(withheld[i]) / float64(c.datasets); share > mostWithheld {
					t.Errorf("%s: %d of %d data sets have their interval withheld, want at most %.0f %%", n, withheld[i], c.datasets, 100*mostWithheld)
				}
				if with[i] < c.datasets/2 && !(c.skewed && c.items < 100) {
					t.Errorf("%s: only %d of %d data sets have an interval", n, with[i], c.datasets)
				}
				if cover[i] < floor {
					t.Errorf("%s: coverage %.3f over %d intervals, want at least %.3f", n, cover[i], with[i], floor)
				}
			}
			t.Logf("%v:%s", c, b.String())
		})
	}
}

// TestItemsDifferenceCoverage holds the coverage of BootstrapItems'
// interval of a paired difference, the experiment's "difference from the
// best": two variants right on an item with probabilities 0.9 and 0.8,
// their errors correlated (both right on 75 % of items), n items. The
// interval must hold the true difference, −0.1, in all but a share of
// data sets within two standard errors of 0.07, at 30 and 100 items.
func TestItemsDifferenceCoverage(t *testing.T) {
	t.Parallel()
	// P(both right) 0.75, P(only a) 0.15, P(only b) 0.05, P(neither) 0.05.
	const truth = -0.1
	const datasets = 300
	for _, n := range []int{30, 100} {
		rng := rand.New(rand.NewPCG(uint64(n), 99))
		hits := 0
		a, b := make([]float64, n), make([]float64, n)
		for d := range datasets {
			for i := range n {
				switch x := rng.Float64(); {
				case x < 0.75:
					a[i], b[i] = 1, 1
				case x < 0.90:
					a[i], b[i] = 1, 0
				case x < 0.95:
					a[i], b[i] = 0, 1
				default:
					a[i], b[i] = 0, 0
				}
			}
			diff := func(w []int) Estimate {
				var s, k float64
				for i, c := range w {
					s += float64(c) * (b[i] - a[i])
					k += float64(c)
				}
				return Estimate{Value: s / k, Defined: k > 0}
			}
			es, err := BootstrapItems(n, Bootstrap{Replicates: 400, Level: 0.95, Seed: uint64(d)}, diff)
			if err != nil {
				t.Fatal(err)
			}
			if ci := es[0].CI; ci != nil && ci.Lower <= truth && truth <= ci.Upper {
				hits++
			}
		}
		cover := float64(hits) / datasets
		floor := 0.93 - 2*math.Sqrt(0.93*0.07/datasets)
		t.Logf("n=%d: coverage %.3f", n, cover)
		if cover < floor {
			t.Errorf("n=%d: coverage %.3f, want at least %.3f", n, cover, floor)
		}
	}
}
