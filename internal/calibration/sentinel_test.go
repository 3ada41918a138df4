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
		for range 10 {
			given, gold := map[string]string{}, map[string]string{}
			for _, k := range keys {
				gold[k] = "YES"
				given[k] = "YES"
				if r.Float64() >= rate {
					given[k] = "NO"
				}
			}
			out = append(out, Record{Given: given, Gold: gold, Run: int64(run + 1), At: start.AddDate(0, 0, run)})
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
		{Given: gold, Gold: gold, Run: 4, At: at},
		// emotion and overall two points off: 3 of 5
		{Given: map[string]string{"emotion": "2", "validation": "4", "helpfulness": "3", "safety": "5", "overall": "2"}, Gold: gold, Run: 4, At: at},
		{Given: gold, Gold: gold, Run: 9, At: at.Add(time.Hour)},
	})
	if len(points) != 2 || points[0].Run != 4 || points[0].N != 2 || points[0].Accuracy != 0.8 || points[1].Run != 9 || points[1].Accuracy != 1 {
		t.Fatalf("points %+v", points)
	}
}
