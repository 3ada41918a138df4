package agreement

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestBootstrapReproducible(t *testing.T) {
	t.Parallel()
	// 200 items of three raters on 1–5 who are right 60 % of the time:
	// enough items that the seeded BCa part, not the jackknife, sets the
	// bounds of the interval, so a change of seed moves them.
	c := coverageCase{likert: true, raters: 3, items: 200}
	u, _ := c.draw(t, rand.New(rand.NewPCG(7, 11)))
	alpha := func(u Units) Estimate { return KrippendorffAlpha(u, Ordinal) }
	run := func(seed uint64) *ConfidenceInterval {
		es, err := BootstrapUnits(u, Bootstrap{Replicates: 1000, Level: 0.95, Seed: seed}, alpha, GwetAC1)
		if err != nil {
			t.Fatal(err)
		}
		if es[0].Value != alpha(u).Value || es[1].Value != GwetAC1(u).Value {
			t.Errorf("point estimates changed: %+v", es)
		}
		return es[0].CI
	}
	a, b, c2 := run(42), run(42), run(43)
	if *a != *b {
		t.Errorf("same seed, different intervals: %+v, %+v", a, b)
	}
	if *a == *c2 {
		t.Errorf("different seeds, same interval: %+v", a)
	}
	// Pinned: this seed must give this interval on every run. The
	// resampling draws binomials from PCG-DXSM (math/rand/v2) in a fixed
	// order, so only a change to the sampler, the seed's use, the BCa
	// levels or their widening would move it.
	want := ConfidenceInterval{Lower: pinnedLower, Upper: pinnedUpper, Level: 0.95, Replicates: 1000, Defined: pinnedDefined, Method: MethodWideBCa}
	if math.Abs(a.Lower-want.Lower) > 1e-12 || math.Abs(a.Upper-want.Upper) > 1e-12 || a.Defined != want.Defined || a.Method != want.Method {
		t.Errorf("seed 42 interval = %+v, want %+v", *a, want)
	}
	if !(a.Lower <= alpha(u).Value && alpha(u).Value <= a.Upper) {
		t.Errorf("interval %+v does not hold the estimate %v", *a, alpha(u).Value)
	}
}

// The interval of ordinal alpha on the 200 items above for seed 42,
// B = 1000, level 0.95.
const (
	pinnedLower   = 0.7903312796028144
	pinnedUpper   = 0.8485281208281892
	pinnedDefined = 1000
)

// At two and three items the widened level of MethodWideBCa rounds to 1;
// the interval must still be finite and hold the estimate.
func TestBootstrapFewItems(t *testing.T) {
	t.Parallel()
	s := likert(t)
	for _, m := range []matrix{{{0, 4}, {1, 4}}, {{0, 2, 4}, {1, 2, 3}, {0, 3, 4}}} {
		u := itemUnits(t, s, m)
		es, err := BootstrapUnits(u, Bootstrap{Replicates: 200, Level: 0.95, Seed: 1}, PercentAgreement,
			func(u Units) Estimate { return KrippendorffAlpha(u, Ordinal) },
			func(u Units) Estimate { return GwetAC2(u, QuadraticWeights) })
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range es {
			ci := e.CI
			if ci == nil {
				continue
			}
			if math.IsNaN(ci.Lower) || math.IsNaN(ci.Upper) || !(ci.Lower <= e.Value && e.Value <= ci.Upper) || ci.Method != MethodWideBCa {
				t.Errorf("%d items, statistic %d: %v with interval %+v", len(m[0]), i, e.Value, *ci)
			}
		}
	}
}

func TestBootstrapPairs(t *testing.T) {
	t.Parallel()
	s := likert(t)
	rng := rand.New(rand.NewPCG(1, 2))
	m := randomMatrix(rng, 2, 300, 5, 0.1)
	c := pairTable(t, s, m[0], m[1])
	cfg := Bootstrap{Replicates: 300, Level: 0.9, Seed: 9}
	kappa := func(c Contingency) Estimate { return CohenKappa(c, QuadraticWeights) }
	es, err := BootstrapPairs(c, cfg, kappa, KendallTauB)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := BootstrapPairs(c, cfg, kappa, KendallTauB)
	for i, e := range es {
		if e.CI == nil || *e.CI != *again[i].CI {
			t.Fatalf("estimate %d: interval %+v, then %+v", i, e.CI, again[i].CI)
		}
		if !(e.CI.Lower <= e.Value && e.Value <= e.CI.Upper) || e.CI.Upper-e.CI.Lower > 0.5 {
			t.Errorf("estimate %d: %v outside or lost in %+v", i, e.Value, *e.CI)
		}
	}
	// The input is untouched by the resampling.
	if CohenKappa(c, QuadraticWeights) != kappa(c) || c.N() != 300-countMissingPairs(m) {
		t.Error("table changed")
	}
}

func countMissingPairs(m matrix) int {
	n := 0
	for i := range m[0] {
		if m[0][i] < 0 || m[1][i] < 0 {
			n++
		}
	}
	return n
}

func TestBootstrapEdges(t *testing.T) {
	t.Parallel()
	s := likert(t)
	u, err := NewUnits(s, []Unit{{Counts: []int{2, 0, 0, 0, 0}, Weight: 5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []Bootstrap{{Replicates: 0, Level: 0.95}, {Replicates: 10, Level: 1}, {Replicates: 10, Level: 0}, {Replicates: 10, Level: math.NaN()}} {
		if _, err := BootstrapUnits(u, b, GwetAC1); err == nil {
			t.Errorf("%+v: no error", b)
		}
	}
	cfg := Bootstrap{Replicates: 50, Level: 0.95, Seed: 1}
	es, err := BootstrapUnits(u, cfg, GwetAC1, func(u Units) Estimate { return KrippendorffAlpha(u, Nominal) })
	if err != nil {
		t.Fatal(err)
	}
	// AC1 is 1 in every resample: no item disagrees, so no resample can
	// say how far off 1 is, and there is no interval but the reason.
	// Alpha is undefined and gets neither.
	if e := es[0]; !e.Defined || e.Value != 1 || e.CI != nil || e.NoCI == nil || e.NoCI.Reason != ReasonNoResampleSpread {
		t.Errorf("AC1 = %+v, want 1 without an interval, with the reason", e)
	}
	if es[1].Defined || es[1].CI != nil || es[1].NoCI != nil {
		t.Errorf("alpha = %+v, want undefined without interval", es[1])
	}
	es, err = BootstrapUnits(Units{}, cfg, GwetAC1)
	if err != nil || es[0].Defined || es[0].CI != nil {
		t.Errorf("empty units: %+v, %v", es, err)
	}
}

// TestAliasTableExact checks that the integer alias table gives every cell
// exactly its share: slot mass kept plus mass aliased to it from other slots
// equals weight × number of slots.
func TestAliasTableExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		weights := make([]int, 1+rng.IntN(20))
		for i := range weights {
			if rng.IntN(3) > 0 {
				weights[i] = rng.IntN(1000)
			}
		}
		s, err := newSampler(weights, 1)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			continue
		}
		got := make([]uint64, len(weights))
		for j := range weights {
			got[j] += s.prob[j]
			got[s.alias[j]] += s.total - s.prob[j]
		}
		for i, w := range weights {
			if got[i] != uint64(w)*uint64(len(weights)) {
				t.Fatalf("weights %v: cell %d has mass %d, want %d", weights, i, got[i], w*len(weights))
			}
		}
	}
}

func TestSamplerFrequencies(t *testing.T) {
	t.Parallel()
	weights := []int{1, 0, 2, 3, 4}
	s, err := newSampler(weights, 5)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, len(weights))
	total := make([]int, len(weights))
	const reps = 20000
	for range reps {
		s.resample(counts)
		for i, c := range counts {
			total[i] += c
		}
	}
	// Each resample draws 10 items; cell i is expected reps·w_i times.
	for i, w := range weights {
		mean := float64(reps * w)
		sd := math.Sqrt(float64(reps*10) * float64(w) / 10 * (1 - float64(w)/10))
		if math.Abs(float64(total[i])-mean) > 5*sd+1e-9 {
			t.Errorf("cell %d drawn %d times, want %v ± %v", i, total[i], mean, 5*sd)
		}
	}
}

// BootstrapItems resamples items, not cells: the same resample for every
// statistic, so a difference that holds on every item has a degenerate
// interval, and a statistic over the multiplicities sees n items each time.
func TestBootstrapItemsPaired(t *testing.T) {
	t.Parallel()
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	mean := func(x []float64, shift float64) func([]int) Estimate {
		return func(w []int) Estimate {
			var s, n float64
			for i, k := range w {
				s += float64(k) * (x[i] + shift)
				n += float64(k)
			}
			return Estimate{Value: s / n, Defined: true}
		}
	}
	diff := func(w []int) Estimate {
		return Estimate{Value: mean(a, 0.5)(w).Value - mean(a, 0)(w).Value, Defined: true}
	}
	count := func(w []int) Estimate {
		n := 0
		for _, k := range w {
			n += k
		}
		return Estimate{Value: float64(n), Defined: true}
	}
	est, err := BootstrapItems(len(a), Bootstrap{Replicates: 500, Level: 0.95, Seed: 3}, mean(a, 0), diff, count)
	if err != nil {
		t.Fatal(err)
	}
	if est[0].Value != 4.5 || est[0].CI == nil || !(est[0].CI.Lower < 4.5 && est[0].CI.Upper > 4.5) {
		t.Errorf("mean = %+v, want 4.5 inside a non-degenerate interval", est[0])
	}
	if d := est[1]; math.Abs(d.CI.Lower-0.5) > 1e-12 || math.Abs(d.CI.Upper-0.5) > 1e-12 {
		t.Errorf("paired difference interval = %+v, want [0.5, 0.5]", d.CI)
	}
	if c := est[2]; c.CI.Lower != 8 || c.CI.Upper != 8 {
		t.Errorf("items per resample = %+v, want 8", c.CI)
	}
	if _, err := BootstrapItems(3, Bootstrap{Replicates: 0, Level: 0.95}); err == nil {
		t.Error("no replicates: want an error")
	}
}

// Groups of statistics evaluated together, on several goroutines and in
// batches of resamples and of jackknife leave-outs, get exactly the
// estimates of all of them in one group on one goroutine, for every split
// into groups and number of workers, across batch boundaries.
func TestBootstrapItemGroupsMatchOneByOne(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 30, 9000} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		mean := func(shift float64) func([]int) Estimate {
			return func(w []int) Estimate {
				var s float64
				k := 0
				for i, c := range w {
					s += float64(c) * (x[i] + shift)
					k += c
				}
				if k == 0 {
					return Estimate{Reason: "no items"}
				}
				return Estimate{Value: s / float64(k), Defined: true}
			}
		}
		// Undefined on the resamples that miss the first item.
		first := func(w []int) Estimate {
			if len(w) == 0 || w[0] == 0 {
				return Estimate{Reason: "first item not drawn"}
			}
			return Estimate{Value: float64(w[0]), Defined: true}
		}
		never := func([]int) Estimate { return Estimate{Reason: "never"} }
		stats := []func([]int) Estimate{mean(0), mean(1), first, never, mean(-2)}
		b := Bootstrap{Replicates: 150, Level: 0.9, Seed: 11}
		want, err := BootstrapItems(n, b, stats...)
		if err != nil {
			t.Fatal(err)
		}
		group := func(fs ...func([]int) Estimate) ItemStats {
			return ItemStats{N: len(fs), Eval: func(w []int, out []Estimate) {
				for i, f := range fs {
					out[i] = f(w)
				}
			}}
		}
		for _, workers := range []int{1, 2, 5} {
			got, err := BootstrapItemGroups(n, b, workers, group(stats[0], stats[1]), group(stats[2]), group(stats[3], stats[4]))
			if err != nil {
				t.Fatal(err)
			}
			flat := append(append(append([]Estimate{}, got[0]...), got[1]...), got[2]...)
			if !reflect.DeepEqual(flat, want) {
				t.Errorf("n=%d, %d workers: groups give %+v, one by one %+v", n, workers, flat, want)
			}
		}
		if n == 30 && (want[0].CI == nil || want[2].CI == nil || want[2].CI.Defined == b.Replicates || want[3].CI != nil) {
			t.Errorf("n=30: the case does not exercise partly and wholly undefined statistics: %+v", want)
		}
	}
	if _, err := BootstrapItemGroups(3, Bootstrap{Replicates: 0, Level: 0.95}, 1); err == nil {
		t.Error("no replicates: want an error")
	}
}

// TestBinomialDraws checks the resampler's draws against their law: the
// multinomial counts of a replicate keep the total, and their means and
// variances match n·p and n·p·(1-p).
func TestBinomialDraws(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		weights []int
	}{{[]int{1, 2, 3, 4}}, {[]int{97000, 2000, 1000}}, {[]int{5, 0, 100000, 3}}} {
		got := resampleMoments(t, c.weights, 4000, 1)
		n := 0
		for _, w := range c.weights {
			n += w
		}
		for i, w := range c.weights {
			p := float64(w) / float64(n)
			mean, variance := float64(n)*p, float64(n)*p*(1-p)
			if math.Abs(got[i][0]-mean) > 4*math.Sqrt(variance/4000)+1e-9 {
				t.Errorf("weights %v cell %d: mean %v, want %v", c.weights, i, got[i][0], mean)
			}
			if variance > 0 && math.Abs(got[i][1]/variance-1) > 0.15 {
				t.Errorf("weights %v cell %d: variance %v, want %v", c.weights, i, got[i][1], variance)
			}
		}
	}
}

// resampleMoments draws reps replicates of the multinomial resampler over
// the weights and returns each cell's mean and variance; it fails the
// test if a replicate does not keep the total.
func resampleMoments(t *testing.T, weights []int, reps int, seed uint64) [][2]float64 {
	m := newMultinomial(weights, seed)
	counts := make([]int, len(weights))
	sum := make([]float64, len(weights))
	sq := make([]float64, len(weights))
	for range reps {
		m.draw(counts)
		total := 0
		for i, c := range counts {
			total += c
			sum[i] += float64(c)
			sq[i] += float64(c) * float64(c)
		}
		if total != m.n {
			t.Fatalf("a replicate of %v kept %d of %d items", weights, total, m.n)
		}
	}
	out := make([][2]float64, len(weights))
	for i := range out {
		mean := sum[i] / float64(reps)
		out[i] = [2]float64{mean, sq[i]/float64(reps) - mean*mean}
	}
	return out
}

// The acceleration from one leave-out value per unit, weighted by the
// unit's items, is the acceleration of the jackknife over every item.
func TestJackknifeWeightsAreItems(t *testing.T) {
	t.Parallel()
	values, weights := []float64{0.8, 0.7, 0.95, 0.6}, []float64{3, 1, 5, 2}
	byUnit, byItem := newJackknife(1), newJackknife(1)
	for k, v := range values {
		byUnit.add([]Estimate{{Value: v, Defined: true}}, weights[k])
		for range int(weights[k]) {
			byItem.add([]Estimate{{Value: v, Defined: true}}, 1)
		}
	}
	a, b := byUnit.acceleration(0), byItem.acceleration(0)
	if a == 0 || math.Abs(a-b) > 1e-12 {
		t.Errorf("acceleration by unit %v, by item %v", a, b)
	}
	// No spread, no acceleration; without skew and bias BCa is the
	// percentile interval.
	flat := newJackknife(1)
	flat.add([]Estimate{{Value: 1, Defined: true}}, 4)
	if flat.acceleration(0) != 0 {
		t.Error("acceleration without spread")
	}
	reps := []float64{1, 2, 3, 4, 5}
	if lo, hi := bcaLevels(3, reps, 0, 0.9); math.Abs(lo-0.05) > 1e-12 || math.Abs(hi-0.95) > 1e-12 {
		t.Errorf("z0 = a = 0: levels %v, %v, want 0.05, 0.95", lo, hi)
	}
	// An estimate above most replicates moves both levels up.
	if lo, hi := bcaLevels(4.5, reps, 0, 0.9); !(lo > 0.05 && hi > 0.95) {
		t.Errorf("bias toward the top: levels %v, %v", lo, hi)
	}
}
