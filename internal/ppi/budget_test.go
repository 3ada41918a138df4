package ppi

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestProjectNow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	e, err := Mean(randomSample(rng, 150, 3000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Project(0)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "ppi half-width now", p.PPI, (e.PPI.High-e.PPI.Low)/2, 1e-12)
	near(t, "human half-width now", p.Human, (e.Human.High-e.Human.Low)/2, 1e-12)

	// From the moments rather than from the residuals, k = 1 must agree
	// with the formula for 151 labels.
	p1, err := e.Project(1)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "human half-width, one more", p1.Human, z95*math.Sqrt(e.m.vh/151), 1e-12)
	if p1.PPI > p.PPI*1.01 || p1.PPI < p.PPI*0.98 {
		t.Errorf("one more label moved the half-width from %v to %v", p.PPI, p1.PPI)
	}
	all, err := e.Project(3000)
	if err != nil {
		t.Fatal(err)
	}
	// Every item labelled: no judge-only items left, so PPI is human-only.
	if all.PPI != all.Human {
		t.Errorf("every item labelled: %+v", all)
	}
	var decoded Estimate
	if b, err := json.Marshal(e); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if _, err := decoded.Project(10); err == nil || !strings.Contains(err.Error(), "not made by Mean") {
		t.Errorf("an estimate read back from JSON was projected: %v", err)
	}
	if ind, err := IndependentDifference(decoded, decoded); err != nil {
		t.Fatal(err)
	} else if _, err := ind.LabelsToSeparate(0.1, 0.8); err == nil {
		t.Error("a difference of estimates read back from JSON was planned for")
	}
	for _, k := range []int{-1, 3001} {
		if _, err := e.Project(k); err == nil || !strings.Contains(err.Error(), "judge-only items") {
			t.Errorf("Project(%d): %v", k, err)
		}
	}
}

// TestProjectForecasts labels k more items for real (the simulation knows
// every item's human value) and compares the interval with the forecast.
func TestProjectForecasts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, N, k = 100, 20_000, 400
	h := make([]float64, n+N)
	j := make([]float64, n+N)
	for i := range h {
		h[i] = float64(rng.IntN(2))
		j[i] = h[i]
		if rng.Float64() < 0.15 {
			j[i] = 1 - j[i]
		}
	}
	now, err := Mean(Sample{Human: h[:n], JudgeLabelled: j[:n], JudgeUnlabelled: j[n:]}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := now.Project(k)
	if err != nil {
		t.Fatal(err)
	}
	later, err := Mean(Sample{Human: h[:n+k], JudgeLabelled: j[:n+k], JudgeUnlabelled: j[n+k:]}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := (later.PPI.High - later.PPI.Low) / 2
	if math.Abs(p.PPI/got-1) > 0.2 {
		t.Errorf("forecast half-width %v with %d more labels, got %v", p.PPI, k, got)
	}
	if p.PPI >= (now.PPI.High-now.PPI.Low)/2 {
		t.Errorf("four times the labels did not narrow the forecast: %v", p.PPI)
	}
}

func TestLabelsToSeparate(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	a, b := pairedSystems(rng, 60, 5000, 0.1)
	d, err := PairedDifference(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, power := range []float64{0.5, 0.8} {
		const margin = 0.05
		k, err := d.LabelsToSeparate(margin, power)
		if err != nil {
			t.Fatal(err)
		}
		need := margin / (z95 + quantile(power))
		p, err := d.Project(k)
		if err != nil {
			t.Fatal(err)
		}
		if se := p.PPI / z95; se > need {
			t.Errorf("power %v: k = %d leaves a standard error of %v > %v", power, k, se, need)
		}
		if k > 0 {
			q, err := d.Project(k - 1)
			if err != nil {
				t.Fatal(err)
			}
			if q.PPI/z95 <= need {
				t.Errorf("power %v: k − 1 = %d already suffices", power, k-1)
			}
		}
		if k == 0 {
			t.Errorf("power %v: 60 labels should not settle a margin of 0.05", power)
		}
		// A negative margin is the same question.
		if neg, err := d.LabelsToSeparate(-margin, power); err != nil || neg != k {
			t.Errorf("margin −0.05: %d, %v; want %d", neg, err, k)
		}
	}
	if k, err := d.LabelsToSeparate(100, 0.8); err != nil || k != 0 {
		t.Errorf("a huge margin: %d, %v; want 0 more labels", k, err)
	}
	if _, err := d.LabelsToSeparate(1e-6, 0.8); !errors.Is(err, ErrCannotSeparate) {
		t.Errorf("a tiny margin: %v", err)
	}
	for _, c := range []struct {
		margin, power float64
		want          string
	}{{0, 0.8, "margin 0"}, {math.NaN(), 0.8, "margin NaN"}, {0.1, 1, "power 1"}, {0.1, 0, "power 0"}} {
		if _, err := d.LabelsToSeparate(c.margin, c.power); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("margin %v power %v: %v", c.margin, c.power, err)
		}
	}
	if _, err := (Difference{}).LabelsToSeparate(0.1, 0.8); err == nil {
		t.Error("the zero Difference was planned for")
	}

	// Independent: k more of each system, the sides' variances added.
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
	pi, err := ind.Project(500)
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := ea.Project(500)
	pb, _ := eb.Project(500)
	near(t, "independent half-width", pi.PPI, math.Hypot(pa.PPI, pb.PPI), 1e-12)
	if _, err := ind.Project(5001); err == nil {
		t.Error("more labels than judge-only items were projected")
	}
}
