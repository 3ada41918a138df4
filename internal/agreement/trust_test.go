package agreement

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBinomialAtMost(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{1, 0.5}, {7, 0.1}, {30, 0.1}, {200, 0.05}, {50, 0.9}} {
		sum := 0.0
		for k := 0; k <= c.n; k++ {
			lc, _ := math.Lgamma(float64(c.n + 1))
			la, _ := math.Lgamma(float64(k + 1))
			lb, _ := math.Lgamma(float64(c.n - k + 1))
			sum += math.Exp(lc - la - lb + float64(k)*math.Log(c.p) + float64(c.n-k)*math.Log1p(-c.p))
			if got := BinomialAtMost(k, c.n, c.p); math.Abs(got-sum) > 1e-9*math.Max(1, sum) && math.Abs(got-sum) > 1e-12 {
				t.Fatalf("P(Bin(%d, %v) ≤ %d) = %v, summed %v", c.n, c.p, k, got, sum)
			}
		}
	}
	if BinomialAtMost(-1, 5, 0.3) != 0 || BinomialAtMost(5, 5, 0.3) != 1 {
		t.Error("edges")
	}
}

// TestCalibrateTrustWorkedExample, by hand: target 0.5 at alpha 0.2 needs
// 3 kept items (0.5³ ≤ 0.2 < 0.5²). Six agreeing items tie at confidence
// 0.9, then 0.8 disagrees, 0.7 agrees, 0.6, 0.5 and 0.4 disagree. The six
// thresholds each keep at least 3; the first is tested at 0.1 and the
// others get 0.1/5 = 0.02 each, plus what a rejection before carries:
//
//	0.9:  6 kept, 0 against, p = 1/64       ≤ 0.10 rejected
//	0.8:  7 kept, 1 against, p = 8/128      ≤ 0.12 rejected
//	0.7:  8 kept, 1 against, p = 9/256      ≤ 0.14 rejected
//	0.6:  9 kept, 2 against, p = 46/512     ≤ 0.16 rejected
//	0.5: 10 kept, 3 against, p = 176/1024   ≤ 0.18 rejected
//	0.4: 11 kept, 4 against, p = 562/2048   > 0.20 not
//
// so the judge keeps confidence ≥ 0.5: 10 of 11 items, agreeing on 7.
func TestCalibrateTrustWorkedExample(t *testing.T) {
	items := []Judged{{0.5, false}, {0.4, false}, {0.8, false}, {0.7, true}, {0.6, false}}
	for range 6 {
		items = append(items, Judged{0.9, true})
	}
	got, err := CalibrateTrust(items, TrustOptions{Target: 0.5, Alpha: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Found || got.Threshold != 0.5 || got.Kept != 10 || math.Abs(got.Coverage-10.0/11) > 1e-12 || math.Abs(got.Agreement-0.7) > 1e-12 {
		t.Fatalf("got %+v", got)
	}
	want := []struct{ p, level float64 }{{1.0 / 64, 0.1}, {8.0 / 128, 0.12}, {9.0 / 256, 0.14}, {46.0 / 512, 0.16}, {176.0 / 1024, 0.18}, {562.0 / 2048, 0.2}}
	if len(got.Steps) != len(want) {
		t.Fatalf("steps %+v", got.Steps)
	}
	for i, w := range want {
		s := got.Steps[i]
		if math.Abs(s.PValue-w.p) > 1e-12 || math.Abs(s.Level-w.level) > 1e-12 || s.Rejected != (i < 5) {
			t.Errorf("step %d: %+v, want p %v at level %v", i, s, w.p, w.level)
		}
	}
	if !got.Keeps(0.5) || got.Keeps(0.45) {
		t.Error("keeps")
	}
}

func TestCalibrateTrustRefusals(t *testing.T) {
	for _, o := range []TrustOptions{{0, 0.05}, {1, 0.05}, {0.9, 0}, {0.9, 1}, {math.NaN(), 0.1}} {
		if _, err := CalibrateTrust(nil, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := CalibrateTrust([]Judged{{1.2, true}}, TrustOptions{0.9, 0.05}); err == nil {
		t.Error("confidence above 1 accepted")
	}
	few, err := CalibrateTrust(make([]Judged, 10), TrustOptions{0.9, 0.05})
	if err != nil || few.Found || few.Reason == "" || few.Keeps(1) {
		t.Errorf("ten items at 0.9/0.05 (29 needed): %+v, %v", few, err)
	}
	bad := make([]Judged, 500) // a judge that never agrees
	for i := range bad {
		bad[i].Confidence = float64(i) / 500
	}
	if got, _ := CalibrateTrust(bad, TrustOptions{0.9, 0.05}); got.Found {
		t.Errorf("a judge that never agrees was trusted: %+v", got)
	}
}

// trustJudge is a simulated judge: confidence uniform on [0.5, 1] (or on
// a retest grid), and agreement with people with probability agree(c).
// held(t) is the true agreement on items of confidence ≥ t, and best the
// largest coverage at which the true agreement still meets the target.
type trustJudge struct {
	name  string
	grid  int // 0: continuous confidence; k: confidence is j/k for j in k/2..k
	agree func(c float64) float64
}

func (j trustJudge) draw(rng *rand.Rand) Judged {
	c := 0.5 + 0.5*rng.Float64()
	if j.grid > 0 {
		lo := (j.grid + 1) / 2
		c = float64(lo+rng.IntN(j.grid-lo+1)) / float64(j.grid)
	}
	return Judged{Confidence: c, Agrees: rng.Float64() < j.agree(c)}
}

// held is E[agree(c) | c ≥ t] and the share of items kept, by numeric
// integration (or summing the grid).
func (j trustJudge) held(t float64) (agreement, coverage float64) {
	var num, den, all float64
	if j.grid > 0 {
		lo := (j.grid + 1) / 2
		for v := lo; v <= j.grid; v++ {
			c := float64(v) / float64(j.grid)
			all++
			if c >= t {
				num += j.agree(c)
				den++
			}
		}
	} else {
		const steps = 20000
		for s := range steps {
			c := 0.5 + 0.5*(float64(s)+0.5)/steps
			all++
			if c >= t {
				num += j.agree(c)
				den++
			}
		}
	}
	if den == 0 {
		return 1, 0
	}
	return num / den, den / all
}

func (j trustJudge) best(target float64) float64 {
	best := 0.0
	for s := 0; s <= 1000; s++ {
		if a, cov := j.held(0.5 + 0.5*float64(s)/1000); a >= target && cov > best {
			best = cov
		}
	}
	return best
}

// TestTrustGuaranteeHolds is the simulation behind the guarantee the
// certification page states: over many calibration sets from judges of
// known calibration (calibrated, over-confident, a step, a retest grid of
// five samples), the true agreement on the items the rule keeps is at
// least the target in at least 95 % of seeds, and at 2,000 items the
// coverage (counting a seed with no threshold as none) is at least 0.65 of
// the best any threshold could give knowing the truth: the rest is the
// margin that sampling error takes, largest where agreement falls slowly
// with confidence. The naive rule (the lowest threshold
// whose observed agreement meets the target) is run on the same data and
// must fall short of 95 %, so the test can tell a guarantee from none.
func TestTrustGuaranteeHolds(t *testing.T) {
	const seeds = 400
	o := TrustOptions{Target: 0.9, Alpha: 0.05}
	judges := []trustJudge{
		{name: "calibrated", agree: func(c float64) float64 { return c }},
		{name: "over-confident", agree: func(c float64) float64 { return 0.3 + 0.7*c }},
		{name: "step", agree: func(c float64) float64 {
			if c > 0.7 {
				return 0.95
			}
			return 0.6
		}},
		{name: "retest of five", grid: 5, agree: func(c float64) float64 { return 0.25 + 0.72*c }},
	}
	for _, j := range judges {
		for _, n := range []int{300, 2000} {
			rng := rand.New(rand.NewPCG(uint64(n), 2026))
			held, naiveHeld, found := 0, 0, 0
			var coverage float64
			for range seeds {
				items := make([]Judged, n)
				for i := range items {
					items[i] = j.draw(rng)
				}
				got, err := CalibrateTrust(items, o)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Found {
					held++ // nothing kept: no false guarantee, no coverage
				} else {
					found++
					a, cov := j.held(got.Threshold)
					if a >= o.Target {
						held++
					}
					coverage += cov
				}
				if a, _ := j.held(naiveThreshold(items, o.Target)); a >= o.Target {
					naiveHeld++
				}
			}
			best := j.best(o.Target)
			rate := float64(held) / seeds
			mean := coverage / seeds
			t.Logf("%s n=%d: guarantee held in %.3f of seeds (naive %.3f), found %d, mean coverage %.3f of best %.3f",
				j.name, n, rate, float64(naiveHeld)/seeds, found, mean, best)
			if rate < 0.95 {
				t.Errorf("%s n=%d: the guarantee held in %.3f of seeds, want ≥ 0.95", j.name, n, rate)
			}
			if n == 2000 && (found < seeds*9/10 || mean < 0.65*best) {
				t.Errorf("%s n=%d: coverage %.3f (found in %d seeds), best possible %.3f", j.name, n, mean, found, best)
			}
			if float64(naiveHeld)/seeds >= 0.95 {
				t.Errorf("%s n=%d: the naive rule also held in %.3f of seeds: the simulation cannot tell a guarantee from none", j.name, n, float64(naiveHeld)/seeds)
			}
		}
	}
}

// naiveThreshold is the lowest confidence whose kept items agree at the
// target on the calibration set itself, with no allowance for chance.
func naiveThreshold(items []Judged, target float64) float64 {
	// From the most confident down, the counts kept at each distinct
	// confidence: the lowest confidence whose kept items meet the target.
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b Judged) int { return cmp.Compare(b.Confidence, a.Confidence) })
	best := 2.0
	kept, agreed := 0, 0
	for i, it := range sorted {
		kept++
		if it.Agrees {
			agreed++
		}
		if i+1 < len(sorted) && sorted[i+1].Confidence == it.Confidence {
			continue // the whole tie is kept or none of it
		}
		if float64(agreed) >= target*float64(kept) {
			best = it.Confidence
		}
	}
	return best
}
