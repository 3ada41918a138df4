package ppi

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// pairedSystems is two systems rated on the same items: an item's
// difficulty moves both systems' human values together, B is better by
// lift, and the judge is lenient by one point with noise.
func pairedSystems(rng *rand.Rand, n, N int, lift float64) (a, b Sample) {
	one := func() (ha, hb, ja, jb float64) {
		base := rng.NormFloat64()
		ha = base + 0.3*rng.NormFloat64()
		hb = base + lift + 0.3*rng.NormFloat64()
		return ha, hb, ha + 1 + 0.5*rng.NormFloat64(), hb + 1 + 0.5*rng.NormFloat64()
	}
	a = Sample{Human: make([]float64, n), JudgeLabelled: make([]float64, n), JudgeUnlabelled: make([]float64, N)}
	b = Sample{Human: make([]float64, n), JudgeLabelled: make([]float64, n), JudgeUnlabelled: make([]float64, N)}
	for i := range n {
		a.Human[i], b.Human[i], a.JudgeLabelled[i], b.JudgeLabelled[i] = one()
	}
	for i := range N {
		_, _, a.JudgeUnlabelled[i], b.JudgeUnlabelled[i] = one()
	}
	return a, b
}

func TestPairedDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	a, b := pairedSystems(rng, 200, 4000, 0.2)
	d, err := PairedDifference(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// It is Mean over the item-by-item differences.
	direct, err := Mean(Sample{
		Human:           subtract(a.Human, b.Human),
		JudgeLabelled:   subtract(a.JudgeLabelled, b.JudgeLabelled),
		JudgeUnlabelled: subtract(a.JudgeUnlabelled, b.JudgeUnlabelled),
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Paired || d.PPI.Lambda == nil || *d.PPI.Lambda != direct.PPI.Lambda || d.PPI.Interval != direct.PPI.Interval ||
		d.Human != direct.Human || d.Judge != direct.Judge || d.NLabelled != 200 || d.NUnlabelled != 4000 {
		t.Errorf("paired %+v, direct %+v", d, direct)
	}

	// The same data taken as independent estimates: the items' shared
	// difficulty no longer cancels, and the interval is much wider.
	ea, err := Mean(a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eb, err := Mean(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ind, err := IndependentDifference(ea, eb)
	if err != nil {
		t.Fatal(err)
	}
	if ind.Paired || ind.PPI.Lambda != nil {
		t.Errorf("independent difference marked paired or with one λ: %+v", ind)
	}
	near(t, "independent ppi mean", ind.PPI.Mean, ea.PPI.Mean-eb.PPI.Mean, 1e-12)
	near(t, "independent ppi variance", ind.Var.PPI, ea.Var.PPI+eb.Var.PPI, 1e-15)
	near(t, "independent human high", ind.Human.High, ea.Human.Mean-eb.Human.Mean+z95*math.Sqrt(ea.Var.Human+eb.Var.Human), 1e-12)
	if w, pw := ind.PPI.High-ind.PPI.Low, d.PPI.High-d.PPI.Low; pw > 0.7*w {
		t.Errorf("paired width %v is not well under the independent %v", pw, w)
	}
	if d.PPI.High >= 0 {
		t.Errorf("paired interval %+v does not show B better by 0.2", d.PPI)
	}
}

func TestDifferenceErrors(t *testing.T) {
	h := []float64{1, 2, 3}
	if _, err := PairedDifference(Sample{Human: h, JudgeLabelled: h}, Sample{Human: h[:2], JudgeLabelled: h[:2]}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "same items on both sides: 3/2 labelled") {
		t.Errorf("unequal sides: %v", err)
	}
	if _, err := PairedDifference(Sample{Human: h[:1], JudgeLabelled: h[:1]}, Sample{Human: h[:1], JudgeLabelled: h[:1]}, Options{}); !errors.Is(err, ErrTooFewLabelled) {
		t.Errorf("one paired label: %v", err)
	}
	a, err := Mean(Sample{Human: h, JudgeLabelled: h}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Mean(Sample{Human: h, JudgeLabelled: h}, Options{Level: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := IndependentDifference(a, b); err == nil || !strings.Contains(err.Error(), "levels 0.95 and 0.9") {
		t.Errorf("mixed levels: %v", err)
	}
	if _, err := IndependentDifference(a, Estimate{Level: 0.95}); !errors.Is(err, ErrTooFewLabelled) {
		t.Errorf("zero estimate: %v", err)
	}
}

// TestDifferenceCoverage: with a known difference between two systems,
// the paired and the independent PPI intervals both cover it.
func TestDifferenceCoverage(t *testing.T) {
	const datasets, n, N, lift = 400, 100, 2000, 0.15
	rng := rand.New(rand.NewPCG(41, 42))
	var paired, independent int
	for range datasets {
		a, b := pairedSystems(rng, n, N, lift)
		d, err := PairedDifference(a, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.PPI.Low <= -lift && -lift <= d.PPI.High {
			paired++
		}
		// The independent difference is taken on disjoint items, as it
		// would be in practice: a fresh draw for b.
		_, b2 := pairedSystems(rng, n, N, lift)
		ea, err := Mean(a, Options{})
		if err != nil {
			t.Fatal(err)
		}
		eb, err := Mean(b2, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ind, err := IndependentDifference(ea, eb)
		if err != nil {
			t.Fatal(err)
		}
		if ind.PPI.Low <= -lift && -lift <= ind.PPI.High {
			independent++
		}
	}
	t.Logf("coverage of a − b: paired %.3f, independent %.3f over %d data sets", float64(paired)/datasets, float64(independent)/datasets, datasets)
	for name, c := range map[string]int{"paired": paired, "independent": independent} {
		if cov := float64(c) / datasets; cov < floor(datasets) {
			t.Errorf("%s difference coverage %.3f < %.3f", name, cov, floor(datasets))
		}
	}
}

// TestLabelsToSeparateHolds checks the budget's promise: plan k from a
// pilot, then label n + k items on fresh data where the true difference is
// the margin, and the interval excludes 0 about as often as the power
// asked for: within three standard errors, and 0.05 more for the pilot's
// own variances, estimated from 40 items.
func TestLabelsToSeparateHolds(t *testing.T) {
	const n, N, margin, power, datasets = 40, 6000, 0.08, 0.8, 300
	rng := rand.New(rand.NewPCG(51, 52))
	a, b := pairedSystems(rng, n, N, margin)
	pilot, err := PairedDifference(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := pilot.LabelsToSeparate(margin, power)
	if err != nil {
		t.Fatal(err)
	}
	if k == 0 {
		t.Fatal("the pilot already separates the systems; the test needs a harder margin")
	}
	var excluded int
	for range datasets {
		a, b := pairedSystems(rng, n+k, N-k, margin)
		d, err := PairedDifference(a, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.PPI.High < 0 {
			excluded++
		}
	}
	got := float64(excluded) / datasets
	t.Logf("k = %d more labels: the interval excludes 0 in %.3f of %d data sets (power asked %.2f)", k, got, datasets, power)
	if se := math.Sqrt(power * (1 - power) / datasets); math.Abs(got-power) > 3*se+0.05 {
		t.Errorf("with k = %d more labels the interval excluded 0 in %.3f of data sets, power %.2f asked", k, got, power)
	}
}
