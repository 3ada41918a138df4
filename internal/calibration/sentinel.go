package calibration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/attune/attune/internal/rubric"
)

// RunPoint is a judge's standing on the calibration items in one run: the
// judge sentinel, asked afresh every run, so that its accuracy on the same
// items can be followed from run to run.
type RunPoint struct {
	Run      int64     `json:"run"`
	At       time.Time `json:"at"` // the run's first sentinel answer
	N        int       `json:"n"`  // calibration items answered
	Accuracy float64   `json:"accuracy"`
	// Step marks the run whose calibration items left the runs before it
	// (since the last step) by more than chance allows at StepAlpha: what
	// a provider's silent change of model looks like from here.
	Step bool `json:"step"`
	// Items is how many calibration items the run was held against its
	// baseline on: answered in this run and in at least one baseline run.
	Items int `json:"items"`
	// Change is the mean over those items of the run's accuracy on the
	// item minus the baseline runs' mean accuracy on it; nil when the run
	// was not held against a baseline.
	Change *float64 `json:"change,omitempty"`
	// P is the two-sided p-value of the step test (see Sentinels); nil
	// when the run was not tested.
	P *float64 `json:"p,omitempty"`
	// CannotTell marks a run that could not have been a step whatever it
	// answered: too few calibration items, or too short a baseline, for
	// chance to be told apart at StepAlpha. Reason says which.
	CannotTell bool   `json:"cannot_tell"`
	Reason     string `json:"reason,omitempty"`
}

// The step rule. A run is tested against its baseline (every run since the
// last step, the step itself included) at StepAlpha, two-sided; so a
// steady judge's series of SeriesRuns runs shows any step with chance at
// most SeriesRuns × StepAlpha (Bonferroni over the runs tested), 5 %.
// A run is held against its baseline on at least MinSentinelItems
// calibration items or not at all, and a step also moves accuracy by at
// least StepMin, so that many items cannot make a trivial move a step.
const (
	StepAlpha        = 0.001
	SeriesRuns       = 50
	MinSentinelItems = 5
	StepMin          = 0.1
)

// The Monte Carlo permutation p-value: at most permDraws draws, stopped
// early once permHits draws are as extreme as the run (Besag and
// Clifford's sequential p-value, valid at every level as the full one
// is). With permHits of 20 the early stop only ever ends a test whose
// p-value is above permHits / permDraws, ten times StepAlpha.
const (
	permDraws = 9999
	permHits  = 10
)

// Sentinels groups a judge's sentinel records (oldest first, each with its
// run and calibration item) into one point per run, in order, and marks
// the steps. The baseline of a run is every run since the last step; a
// step starts a new one with itself. The first run starts the baseline
// and is never tested.
//
// The test respects the unit of sampling. A judge's answers on the rubric
// items of one conversation are not independent trials (it misreads the
// conversation, and gets them wrong together), so the test compares
// calibration items, not rubric items: each item's accuracy in the run
// (matched / compared over its rubric items) against the item's mean
// accuracy over the baseline runs, the statistic being the mean of those
// differences. Its null distribution is exact under a steady judge, whose
// runs are exchangeable on each item: the run's accuracy on an item is
// equally likely to be any of that item's values in the baseline runs and
// the run, independently across items. That holds whether the judge errs
// on rubric items independently or on whole conversations, and whatever
// each item's difficulty.
func Sentinels(def *rubric.Definition, records []Record) []RunPoint {
	var points []RunPoint
	var runs []sentinelRun
	for _, r := range records {
		if len(points) == 0 || points[len(points)-1].Run != r.Run {
			points = append(points, RunPoint{Run: r.Run, At: r.At})
			runs = append(runs, sentinelRun{})
		}
		g := GradeAnswers(def, r.Gold, r.Given, 100)
		points[len(points)-1].N++
		runs[len(runs)-1].add(r.Item, g.Matched, g.Compared)
	}
	for i, v := range sentinelSteps(runs, seedOf(points)) {
		v.Run, v.At, v.N = points[i].Run, points[i].At, points[i].N
		points[i] = v
	}
	return points
}

// seedOf fixes the permutation draws of a series, so that the same records
// give the same points, report after report.
func seedOf(points []RunPoint) uint64 {
	var s uint64 = 0x5e47
	for _, p := range points {
		s = s*1000003 ^ uint64(p.Run)
	}
	return s
}

// sentinelRun is one run's tally, calibration item by calibration item.
type sentinelRun struct {
	items            []int64 // in first-answered order
	matched          map[int64]int
	compared         map[int64]int
	allMatched, allN int
}

func (s *sentinelRun) add(item int64, matched, compared int) {
	if s.matched == nil {
		s.matched, s.compared = map[int64]int{}, map[int64]int{}
	}
	if _, ok := s.compared[item]; !ok {
		s.items = append(s.items, item)
	}
	// A second answer set on the same item in a run is the same
	// conversation: one unit, not two.
	s.matched[item] += matched
	s.compared[item] += compared
	s.allMatched += matched
	s.allN += compared
}

// accuracy is the run's accuracy on an item, ok false when the run
// compared no rubric item of it.
func (s *sentinelRun) accuracy(item int64) (float64, bool) {
	n := s.compared[item]
	if n == 0 {
		return 0, false
	}
	return float64(s.matched[item]) / float64(n), true
}

// sentinelSteps is the step rule over runs already tallied: Sentinels
// without the grading. The points carry everything but Run, At and N.
func sentinelSteps(runs []sentinelRun, seed uint64) []RunPoint {
	rng := rand.New(rand.NewPCG(seed, 0x5e47))
	points := make([]RunPoint, len(runs))
	start := 0 // the baseline is runs[start:i]
	for i := range runs {
		r := &runs[i]
		if r.allN > 0 {
			points[i].Accuracy = float64(r.allMatched) / float64(r.allN)
		}
		if i == 0 {
			continue
		}
		var cells []permItem
		for _, it := range r.items {
			x, ok := r.accuracy(it)
			if !ok {
				continue
			}
			values := []float64{x}
			for b := start; b < i; b++ {
				if v, ok := runs[b].accuracy(it); ok {
					values = append(values, v)
				}
			}
			if len(values) > 1 {
				cells = append(cells, newPermItem(values))
			}
		}
		p := &points[i]
		p.Items = len(cells)
		if reason := cannotTell(cells, i-start); reason != "" {
			p.CannotTell, p.Reason = true, reason
			continue
		}
		d := meanDiff(cells)
		pv := permP(cells, d, rng)
		p.Change, p.P = &d, &pv
		if pv <= StepAlpha && math.Abs(d) >= StepMin {
			p.Step = true
			start = i
		}
	}
	return points
}

// permItem is one calibration item in a test: values[0] the run's
// accuracy on it, the rest the baseline runs' that answered it; diffs[j]
// the item's difference (run − baseline mean) were values[j] the run's.
type permItem struct{ values, diffs []float64 }

func newPermItem(values []float64) permItem {
	var total float64
	for _, v := range values {
		total += v
	}
	k := float64(len(values) - 1)
	c := permItem{values: values, diffs: make([]float64, len(values))}
	for j, x := range values {
		c.diffs[j] = x - (total-x)/k
	}
	return c
}

// cannotTell says why no answer of the run could make it a step, or "":
// fewer than MinSentinelItems items held against the baseline, or a
// baseline so short that even the most extreme run (the best or the worst
// on every item, by its value alone) would be as likely as StepAlpha.
func cannotTell(cells []permItem, baseline int) string {
	if len(cells) < MinSentinelItems {
		return fmt.Sprintf("%d calibration %s in this run and its baseline; a step needs %d", len(cells), plural(len(cells), "item", "items"), MinSentinelItems)
	}
	best := 2.0 // two-sided
	for _, c := range cells {
		best /= float64(len(c.values))
	}
	if best > StepAlpha {
		return fmt.Sprintf("a baseline of %d %s is too short to tell a step on %d calibration items", baseline, plural(baseline, "run", "runs"), len(cells))
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// meanDiff is the mean over items of the run's accuracy minus the
// baseline's mean.
func meanDiff(cells []permItem) float64 {
	var sum float64
	for _, c := range cells {
		sum += c.diffs[0]
	}
	return sum / float64(len(cells))
}

// permP is the two-sided permutation p-value of the observed mean
// difference d: the chance, with each item's run value drawn uniformly
// from that item's values, of a mean difference at least as far from 0.
func permP(cells []permItem, d float64, rng *rand.Rand) float64 {
	// The differences sit on a grid of the items' accuracies; the
	// slack keeps a draw equal to the observed one from falling short
	// by a rounding error.
	obs := math.Abs(d) - 1e-9
	// An item whose values are all alike adds the same to every draw.
	var fixed float64
	var vary []permItem
	for _, c := range cells {
		if slices.Min(c.diffs) == slices.Max(c.diffs) {
			fixed += c.diffs[0]
		} else {
			vary = append(vary, c)
		}
	}
	n := float64(len(cells))
	hits := 0
	for draw := 1; draw <= permDraws; draw++ {
		sum := fixed
		for _, c := range vary {
			sum += c.diffs[rng.IntN(len(c.diffs))]
		}
		if math.Abs(sum/n) >= obs {
			hits++
			if hits == permHits {
				return float64(hits) / float64(draw)
			}
		}
	}
	return float64(hits+1) / float64(permDraws+1)
}
