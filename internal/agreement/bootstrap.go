package agreement

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
)

// Bootstrap configures a nonparametric bootstrap over items. Agreement
// figures (BootstrapUnits, BootstrapPairs) get MethodWideBCa intervals;
// statistics over items (BootstrapItems, BootstrapItemGroups) get
// MethodBCa ones.
type Bootstrap struct {
	// Replicates is the number of resamples B; at least 1 (1000 or more for
	// a report).
	Replicates int
	// Level is the confidence level, strictly between 0 and 1 (e.g. 0.95).
	Level float64
	// Seed fixes the resamples: the same data, configuration and seed give
	// the same interval on every run.
	Seed uint64
}

// MethodBCa is the Method of a bias-corrected and accelerated bootstrap
// interval (Efron 1987; DiCiccio and Efron 1996): the percentiles of the
// replicates are moved by the bias z₀ (the normal quantile of the share
// of replicates below the estimate, ties counted half) and the
// acceleration a (the skewness of the jackknife over items).
const MethodBCa = "bca"

// MethodWideBCa is the Method of the intervals of agreement figures: the
// smallest interval that holds two others. One is the BCa interval at a
// level widened for n items (Hesterberg's expanded percentile: the normal
// quantile z of the level is replaced by √(n/(n−1))·t, t the quantile of
// Student's t with n − 1 degrees of freedom, so that for a mean the
// interval is as wide as the t interval; 0.9625 for 95 % at 30 items,
// 0.951 at 400). The other is the jackknife interval on Fisher's z scale,
// tanh(atanh v ± t·se/(1 − v²)), se the jackknife standard error over
// items, which keeps the bound 1 and leans away from it the way these
// figures' sampling distributions do. At 30 items BCa alone held a
// handful of figures (AC2 on 1–5, alpha and Fleiss' kappa with a rare
// answer) 0.87–0.91 of the time at a nominal 0.95; see docs/agreement.md
// for the coverage measured with this method. A figure at or beyond ±1
// gets the widened BCa interval alone.
const MethodWideBCa = "bca-wide"

// seedStream is the PCG stream constant paired with Seed; any fixed value
// works, it only has to never change.
const seedStream = 0x9e3779b97f4a7c15

func (b Bootstrap) validate() error {
	if b.Replicates < 1 {
		return errors.New("agreement: bootstrap needs at least one replicate")
	}
	if !(b.Level > 0 && b.Level < 1) {
		return errors.New("agreement: bootstrap level must be strictly between 0 and 1")
	}
	return nil
}

// BootstrapUnits computes each statistic on u and attaches a BCa bootstrap
// interval to every defined one. A replicate draws Items() items with
// replacement from u (each unit with probability proportional to its
// weight, so resampling works on counts, not on labels: a replicate takes
// time in proportion to the number of units, not of items) and evaluates
// every statistic on the same resample; the replicates where a statistic
// is undefined are left out. The acceleration comes from the jackknife
// over items, computed once per unit (leaving out any one item of a unit
// gives the same value) and weighted by the unit's weight. An estimate
// whose replicates are all undefined gets no interval. stats must be pure
// functions of their argument and must not keep it. It fails only for an
// invalid configuration.
func BootstrapUnits(u Units, b Bootstrap, stats ...func(Units) Estimate) ([]Estimate, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	weights := make([]int, len(u.list))
	for i, x := range u.list {
		weights[i] = x.Weight
	}
	var dst []Unit
	eval := func(w []int, out []Estimate) {
		r := u.withWeights(w, dst)
		dst = r.list
		for i, f := range stats {
			out[i] = f(r)
		}
	}
	return bootstrap(weights, b, len(stats), eval), nil
}

// BootstrapPairs is BootstrapUnits for pairwise statistics: a replicate
// draws N() items with replacement from the cells of c, in proportion to
// their counts, and the jackknife leaves out one item of each non-empty
// cell in turn.
func BootstrapPairs(c Contingency, b Bootstrap, stats ...func(Contingency) Estimate) ([]Estimate, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	q := len(c.cells)
	// Only the cells that hold items can be drawn: a table over many
	// categories (final scores) is mostly empty.
	var weights, at []int
	for k, row := range c.cells {
		for l, x := range row {
			if x > 0 {
				weights = append(weights, x)
				at = append(at, k*q+l)
			}
		}
	}
	flat := make([]int, q*q)
	r := Contingency{scale: c.scale, cells: make([][]int, q)}
	for k := range r.cells {
		r.cells[k] = flat[k*q : (k+1)*q : (k+1)*q]
	}
	eval := func(w []int, out []Estimate) {
		r.n = 0
		for i, x := range w {
			flat[at[i]] = x
			r.n += x
		}
		for i, f := range stats {
			out[i] = f(r)
		}
	}
	return bootstrap(weights, b, len(stats), eval), nil
}

// bootstrap runs the replicates over cells of the given weights (items
// sharing a count pattern or a table cell) drawn as multinomial counts,
// and sets the BCa interval of every defined estimate. eval evaluates
// every statistic on multiplicities (weights themselves for the data).
func bootstrap(weights []int, b Bootstrap, nstats int, eval func(w []int, out []Estimate)) []Estimate {
	out := make([]Estimate, nstats)
	eval(weights, out)
	m := newMultinomial(weights, b.Seed)
	if m.n == 0 {
		// No items: nothing to resample, and every estimate is undefined.
		return out
	}
	reps := make([][]float64, nstats)
	for i := range out {
		if out[i].Defined {
			reps[i] = make([]float64, 0, b.Replicates)
		}
	}
	w := make([]int, len(weights))
	scratch := make([]Estimate, nstats)
	for range b.Replicates {
		m.draw(w)
		eval(w, scratch)
		for i, e := range scratch {
			if out[i].Defined && e.Defined {
				reps[i] = append(reps[i], e.Value)
			}
		}
	}
	jack := newJackknife(nstats)
	copy(w, weights)
	for k, x := range weights {
		if x == 0 {
			continue
		}
		w[k]--
		eval(w, scratch)
		w[k]++
		jack.add(scratch, float64(x))
	}
	wide := newWidening(m.n, b.Level)
	for i := range out {
		interval(&out[i], reps[i], jack.acceleration(i), b, true)
		wide.apply(&out[i], reps[i], jack, i)
	}
	return out
}

// BootstrapItems is the paired bootstrap over n items: a replicate draws
// n items with replacement and every statistic is evaluated on that same
// resample, given as the multiplicity of each item (w[i] copies of item
// i; all ones for the data themselves). Statistics that compare variants
// on the same items (a difference of two variants' errors, say) thus get
// intervals that keep the pairing. Intervals are BCa as in
// BootstrapUnits, the acceleration from a jackknife over items (grouped
// when n is large, see BootstrapItemGroups); stats must not keep w. It
// fails only for an invalid configuration.
func BootstrapItems(n int, b Bootstrap, stats ...func(w []int) Estimate) ([]Estimate, error) {
	out, err := BootstrapItemGroups(n, b, 1, ItemStats{N: len(stats), Eval: func(w []int, out []Estimate) {
		for i, f := range stats {
			out[i] = f(w)
		}
	}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ItemStats is a group of N statistics over items evaluated together:
// Eval sets out[i] (len(out) is N) to statistic i on the resample w
// (w[i] copies of item i), so that statistics sharing work — a variant's
// figure and its difference from the best one's — do it once per
// resample. Eval is called by one goroutine at a time and must keep
// neither w nor out; it may keep scratch space of its own between calls.
// Besides resamples, Eval is given the jackknife's weights: all ones but
// zeros for the items left out.
type ItemStats struct {
	N    int
	Eval func(w []int, out []Estimate)
}

// jackknifeGroups bounds the leave-out evaluations of BootstrapItemGroups:
// up to this many items each item is left out in turn; beyond, items are
// left out in this many groups (item i in group i mod jackknifeGroups).
// A grouped jackknife estimates the same acceleration — the third moment
// of the influence over the second to the power 3/2, in which a group's
// influence is the sum of its items' — at a tenth of the cost of 1,000
// replicates.
const jackknifeGroups = 100

// BootstrapItemGroups is BootstrapItems for several groups of statistics
// on the same resamples, drawn once: each group's estimates are exactly
// those BootstrapItems gives its statistics with the same n and b.
// Groups are evaluated on up to workers goroutines at a time (at least
// one). Resamples are drawn item by item with integer arithmetic only,
// so a seed gives the same resamples on every machine. It fails only for
// an invalid configuration.
func BootstrapItemGroups(n int, b Bootstrap, workers int, groups ...ItemStats) ([][]Estimate, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	ones := make([]int, n)
	for i := range ones {
		ones[i] = 1
	}
	out := make([][]Estimate, len(groups))
	for g, st := range groups {
		out[g] = make([]Estimate, st.N)
		st.Eval(ones, out[g])
	}
	s, err := newSampler(ones, b.Seed)
	if err != nil {
		return nil, err
	}
	if s == nil {
		// No items: nothing to resample, and every estimate is undefined.
		return out, nil
	}
	reps := make([][][]float64, len(groups))
	jacks := make([]*jackknife, len(groups))
	for g, st := range groups {
		reps[g] = make([][]float64, st.N)
		for i := range reps[g] {
			if out[g][i].Defined {
				reps[g][i] = make([]float64, 0, b.Replicates)
			}
		}
		jacks[g] = newJackknife(st.N)
	}
	evalBatches(n, b.Replicates, workers, groups, func(_ int, w []int) { s.resample(w) },
		func(g, _ int, est []Estimate) {
			for i, e := range est {
				if out[g][i].Defined && e.Defined {
					reps[g][i] = append(reps[g][i], e.Value)
				}
			}
		})
	// The jackknife: item i is left out of weight row i mod m.
	m := min(n, jackknifeGroups)
	evalBatches(n, m, workers, groups, func(r int, w []int) {
		for i := range w {
			w[i] = 1
		}
		for i := r; i < n; i += m {
			w[i] = 0
		}
	}, func(g, _ int, est []Estimate) { jacks[g].add(est, 1) })
	for g := range groups {
		for i := range out[g] {
			interval(&out[g][i], reps[g][i], jacks[g].acceleration(i), b, false)
		}
	}
	return out, nil
}

// jackknife accumulates the leave-out values of several statistics, each
// with the weight of the items it stands for, for the acceleration.
type jackknife struct {
	values, weights [][]float64
}

func newJackknife(n int) *jackknife {
	return &jackknife{values: make([][]float64, n), weights: make([][]float64, n)}
}

// add records one leave-out evaluation; undefined values are left out.
func (j *jackknife) add(es []Estimate, weight float64) {
	for i, e := range es {
		if e.Defined {
			j.values[i] = append(j.values[i], e.Value)
			j.weights[i] = append(j.weights[i], weight)
		}
	}
}

// acceleration is a = Σ w d³ / (6 (Σ w d²)^{3/2}) over the leave-out
// values of statistic i, d the weighted mean of the values minus each;
// 0 when the jackknife shows no spread.
func (j *jackknife) acceleration(i int) float64 {
	v, w := j.values[i], j.weights[i]
	var mean, total float64
	for k := range v {
		mean += w[k] * v[k]
		total += w[k]
	}
	if total == 0 {
		return 0
	}
	mean /= total
	var s2, s3 float64
	for k := range v {
		d := mean - v[k]
		s2 += w[k] * d * d
		s3 += w[k] * d * d * d
	}
	if !(s2 > 0) {
		return 0
	}
	a := s3 / (6 * math.Pow(s2, 1.5))
	if math.IsNaN(a) || math.IsInf(a, 0) {
		return 0
	}
	return a
}

// stdError is the jackknife standard error of statistic i,
// √((N−1)/N · Σ w d²) over N items (the sum of the weights), d each
// leave-out value minus their weighted mean; NaN with fewer than two.
func (j *jackknife) stdError(i int) float64 {
	v, w := j.values[i], j.weights[i]
	var mean, total float64
	for k := range v {
		mean += w[k] * v[k]
		total += w[k]
	}
	if total < 2 {
		return math.NaN()
	}
	mean /= total
	var s2 float64
	for k := range v {
		d := v[k] - mean
		s2 += w[k] * d * d
	}
	return math.Sqrt((total - 1) / total * s2)
}

// widening turns the BCa interval of an agreement figure over n items
// into its MethodWideBCa interval: level is the widened level of the BCa
// part, t the Student quantile of the jackknife part. Both depend on n
// and the level only, so they are found once for every figure of a
// bootstrap.
type widening struct {
	ok    bool
	level float64
	t     float64
}

func newWidening(n int, level float64) widening {
	if n < 2 {
		// No degrees of freedom: the BCa interval stands as it is.
		return widening{}
	}
	nf := float64(n)
	t := StudentTQuantile((1+level)/2, nf-1)
	// At a few items the widened level rounds to 1, whose normal quantile
	// is infinite; just below 1 the BCa part runs to the ends of the
	// replicates instead.
	wide := min(2*normalCDF(math.Sqrt(nf/(nf-1))*t)-1, 1-1e-12)
	return widening{ok: true, level: wide, t: t}
}

// apply replaces e's BCa interval, if it has one, by the MethodWideBCa
// interval of the same replicates (sorted by interval) and of statistic
// i's jackknife.
func (wd widening) apply(e *Estimate, reps []float64, jack *jackknife, i int) {
	if e.CI == nil || !wd.ok {
		return
	}
	lo, hi := bcaLevels(e.Value, reps, jack.acceleration(i), wd.level)
	lower, upper := Quantile(reps, lo), Quantile(reps, hi)
	if v, se := e.Value, jack.stdError(i); v > -1 && v < 1 && se > 0 {
		z, c := math.Atanh(v), wd.t*se/(1-v*v)
		lower, upper = min(lower, math.Tanh(z-c)), max(upper, math.Tanh(z+c))
	}
	e.CI.Lower, e.CI.Upper, e.CI.Method = lower, upper, MethodWideBCa
}

// interval attaches to a defined estimate the BCa interval of its defined
// replicates, if any, with acceleration a. With withhold, an estimate
// every replicate reproduces gets no interval but the reason: agreement
// figures do so when no item shows a disagreement, where a resample can
// show none either and [v, v] would claim a certainty the items do not
// give. Statistics over items (BootstrapItemGroups) keep [v, v]: there a
// difference that holds on every item is exact.
func interval(e *Estimate, reps []float64, a float64, b Bootstrap, withhold bool) {
	if !e.Defined || len(reps) == 0 {
		return
	}
	slices.Sort(reps)
	lo, hi := bcaLevels(e.Value, reps, a, b.Level)
	if withhold && same(reps[0], e.Value) && same(reps[len(reps)-1], e.Value) {
		e.NoCI = &NoInterval{Reason: ReasonNoResampleSpread}
		return
	}
	e.CI = &ConfidenceInterval{
		Lower:      Quantile(reps, lo),
		Upper:      Quantile(reps, hi),
		Level:      b.Level,
		Replicates: b.Replicates,
		Defined:    len(reps),
		Method:     MethodBCa,
	}
}

// same reports whether x and y differ by no more than rounding: a figure
// recomputed from other counts in the same proportions may differ from
// itself in the last bits.
func same(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(y)) }

// bcaLevels returns the levels of the quantiles of sorted reps that bound
// the BCa interval of estimate t: Φ(z₀ + (z₀ + z)/(1 − a(z₀ + z))) for z
// the normal quantiles of (1 ∓ level)/2.
func bcaLevels(t float64, reps []float64, a, level float64) (lo, hi float64) {
	below := float64(sortedBelow(reps, t))
	ties := float64(sortedBelow(reps, math.Nextafter(t, math.Inf(1)))) - below
	r := float64(len(reps))
	// The share is kept off 0 and 1, where z₀ is infinite: an estimate
	// beyond every replicate moves the interval as far as B allows.
	share := min(max((below+ties/2)/r, 0.5/r), 1-0.5/r)
	z0 := normalQuantile(share)
	adjust := func(p float64) float64 {
		z := z0 + normalQuantile(p)
		d := 1 - a*z
		if d <= 0 {
			// Past the pole of the transformation the interval has run
			// to the end of the replicates.
			if a*z > 0 {
				return 1
			}
			return 0
		}
		return normalCDF(z0 + z/d)
	}
	return adjust((1 - level) / 2), adjust((1 + level) / 2)
}

// sortedBelow returns how many of sorted x are below t.
func sortedBelow(x []float64, t float64) int {
	i, _ := slices.BinarySearch(x, t)
	return i
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// Quantile returns the p-quantile of sorted x by linear interpolation
// between order statistics (Hyndman and Fan's type 7, R's default): the
// percentile intervals of every resampling in attune read their bounds
// with it, so that they agree to the digit.
func Quantile(x []float64, p float64) float64 {
	h := p * float64(len(x)-1)
	i := int(h)
	if i >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[i] + (h-float64(i))*(x[i+1]-x[i])
}

// sampler draws cells in proportion to integer weights with Walker's alias
// method, kept in integers so that the draws depend only on the seed: no
// floating-point rounding, which could differ between machines, is involved.
type sampler struct {
	src   *rand.PCG
	total uint64   // N, the number of items
	prob  []uint64 // slot j keeps its own cell when x < prob[j], x in [0,N)
	alias []int
}

// newSampler returns nil when the weights sum to zero.
func newSampler(weights []int, seed uint64) (*sampler, error) {
	var total uint64
	for _, w := range weights {
		total += uint64(w)
	}
	if total == 0 {
		return nil, nil
	}
	u := uint64(len(weights))
	if hi, _ := bits.Mul64(u, total); hi != 0 {
		return nil, errors.New("agreement: too many items to bootstrap")
	}
	// Each of the u slots holds mass N; cell i brings w_i·u of the total
	// u·N and is split across its own slot and others' aliases.
	mass := make([]uint64, len(weights))
	var small, large []int
	for i, w := range weights {
		mass[i] = uint64(w) * u
		if mass[i] < total {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	s := &sampler{
		src:   rand.NewPCG(seed, seedStream),
		total: total,
		prob:  make([]uint64, len(weights)),
		alias: make([]int, len(weights)),
	}
	for len(small) > 0 && len(large) > 0 {
		i := small[len(small)-1]
		small = small[:len(small)-1]
		j := large[len(large)-1]
		s.prob[i], s.alias[i] = mass[i], j
		mass[j] -= total - mass[i]
		if mass[j] < total {
			large = large[:len(large)-1]
			small = append(small, j)
		}
	}
	// Whatever is left fills its slot exactly (integer arithmetic leaves no
	// residue).
	for _, i := range append(small, large...) {
		s.prob[i], s.alias[i] = total, i
	}
	return s, nil
}

// resample fills counts with the multiplicities of N draws.
func (s *sampler) resample(counts []int) {
	clear(counts)
	slots := uint64(len(s.prob))
	for range s.total {
		r := s.uniform(slots * s.total)
		j, x := r/s.total, r%s.total
		if x < s.prob[j] {
			counts[j]++
		} else {
			counts[s.alias[j]]++
		}
	}
}

// uniform returns an unbiased integer in [0, m) (Lemire's multiply-shift
// with rejection).
func (s *sampler) uniform(m uint64) uint64 {
	hi, lo := bits.Mul64(s.src.Uint64(), m)
	if lo < m {
		threshold := -m % m
		for lo < threshold {
			hi, lo = bits.Mul64(s.src.Uint64(), m)
		}
	}
	return hi
}

// evalBatches evaluates every group on count rows of item weights over n
// items: fill(r, w) sets row r, called for r = 0, 1, … in order on one
// goroutine (a resampler's draws depend on all before them), and visit(g,
// r, est) receives group g's estimates on row r, for one group in row
// order and on one goroutine at a time; groups run on up to workers
// goroutines. Rows are filled and evaluated in batches that hold at most a
// few megabytes of weights whatever n is. visit must not keep est.
func evalBatches(n, count, workers int, groups []ItemStats, fill func(r int, w []int), visit func(g, r int, est []Estimate)) {
	scratch := make([][]Estimate, len(groups))
	for g, st := range groups {
		scratch[g] = make([]Estimate, st.N)
	}
	workers = max(1, min(workers, len(groups)))
	batch := max(1, min(64, (1<<19)/max(n, 1)))
	w := make([]int, batch*n)
	for done := 0; done < count; done += batch {
		k := min(batch, count-done)
		for r := range k {
			fill(done+r, w[r*n:(r+1)*n:(r+1)*n])
		}
		next := make(chan int, len(groups))
		for g := range groups {
			next <- g
		}
		close(next)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for g := range next {
					for r := range k {
						groups[g].Eval(w[r*n:(r+1)*n:(r+1)*n], scratch[g])
						visit(g, done+r, scratch[g])
					}
				}
			})
		}
		wg.Wait()
	}
}
