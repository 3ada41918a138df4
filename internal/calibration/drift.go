package calibration

import "math"

// Drift is found with an EWMA control chart: each observation (1 for a
// match with gold and 0 for a miss, or the signed difference from gold) is
// folded into an exponentially weighted mean z, which is held against
// limits around the rater's own in-control level, set by their first
// Baseline observations. A rater drifts when z leaves the limits: a drop
// in accuracy, or leniency or severity appearing where there was none.
// An EWMA weighs every observation, so it notices a step of a fraction of
// a standard deviation within a few dozen observations, while a single
// odd answer moves it by only Lambda of its size.
const (
	// Lambda is the weight of the newest observation.
	Lambda = 0.05
	// Width is how many standard deviations of z the limits lie from the
	// in-control level.
	Width = 3.2
	// Baseline is how many observations, at the least, set the in-control
	// level; Lag is how far behind the newest observation the reference
	// stretch ends. No alarm is raised before Baseline + Lag observations.
	Baseline = 20
	Lag      = 40
)

// Side says which departures from the in-control level raise an alarm.
type Side int

const (
	// Below: only a fall (accuracy).
	Below Side = iota
	// Either: a rise or a fall (leniency).
	Either
)

// Point is one observation on a chart.
type Point struct {
	Value float64 // the observation
	Z     float64 // the weighted mean after it
	Lower float64 // the limits at this point (the in-control level ± Width σ_z)
	Upper float64
	Alarm bool // z outside the limits (never within the baseline)
}

// Chart is a series run through the control chart.
type Chart struct {
	Points []Point
	// Level and Sigma are the in-control level and the standard deviation
	// of one observation, from the baseline.
	Level, Sigma float64
	// AlarmAt is the index of the first point out of its limits, -1 when
	// none (or when the series is too short to have a baseline).
	AlarmAt int
}

// Drifting reports whether the chart signalled.
func (c Chart) Drifting() bool { return c.AlarmAt >= 0 }

// run runs xs through the chart. The in-control level at each point is
// the mean of the observations up to Lag before it (level gives the level
// and σ of one observation from such a stretch), so the chart starts
// itself from the rater's own record and a step shows before it reaches
// the reference. The limits widen by the uncertainty of that reference
// as well as of z, so that a short record does not raise alarms by
// chance.
func run(xs []float64, level func([]float64) (float64, float64), side Side) Chart {
	c := Chart{AlarmAt: -1}
	if len(xs) <= Baseline {
		return c
	}
	c.Points = make([]Point, len(xs))
	c.Level, c.Sigma = level(xs[:Baseline])
	z := c.Level
	for i, x := range xs {
		z = Lambda*x + (1-Lambda)*z
		p := Point{Value: x, Z: z, Lower: math.Inf(-1), Upper: math.Inf(1)}
		if ref := i + 1 - Lag; ref >= Baseline {
			mu, sigma := level(xs[:ref])
			n := float64(i + 1)
			vz := sigma * sigma * Lambda / (2 - Lambda) * (1 - math.Pow(1-Lambda, 2*n))
			half := Width * math.Sqrt(vz+sigma*sigma/float64(ref))
			p.Lower, p.Upper = mu-half, mu+half
			p.Alarm = z < p.Lower || (side == Either && z > p.Upper)
			if p.Alarm && c.AlarmAt < 0 {
				c.AlarmAt = i
			}
		}
		c.Points[i] = p
	}
	return c
}

// accuracyLevel is the in-control accuracy of a stretch of matches,
// shrunk a little towards one half so that a perfect record still leaves
// room for chance, and held within 0.1–0.9 so that σ never vanishes.
func accuracyLevel(xs []float64) (float64, float64) {
	hits := 0.0
	for _, x := range xs {
		hits += x
	}
	p := (hits + 1) / (float64(len(xs)) + 2)
	p = min(max(p, 0.1), 0.9)
	return p, math.Sqrt(p * (1 - p))
}

// leniencyLevel is the mean signed difference of a stretch and its σ, at
// least MinLeniencySigma.
func leniencyLevel(xs []float64) (float64, float64) {
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, max(math.Sqrt(ss/float64(len(xs)-1)), MinLeniencySigma)
}

// AccuracyChart charts a rater's matches with gold on one rubric item (or
// on all), oldest first. The in-control level is the baseline's accuracy,
// shrunk a little towards one half so that a perfect baseline still leaves
// room for chance, and held within 0.1–0.9 so that σ never vanishes. Only
// a fall raises an alarm. A series no longer than the baseline has no
// chart (AlarmAt -1, no points charted against limits).
func AccuracyChart(matches []bool) Chart {
	xs := make([]float64, len(matches))
	for i, m := range matches {
		if m {
			xs[i] = 1
		}
	}
	return run(xs, accuracyLevel, Below)
}

// MinLeniencySigma is the least σ a leniency chart assumes for one
// observation: a record that happens to agree exactly with gold would
// otherwise make any later difference an alarm.
const MinLeniencySigma = 0.5

// LeniencyChart charts a rater's signed differences from gold on numeric
// rubric items (given − gold), oldest first; a rise (more lenient) or a
// fall (more severe) raises an alarm.
func LeniencyChart(diffs []int) Chart {
	xs := make([]float64, len(diffs))
	for i, d := range diffs {
		xs[i] = float64(d)
	}
	return run(xs, leniencyLevel, Either)
}
