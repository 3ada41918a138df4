package calibration

import (
	"math/rand/v2"
	"testing"
)

// bernoulli draws n matches with probability p each.
func bernoulli(r *rand.Rand, n int, p float64) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = r.Float64() < p
	}
	return out
}

// TestAccuracyChartFindsAStep simulates raters whose accuracy falls from
// before to after at a known point, and raters who stay stable, and holds
// the chart to a detection rate within a bounded delay and a false-alarm
// rate on the stable series.
func TestAccuracyChartFindsAStep(t *testing.T) {
	const (
		runs     = 400
		change   = 100 // the step comes after this many observations
		length   = 200
		maxDelay = 50
	)
	tests := []struct {
		name          string
		before, after float64
		minDetected   float64 // share of runs detected within maxDelay
	}{
		{"0.9 to 0.6", 0.9, 0.6, 0.90},
		{"0.8 to 0.5", 0.8, 0.5, 0.80},
		{"0.95 to 0.7", 0.95, 0.7, 0.78},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			detected, early := 0, 0
			delays := 0
			for range runs {
				s := append(bernoulli(r, change, tt.before), bernoulli(r, length-change, tt.after)...)
				c := AccuracyChart(s)
				switch {
				case c.AlarmAt >= 0 && c.AlarmAt < change:
					early++
				case c.AlarmAt >= change && c.AlarmAt-change <= maxDelay:
					detected++
					delays += c.AlarmAt - change
				}
			}
			got := float64(detected) / runs
			t.Logf("detected within %d in %.1f%% of runs (mean delay %.1f); alarms before the step in %.1f%%",
				maxDelay, 100*got, float64(delays)/float64(max(detected, 1)), 100*float64(early)/runs)
			if got < tt.minDetected {
				t.Errorf("detected in %.3f of runs, want at least %.2f", got, tt.minDetected)
			}
			if float64(early)/runs > 0.05 {
				t.Errorf("alarms before the step in %d of %d runs", early, runs)
			}
		})
	}
}

func TestAccuracyChartStableSeries(t *testing.T) {
	const runs, length = 400, 200
	for _, p := range []float64{0.6, 0.75, 0.9, 0.97} {
		r := rand.New(rand.NewPCG(3, uint64(p*100)))
		alarms := 0
		for range runs {
			if AccuracyChart(bernoulli(r, length, p)).Drifting() {
				alarms++
			}
		}
		t.Logf("p=%.2f: false alarms in %d of %d stable series of %d", p, alarms, runs, length)
		if float64(alarms)/runs > 0.07 {
			t.Errorf("p=%.2f: false alarms in %d of %d stable series", p, alarms, runs)
		}
	}
}

func TestLeniencyChart(t *testing.T) {
	const runs, change, length, maxDelay = 500, 100, 200, 30
	// diffs draws signed differences: mostly 0, ±1 at random, with a bias
	// of a whole point added with probability shift.
	diffs := func(r *rand.Rand, n int, shift float64) []int {
		out := make([]int, n)
		for i := range out {
			switch x := r.Float64(); {
			case x < 0.2:
				out[i] = -1
			case x < 0.4:
				out[i] = 1
			}
			if r.Float64() < shift {
				out[i]++
			}
		}
		return out
	}
	r := rand.New(rand.NewPCG(5, 6))
	detected, falseAlarms := 0, 0
	for range runs {
		if LeniencyChart(diffs(r, length, 0)).Drifting() {
			falseAlarms++
		}
		c := LeniencyChart(append(diffs(r, change, 0), diffs(r, length-change, 0.7)...))
		if c.AlarmAt >= change && c.AlarmAt-change <= maxDelay {
			detected++
		}
	}
	t.Logf("lenient step detected within %d in %d of %d runs; false alarms in %d of %d stable", maxDelay, detected, runs, falseAlarms, runs)
	if float64(detected)/runs < 0.95 {
		t.Errorf("detected %d of %d", detected, runs)
	}
	if float64(falseAlarms)/runs > 0.05 {
		t.Errorf("false alarms %d of %d", falseAlarms, runs)
	}
}

func TestChartsNeedABaseline(t *testing.T) {
	short := make([]bool, Baseline)
	if c := AccuracyChart(short); c.Drifting() || len(c.Points) != 0 {
		t.Errorf("a series of %d has a chart: %+v", Baseline, c)
	}
	// Accuracy that falls to nothing once the chart has its reference is
	// found within a few observations.
	s := append(make([]bool, 0, 100), bernoulli(rand.New(rand.NewPCG(7, 8)), Baseline+Lag, 1)...)
	s = append(s, make([]bool, 40)...)
	c := AccuracyChart(s)
	if !c.Drifting() || c.AlarmAt < Baseline+Lag || c.AlarmAt > Baseline+Lag+10 {
		t.Errorf("alarm at %d", c.AlarmAt)
	}
}
