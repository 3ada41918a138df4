package calibration

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sentinelSim runs the heavier grids of the sentinel simulations (more
// series, more calibration-set sizes and accuracies): go test
// ./internal/calibration -run Sentinel -sentinel.sim.
var sentinelSim = flag.Bool("sentinel.sim", false, "run the sentinel simulations' heavier grids")

// sentinelRubricItems is the rubric items compared per calibration item in
// the simulations (a YES / NO / NA rubric of twelve criteria).
const sentinelRubricItems = 12

// sentinelJudge is a simulated judge: how it errs on the rubric items of
// one calibration item in one run.
type sentinelJudge struct {
	name string
	// matched draws the rubric items matched on one calibration item of
	// one run, given the item's accuracy in that run's model and the
	// item's own fixed difficulty (a shift, in probability).
	matched func(r *rand.Rand, p, shift float64) int
	// difficulty draws an item's fixed shift, once per series.
	difficulty func(r *rand.Rand) float64
}

func binomial(r *rand.Rand, n int, p float64) int {
	k := 0
	for range n {
		if r.Float64() < p {
			k++
		}
	}
	return k
}

func clamp01(p float64) float64 { return min(1, max(0, p)) }

// The judges of the simulations: independent errors (every rubric item a
// trial of its own, the old test's assumption), whole conversations
// misread (the item all right or all wrong together), and an item-level
// random effect (each item its own difficulty, fixed across runs, and a
// run-to-run wobble on each item shared by its rubric items).
var sentinelJudges = []sentinelJudge{
	{"independent", func(r *rand.Rand, p, _ float64) int { return binomial(r, sentinelRubricItems, p) },
		func(*rand.Rand) float64 { return 0 }},
	{"whole conversation", func(r *rand.Rand, p, _ float64) int {
		if r.Float64() < p {
			return sentinelRubricItems
		}
		return 0
	}, func(*rand.Rand) float64 { return 0 }},
	{"item effect", func(r *rand.Rand, p, shift float64) int {
		q := clamp01(p + shift + 0.15*(r.Float64()-0.5)*2)
		return binomial(r, sentinelRubricItems, q)
	}, func(r *rand.Rand) float64 { return 0.16 * (r.Float64() - 0.5) }},
}

// sentinelSeries simulates one judge's sentinel tallies over len(acc)
// runs on items calibration items, acc[run][item] the accuracy of the
// model of that run on that item.
func sentinelSeries(r *rand.Rand, j sentinelJudge, items int, acc func(run, item int) float64, runs int) []sentinelRun {
	shift := make([]float64, items)
	for i := range shift {
		shift[i] = j.difficulty(r)
	}
	out := make([]sentinelRun, runs)
	for run := range out {
		for it := range items {
			out[run].add(int64(it+1), j.matched(r, acc(run, it), shift[it]), sentinelRubricItems)
		}
	}
	return out
}

// steadyRate is the share of steady series with any step, and of runs
// tested that stepped, for one judge, calibration-set size and accuracy.
type steadyRate struct {
	series, stepped int // series, and series with any step
	tested, steps   int // runs tested, and steps among them
	cannotTell      int // runs that could not tell
}

func (s *steadyRate) add(o steadyRate) {
	s.series += o.series
	s.stepped += o.stepped
	s.tested += o.tested
	s.steps += o.steps
	s.cannotTell += o.cannotTell
}

func (s steadyRate) familyWise() float64 { return float64(s.stepped) / float64(s.series) }
func (s steadyRate) perRun() float64     { return float64(s.steps) / float64(max(s.tested, 1)) }

// steps is the rule under test: the step marks of a series of tallies.
type stepRule func(runs []sentinelRun, seed uint64) []RunPoint

// steadySeries measures a rule over n steady series of SeriesRuns runs.
func steadySeries(rule stepRule, seed uint64, j sentinelJudge, items int, p float64, n int) steadyRate {
	r := rand.New(rand.NewPCG(seed, uint64(items)))
	var s steadyRate
	for k := range n {
		runs := sentinelSeries(r, j, items, func(int, int) float64 { return p }, SeriesRuns)
		any := false
		for _, pt := range rule(runs, seed+uint64(k)) {
			switch {
			case pt.CannotTell:
				s.cannotTell++
			case pt.P != nil:
				s.tested++
			}
			if pt.Step {
				s.steps++
				any = true
			}
		}
		s.series++
		if any {
			s.stepped++
		}
	}
	return s
}

// TestSentinelsSteadyJudgeFamilyWise holds the stated rates: a steady
// judge's series of SeriesRuns runs shows any step at most 5 % of the
// time (SeriesRuns × StepAlpha), and a run tested steps at most StepAlpha
// of the time, whether its errors fall independently on rubric items or
// together on conversations. Each measured rate must sit within two
// standard errors of its bound, pooled over the grid, and within three
// for each judge and calibration-set size.
func TestSentinelsSteadyJudgeFamilyWise(t *testing.T) {
	t.Parallel()
	series, sizes, accs := 60, []int{3, 5, 10, 20}, []float64{0.9}
	if *sentinelSim {
		series, sizes, accs = 2000, []int{3, 5, 8, 10, 15, 20}, []float64{0.75, 0.9, 0.97}
	}
	const seriesBound = SeriesRuns * StepAlpha
	var all steadyRate
	for _, j := range sentinelJudges {
		for _, items := range sizes {
			for _, p := range accs {
				s := steadySeries(sentinelSteps, 11, j, items, p, series)
				all.add(s)
				t.Logf("%s, %d items, accuracy %.2f: %d of %d series stepped (%.3f); %d steps in %d runs tested; %d runs could not tell",
					j.name, items, p, s.stepped, s.series, s.familyWise(), s.steps, s.tested, s.cannotTell)
				if se := math.Sqrt(seriesBound * (1 - seriesBound) / float64(s.series)); s.familyWise() > seriesBound+3*se {
					t.Errorf("%s, %d items, accuracy %.2f: %.3f of steady series stepped, want at most %.3f + 3 × %.3f",
						j.name, items, p, s.familyWise(), seriesBound, se)
				}
				if items < MinSentinelItems && (s.steps > 0 || s.tested > 0) {
					t.Errorf("%s, %d items: %d runs tested and %d steps below the minimum set of %d", j.name, items, s.tested, s.steps, MinSentinelItems)
				}
			}
		}
	}
	fwSE := math.Sqrt(seriesBound * (1 - seriesBound) / float64(all.series))
	runSE := math.Sqrt(StepAlpha * (1 - StepAlpha) / float64(all.tested))
	t.Logf("pooled: %d of %d series stepped (%.4f, bound %.3f ± %.4f); %d steps in %d runs tested (%.5f, bound %.4f ± %.5f)",
		all.stepped, all.series, all.familyWise(), seriesBound, fwSE, all.steps, all.tested, all.perRun(), StepAlpha, runSE)
	if all.familyWise() > seriesBound+2*fwSE {
		t.Errorf("pooled family-wise false-step rate %.4f, want at most %.3f + 2 × %.4f", all.familyWise(), seriesBound, fwSE)
	}
	if all.perRun() > StepAlpha+2*runSE {
		t.Errorf("pooled per-run false-step rate %.5f, want at most %.4f + 2 × %.5f", all.perRun(), StepAlpha, runSE)
	}
	if all.tested < all.series*SeriesRuns/3 {
		t.Errorf("only %d of %d runs tested: the rule hides behind cannot tell", all.tested, all.series*(SeriesRuns-1))
	}
}

// rubricItemSteps is the rule attune used before: every rubric item an
// independent trial, a step at |z| ≥ 3 of a two-proportion test and a move
// of 0.1. Kept here as the known-broken method the simulation must reject.
func rubricItemSteps(runs []sentinelRun, _ uint64) []RunPoint {
	points := make([]RunPoint, len(runs))
	var bm, bn int
	for i, r := range runs {
		m, n := r.allMatched, r.allN
		if bn > 0 && n > 0 {
			pb, pr := float64(bm)/float64(bn), float64(m)/float64(n)
			pool := float64(bm+m) / float64(bn+n)
			se := math.Sqrt(pool * (1 - pool) * (1/float64(bn) + 1/float64(n)))
			zero := 0.0
			points[i].P = &zero
			if math.Abs(pr-pb) >= StepMin && se > 0 && math.Abs(pr-pb)/se >= 3 {
				points[i].Step = true
				bm, bn = 0, 0
			}
		}
		bm += m
		bn += n
	}
	return points
}

// TestSentinelSimulationRejectsTheRubricItemTest is the simulation's own
// check: the rubric-item test, blind to conversations, fails the bound of
// TestSentinelsSteadyJudgeFamilyWise when a judge misreads whole
// conversations, so that test can fail.
func TestSentinelSimulationRejectsTheRubricItemTest(t *testing.T) {
	t.Parallel()
	const seriesBound = SeriesRuns * StepAlpha
	for _, items := range []int{3, 10} {
		s := steadySeries(rubricItemSteps, 11, sentinelJudges[1], items, 0.9, 120)
		se := math.Sqrt(seriesBound * (1 - seriesBound) / float64(s.series))
		t.Logf("rubric-item test, whole conversations, %d items: %.3f of steady series stepped, %.4f of runs", items, s.familyWise(), s.perRun())
		if s.familyWise() <= seriesBound+3*se {
			t.Errorf("%d items: the rubric-item test passed the bound (%.3f of series)", items, s.familyWise())
		}
	}
}

// delays is where a rule first stepped after a change at run from: the
// runs after it (0: the first changed run itself), -1 for never, and the
// series that stepped before the change.
func changeDelays(rule stepRule, seed uint64, j sentinelJudge, items int, acc func(run, item int) float64, from, runs, n int) (delays []int, early int) {
	r := rand.New(rand.NewPCG(seed, uint64(items)))
	for k := range n {
		d := -1
		for i, pt := range rule(sentinelSeries(r, j, items, acc, runs), seed+uint64(k)) {
			if !pt.Step {
				continue
			}
			if i < from {
				early++
				continue
			}
			d = i - from
			break
		}
		delays = append(delays, d)
	}
	return delays, early
}

// caughtWithin is the share of delays at most w (a catch at all).
func caughtWithin(delays []int, w int) float64 {
	k := 0
	for _, d := range delays {
		if d >= 0 && d <= w {
			k++
		}
	}
	return float64(k) / float64(len(delays))
}

func medianDelay(delays []int) string {
	var caught []int
	for _, d := range delays {
		if d >= 0 {
			caught = append(caught, d)
		}
	}
	if len(caught)*2 < len(delays) {
		return "never (most series)"
	}
	// delays are small integers: count up to the median.
	for w := 0; ; w++ {
		if caughtWithin(delays, w)*2 >= 1 {
			return fmt.Sprint(w)
		}
	}
}

// TestSentinelsCatchAModelChange: ten steady runs at 0.9 per calibration
// item, then a model at 0.75 on every item (or, for "flips", one that
// gets a quarter of the items wrong it used to get right): the change is
// caught within the stated delay on a calibration set large enough, and
// below the minimum set the runs say they cannot tell, never step.
func TestSentinelsCatchAModelChange(t *testing.T) {
	t.Parallel()
	series := 40
	if *sentinelSim {
		series = 1000
	}
	const from, runs = 10, 30
	worse := func(run, _ int) float64 {
		if run >= from {
			return 0.75
		}
		return 0.9
	}
	flips := func(run, item int) float64 {
		if run >= from && item%4 == 0 {
			return 0.2
		}
		return 0.95
	}
	for _, tc := range []struct {
		judge  int
		items  int
		acc    func(run, item int) float64
		change string
		within int     // runs after the first changed one
		caught float64 // share of series caught within them
		sim    bool    // only with -sentinel.sim
	}{
		{0, 10, worse, "0.9 → 0.75", 0, 0.70, true},
		{1, 40, worse, "0.9 → 0.75", 5, 0.45, true},
		{0, 10, worse, "0.9 → 0.75", 2, 0.85, false},
		{0, 20, worse, "0.9 → 0.75", 0, 0.85, false},
		{2, 20, worse, "0.9 → 0.75", 2, 0.90, false},
		{1, 40, flips, "a quarter of the items flip", 2, 0.75, false},
		{0, 20, flips, "a quarter of the items flip", 0, 0.95, false},
	} {
		if tc.sim && !*sentinelSim {
			continue
		}
		j := sentinelJudges[tc.judge]
		delays, early := changeDelays(sentinelSteps, 5, j, tc.items, tc.acc, from, runs, series)
		got := caughtWithin(delays, tc.within)
		t.Logf("%s, %d items, %s: caught within %d runs in %.2f of series (within 0: %.2f, 2: %.2f, 5: %.2f, ever: %.2f; median delay %s); %d stepped before",
			j.name, tc.items, tc.change, tc.within, got, caughtWithin(delays, 0), caughtWithin(delays, 2), caughtWithin(delays, 5),
			caughtWithin(delays, runs), medianDelay(delays), early)
		if got < tc.caught {
			t.Errorf("%s, %d items, %s: caught within %d runs in %.2f of series, want at least %.2f", j.name, tc.items, tc.change, tc.within, got, tc.caught)
		}
	}
	// Below the minimum calibration set, even a collapse is not a step.
	collapse := func(run, _ int) float64 {
		if run >= from {
			return 0.1
		}
		return 0.95
	}
	for _, j := range sentinelJudges {
		r := rand.New(rand.NewPCG(9, 9))
		for k := range 20 {
			for i, pt := range sentinelSteps(sentinelSeries(r, j, MinSentinelItems-1, collapse, runs), uint64(k)) {
				if i > 0 && (pt.Step || !pt.CannotTell || pt.Reason == "" || pt.P != nil) {
					t.Fatalf("%s, %d items, run %d: %+v, want cannot tell with a reason", j.name, MinSentinelItems-1, i, pt)
				}
			}
		}
	}
}
