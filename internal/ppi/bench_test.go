package ppi

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkReport is every estimate a report over 100,000 items shows:
// 12 rubric items × 5 systems × 2 judges, each system with 20,000 items of
// which 1,000 carry human labels; per rubric item and judge the 10
// differences between systems, and for each the labels needed to tell
// them apart at 0.05. The target is under one second an operation.
func BenchmarkReport(b *testing.B) {
	const (
		criteria, systems, judges = 12, 5, 2
		perSystem, labelled       = 20_000, 1000
	)
	rng := rand.New(rand.NewPCG(1, 2))
	samples := make([][][]Sample, criteria) // [criterion][judge][system]
	for c := range samples {
		samples[c] = make([][]Sample, judges)
		for j := range judges {
			samples[c][j] = make([]Sample, systems)
			for s := range systems {
				smp := Sample{Human: make([]float64, labelled), JudgeLabelled: make([]float64, labelled), JudgeUnlabelled: make([]float64, perSystem-labelled)}
				rate := func(h float64) float64 { return min(5, max(1, h+float64(rng.IntN(3)-1)+float64(j))) }
				for i := range labelled {
					h := float64(1+rng.IntN(5)) + 0.5*float64(rng.IntN(2))
					smp.Human[i], smp.JudgeLabelled[i] = h, rate(h)
				}
				for i := range smp.JudgeUnlabelled {
					smp.JudgeUnlabelled[i] = rate(float64(1 + rng.IntN(5)))
				}
				samples[c][j][s] = smp
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for c := range criteria {
			for j := range judges {
				est := make([]Estimate, systems)
				for s := range systems {
					e, err := Mean(samples[c][j][s], Options{})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := e.Project(500); err != nil {
						b.Fatal(err)
					}
					est[s] = e
				}
				for x := range systems {
					for y := x + 1; y < systems; y++ {
						d, err := IndependentDifference(est[x], est[y])
						if err != nil {
							b.Fatal(err)
						}
						if _, err := d.LabelsToSeparate(0.05, 0.8); err != nil && d.PPI.Lambda != nil {
							b.Fatal(err)
						}
					}
				}
			}
		}
	}
}
