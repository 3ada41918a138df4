package calibration

import (
	"math/rand/v2"
	"testing"
	"time"
)

// sentinelRuns simulates a judge asked the same 10 calibration items of a
// YES/NO/NA rubric (12 criteria each) in every run, where each criterion
// matches gold with probability rates[run].
func sentinelRuns(seed uint64, rates []float64) []Record {
	r := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var out []Record
	for run, rate := range rates {
		for item := range 10 {
			given, gold := map[string]string{}, map[string]string{}
			for _, k := range keys {
				gold[k] = "YES"
				given[k] = "YES"
				if r.Float64() >= rate {
					given[k] = "NO"
				}
			}
			out = append(out, Record{Given: given, Gold: gold, Run: int64(run + 1), At: start.AddDate(0, 0, run), Item: int64(item + 1)})
		}
	}
	return out
}

func TestSentinelsFlagAModelChange(t *testing.T) {
	def := builtin(t, "coaching-conversation@2.0")
	for _, tc := range []struct {
		name  string
		rates []float64
		steps []int64 // the runs flagged
	}{
		{"steady", []float64{0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9}, nil},
		{"a worse model from run 6", []float64{0.92, 0.92, 0.92, 0.92, 0.92, 0.6, 0.6, 0.6}, []int64{6}},
		{"a better model from run 3", []float64{0.6, 0.6, 0.95, 0.95, 0.95}, []int64{3}},
		{"perfect throughout", []float64{1, 1, 1, 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(20) {
				points := Sentinels(def, sentinelRuns(seed, tc.rates))
				if len(points) != len(tc.rates) {
					t.Fatalf("%d points for %d runs", len(points), len(tc.rates))
				}
				var steps []int64
				for i, p := range points {
					if p.N != 10 || p.Run != int64(i+1) || !p.At.Equal(time.Date(2026, 11, 1+i, 9, 0, 0, 0, time.UTC)) {
						t.Fatalf("point %d: %+v", i, p)
					}
					if p.Step {
						steps = append(steps, p.Run)
					}
				}
				if len(steps) != len(tc.steps) || (len(steps) > 0 && steps[0] != tc.steps[0]) {
					t.Fatalf("seed %d: steps at runs %v, want %v; points %+v", seed, steps, tc.steps, points)
				}
			}
		})
	}
}

func TestSentinelsAccuracyPerRun(t *testing.T) {
	def := builtin(t, "empathetic-dialogue@2")
	gold := map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "4"}
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	points := Sentinels(def, []Record{
		{Given: gold, Gold: gold, Run: 4, At: at, Item: 1},
		// emotion and overall two points off: 3 of 5
		{Given: map[string]string{"emotion": "2", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "2"}, Gold: gold, Run: 4, At: at, Item: 2},
		{Given: gold, Gold: gold, Run: 9, At: at.Add(time.Hour), Item: 1},
	})
	if len(points) != 2 || points[0].Run != 4 || points[0].N != 2 || points[0].Accuracy != 0.8 || points[1].Run != 9 || points[1].Accuracy != 1 {
		t.Fatalf("points %+v", points)
	}
	// One calibration item is too few to tell a step by.
	if p := points[1]; !p.CannotTell || p.Step || p.Items != 1 || p.P != nil || p.Reason != "1 calibration item in this run and its baseline; a step needs 5" {
		t.Fatalf("run 9: %+v, want cannot tell on 1 item", p)
	}
}

// TestSentinelsCannotTell: a run is held against its baseline only on the
// items both answered, and says it cannot tell when they are too few or
// the baseline too short for any answer to be a step at StepAlpha.
func TestSentinelsCannotTell(t *testing.T) {
	tally := func(items []int64, matched int) sentinelRun {
		var r sentinelRun
		for _, it := range items {
			r.add(it, matched, 4)
		}
		return r
	}
	five, ten := []int64{1, 2, 3, 4, 5}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name   string
		runs   []sentinelRun
		items  int
		reason string
	}{
		{"one baseline run, five items", []sentinelRun{tally(five, 4), tally(five, 0)}, 5,
			"a baseline of 1 run is too short to tell a step on 5 calibration items"},
		// 2 / 5^5 = 0.00064: four baseline runs could tell.
		{"four baseline runs, five items", []sentinelRun{tally(five, 4), tally(five, 4), tally(five, 4), tally(five, 4), tally(five, 0)}, 5, ""},
		// 2 / 2^10 = 0.002: ten items and one baseline run cannot.
		{"one baseline run, ten items", []sentinelRun{tally(ten, 4), tally(ten, 0)}, 10,
			"a baseline of 1 run is too short to tell a step on 10 calibration items"},
		{"eleven items", []sentinelRun{tally(append(ten, 11), 4), tally(append(ten, 11), 0)}, 11, ""},
		// The run answered items 6 to 10, the baseline 1 to 5 and 6 to 9.
		{"shared items only", []sentinelRun{tally([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 4), tally(ten[5:], 0)}, 4,
			"4 calibration items in this run and its baseline; a step needs 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sentinelSteps(tc.runs, 1)
			last := p[len(p)-1]
			if last.Items != tc.items || last.Reason != tc.reason || last.CannotTell != (tc.reason != "") {
				t.Fatalf("last run %+v, want %d items, reason %q", last, tc.items, tc.reason)
			}
			if tc.reason == "" && (!last.Step || last.P == nil || *last.P > StepAlpha || last.Change == nil || *last.Change != -1) {
				t.Fatalf("last run %+v, want a step of −1 (all right, then all wrong)", last)
			}
			if p[0].CannotTell || p[0].P != nil || p[0].Step {
				t.Fatalf("first run %+v: it starts the baseline, untested", p[0])
			}
		})
	}
}
