package ppi

import (
	"errors"
	"math"
	"testing"
)

// decodeSample turns fuzz bytes into a Sample: byte 0 picks n (0–15),
// byte 1 N (0–31), the rest the values, centred on 0 and multiplied by
// scale.
func decodeSample(data []byte, scale float64) Sample {
	if len(data) < 2 {
		return Sample{}
	}
	n, N := int(data[0])%16, int(data[1])%32
	vals := data[2:]
	next := func() float64 {
		if len(vals) == 0 {
			return 0
		}
		v := (float64(vals[0]) - 128) * scale
		vals = vals[1:]
		return v
	}
	s := Sample{Human: make([]float64, n), JudgeLabelled: make([]float64, n), JudgeUnlabelled: make([]float64, N)}
	for i := range n {
		s.Human[i], s.JudgeLabelled[i] = next(), next()
	}
	for i := range N {
		s.JudgeUnlabelled[i] = next()
	}
	return s
}

func checkInterval(t *testing.T, name string, iv Interval) {
	t.Helper()
	for _, v := range []float64{iv.Mean, iv.Low, iv.High} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s %+v is not finite", name, iv)
		}
	}
	if !(iv.Low <= iv.Mean && iv.Mean <= iv.High) {
		t.Fatalf("%s %+v does not contain its estimate", name, iv)
	}
}

// FuzzMean checks that for any finite input Mean either refuses it with
// one of its errors or returns finite figures whose intervals contain
// their estimates, with λ in [0, 1]; and likewise the differences and
// projections built on it.
func FuzzMean(f *testing.F) {
	f.Add([]byte{4, 4, 129, 129, 128, 128, 129, 128, 129, 129, 129, 129, 128, 129}, 1.0)
	f.Add([]byte{2, 0, 1, 1, 1, 1}, 1.0)                  // no unlabelled items, no variation
	f.Add([]byte{3, 1, 0, 255, 255, 0, 128, 128, 7}, 0.5) // a contrary judge, one unlabelled item
	f.Add([]byte{1, 5, 1, 2, 3, 4, 5, 6, 7}, 1.0)         // one label
	f.Add([]byte{5, 9, 200, 3, 90, 17, 44, 250, 1, 1, 80, 8, 9, 10, 11, 12, 13, 14, 15}, 1e-300)
	f.Add([]byte{5, 9, 200, 3, 90, 17, 44, 250, 1, 1, 80, 8, 9, 10, 11, 12, 13, 14, 15}, 1e200)
	f.Fuzz(func(t *testing.T, data []byte, scale float64) {
		if math.IsNaN(scale) || math.IsInf(scale, 0) {
			return
		}
		s := decodeSample(data, scale)
		e, err := Mean(s, Options{})
		if err != nil {
			if !errors.Is(err, ErrTooFewLabelled) && !errors.Is(err, ErrOverflow) {
				t.Fatalf("finite input refused: %v", err)
			}
			return
		}
		checkInterval(t, "human", e.Human)
		checkInterval(t, "judge", e.Judge)
		checkInterval(t, "ppi", e.PPI.Interval)
		if !(e.PPI.Lambda >= 0 && e.PPI.Lambda <= 1) {
			t.Fatalf("λ = %v", e.PPI.Lambda)
		}
		if !(e.EffectiveHumanLabels >= 0) || math.IsInf(e.EffectiveHumanLabels, 0) {
			t.Fatalf("effective labels %v", e.EffectiveHumanLabels)
		}
		for _, k := range []int{0, e.NUnlabelled / 2, e.NUnlabelled} {
			p, err := e.Project(k)
			if err != nil {
				t.Fatal(err)
			}
			if !(p.PPI >= 0 && p.Human >= 0) || math.IsInf(p.PPI, 0) || math.IsInf(p.Human, 0) {
				t.Fatalf("Project(%d) = %+v", k, p)
			}
		}

		// The sample against its own mirror, paired and not.
		mirror := Sample{Human: negate(s.Human), JudgeLabelled: negate(s.JudgeLabelled), JudgeUnlabelled: negate(s.JudgeUnlabelled)}
		d, err := PairedDifference(s, mirror, Options{})
		if err == nil {
			checkInterval(t, "paired ppi", d.PPI.Interval)
		} else if !errors.Is(err, ErrOverflow) {
			t.Fatalf("paired difference: %v", err)
		}
		em, err := Mean(mirror, Options{})
		if err != nil {
			t.Fatalf("the mirror of an accepted sample: %v", err)
		}
		ind, err := IndependentDifference(e, em)
		if err == nil {
			checkInterval(t, "independent ppi", ind.PPI.Interval)
			checkInterval(t, "independent human", ind.Human)
		} else if !errors.Is(err, ErrOverflow) {
			t.Fatalf("independent difference: %v", err)
		}
	})
}

func negate(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = -v
	}
	return y
}
