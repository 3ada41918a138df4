package calibration

import (
	"math"
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
	// Step marks the run whose accuracy left that of the runs before it
	// (since the last step) by more than chance allows: what a provider's
	// silent change of model looks like from here.
	Step bool `json:"step"`
}

// Step thresholds: a run's accuracy differs from its baseline's with
// |z| ≥ stepZ on a two-proportion test of the rubric items compared (about
// 3 in 1,000 by chance), and by at least stepMin, so that many items
// cannot make a trivial move a step.
const (
	stepZ   = 3
	stepMin = 0.1
)

// Sentinels groups a judge's sentinel records (oldest first, each with its
// run) into one point per run, in order, and marks the steps. The baseline
// of a run is every run since the last step; a step starts a new one.
func Sentinels(def *rubric.Definition, records []Record) []RunPoint {
	type tally struct{ matched, compared int }
	var points []RunPoint
	var counts []tally
	for _, r := range records {
		if len(points) == 0 || points[len(points)-1].Run != r.Run {
			points = append(points, RunPoint{Run: r.Run, At: r.At})
			counts = append(counts, tally{})
		}
		g := GradeAnswers(def, r.Gold, r.Given, 100)
		points[len(points)-1].N++
		counts[len(counts)-1].matched += g.Matched
		counts[len(counts)-1].compared += g.Compared
	}
	var base tally
	for i := range points {
		c := counts[i]
		if c.compared > 0 {
			points[i].Accuracy = float64(c.matched) / float64(c.compared)
		}
		if base.compared > 0 && c.compared > 0 && stepped(base.matched, base.compared, c.matched, c.compared) {
			points[i].Step = true
			base = tally{}
		}
		base.matched += c.matched
		base.compared += c.compared
	}
	return points
}

// stepped is the two-proportion test of the run (m of n) against its
// baseline (bm of bn).
func stepped(bm, bn, m, n int) bool {
	pb, pr := float64(bm)/float64(bn), float64(m)/float64(n)
	if math.Abs(pr-pb) < stepMin {
		return false
	}
	p := float64(bm+m) / float64(bn+n)
	se := math.Sqrt(p * (1 - p) * (1/float64(bn) + 1/float64(n)))
	if se == 0 {
		return false // both all right, or both all wrong: no difference
	}
	return math.Abs(pr-pb)/se >= stepZ
}
