package agreement

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
)

// Bootstrap configures a nonparametric percentile bootstrap over items.
type Bootstrap struct {
	// Replicates is the number of resamples B; at least 1 (1000 or more for
	// a report).
	Replicates int
	// Level is the confidence level, strictly between 0 and 1 (e.g. 0.95).
	Level float64
	// Seed fixes the resamples: the same data, configuration and seed give
	// the same interval on every run and machine.
	Seed uint64
}

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

// BootstrapUnits computes each statistic on u and attaches a percentile
// bootstrap interval to every defined one. A replicate draws Items() items
// with replacement from u (each unit with probability proportional to its
// weight, so resampling works on counts, not on labels) and evaluates every
// statistic on the same resample. The interval bounds are the (1-Level)/2
// and (1+Level)/2 quantiles (R's type 7) of the replicates where the
// statistic is defined; an estimate whose replicates are all undefined gets
// no interval. stats must be pure functions of their argument and must not
// keep it. It fails only for an invalid configuration.
func BootstrapUnits(u Units, b Bootstrap, stats ...func(Units) Estimate) ([]Estimate, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	weights := make([]int, len(u.list))
	for i, x := range u.list {
		weights[i] = x.Weight
	}
	return bootstrap(weights, b, len(stats),
		func(i int) Estimate { return stats[i](u) },
		func(w []int) func(int) Estimate {
			r := u.withWeights(w, nil)
			return func(i int) Estimate { return stats[i](r) }
		})
}

// BootstrapPairs is BootstrapUnits for pairwise statistics: a replicate
// draws N() items with replacement from the cells of c, in proportion to
// their counts.
func BootstrapPairs(c Contingency, b Bootstrap, stats ...func(Contingency) Estimate) ([]Estimate, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	q := len(c.cells)
	weights := make([]int, 0, q*q)
	for _, row := range c.cells {
		weights = append(weights, row...)
	}
	return bootstrap(weights, b, len(stats),
		func(i int) Estimate { return stats[i](c) },
		func(w []int) func(int) Estimate {
			r := Contingency{scale: c.scale, cells: make([][]int, q), n: c.n}
			for k := range r.cells {
				r.cells[k] = w[k*q : (k+1)*q : (k+1)*q]
			}
			return func(i int) Estimate { return stats[i](r) }
		})
}

// BootstrapItems is the paired bootstrap over n items: a replicate draws
// n items with replacement and every statistic is evaluated on that same
// resample, given as the multiplicity of each item (w[i] copies of item
// i; all ones for the data themselves). Statistics that compare variants
// on the same items (a difference of two variants' errors, say) thus get
// intervals that keep the pairing. Intervals are as in BootstrapUnits;
// stats must not keep w. It fails only for an invalid configuration.
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
type ItemStats struct {
	N    int
	Eval func(w []int, out []Estimate)
}

// BootstrapItemGroups is BootstrapItems for several groups of statistics
// on the same resamples, drawn once: each group's estimates are exactly
// those BootstrapItems gives its statistics with the same n and b.
// Groups are evaluated on up to workers goroutines at a time (at least
// one). It fails only for an invalid configuration.
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
	scratch := make([][]Estimate, len(groups))
	for g, st := range groups {
		reps[g] = make([][]float64, st.N)
		for i := range reps[g] {
			if out[g][i].Defined {
				reps[g][i] = make([]float64, 0, b.Replicates)
			}
		}
		scratch[g] = make([]Estimate, st.N)
	}
	// Replicates are drawn in batches, one after the other from the one
	// generator (the draws of a replicate depend on all before it), and
	// every group then evaluates the batch; a batch holds at most a few
	// megabytes of multiplicities whatever n is.
	batch := max(1, min(64, (1<<19)/max(n, 1)))
	w := make([]int, batch*n)
	workers = max(1, min(workers, len(groups)))
	for done := 0; done < b.Replicates; done += batch {
		k := min(batch, b.Replicates-done)
		for r := range k {
			s.resample(w[r*n : (r+1)*n])
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
						for i, e := range scratch[g] {
							if out[g][i].Defined && e.Defined {
								reps[g][i] = append(reps[g][i], e.Value)
							}
						}
					}
				}
			})
		}
		wg.Wait()
	}
	for g := range groups {
		for i := range out[g] {
			interval(&out[g][i], reps[g][i], b)
		}
	}
	return out, nil
}

// interval attaches to a defined estimate the percentile interval of its
// defined replicates, if any.
func interval(e *Estimate, reps []float64, b Bootstrap) {
	if !e.Defined || len(reps) == 0 {
		return
	}
	lo, hi := (1-b.Level)/2, (1+b.Level)/2
	slices.Sort(reps)
	e.CI = &ConfidenceInterval{
		Lower:      quantile(reps, lo),
		Upper:      quantile(reps, hi),
		Level:      b.Level,
		Replicates: b.Replicates,
		Defined:    len(reps),
	}
}

// bootstrap runs the replicates. weights are the multiplicities of the
// resampling cells; full evaluates statistic i on the data, resampled
// returns the evaluator over a resample given its multiplicities.
func bootstrap(weights []int, b Bootstrap, nstats int, full func(int) Estimate, resampled func([]int) func(int) Estimate) ([]Estimate, error) {
	out := make([]Estimate, nstats)
	for i := range out {
		out[i] = full(i)
	}
	s, err := newSampler(weights, b.Seed)
	if err != nil {
		return nil, err
	}
	if s == nil {
		// No items: nothing to resample, and every estimate is undefined.
		return out, nil
	}
	reps := make([][]float64, nstats)
	for range b.Replicates {
		w := make([]int, len(weights))
		s.resample(w)
		eval := resampled(w)
		for i := range out {
			if !out[i].Defined {
				continue
			}
			if e := eval(i); e.Defined {
				reps[i] = append(reps[i], e.Value)
			}
		}
	}
	for i := range out {
		interval(&out[i], reps[i], b)
	}
	return out, nil
}

// quantile returns the p-quantile of sorted x by linear interpolation
// between order statistics (Hyndman and Fan's type 7, R's default).
func quantile(x []float64, p float64) float64 {
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
