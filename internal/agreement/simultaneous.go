package agreement

import (
	"math"
)

// BootstrapItemReplicates evaluates the groups of statistics on the n
// items and on b.Replicates resamples of them, and returns the values
// themselves rather than intervals: full[g][i] is statistic i of group g
// on the data (without a CI), reps[g][r][i] its value on replicate r, NaN
// where it is undefined there. The resamples are those BootstrapItemGroups
// draws for the same n and b.Seed, in the same order, so a caller can set
// a figure's own interval with BootstrapItemGroups and, from these, what
// needs the joint distribution of several statistics over the same
// resamples — a simultaneous interval over all their differences, say —
// which no interval of one statistic can give. b.Level is not used.
// Groups are evaluated on up to workers goroutines at a time; Eval's
// contract is that of ItemStats. It fails only for an invalid
// configuration.
func BootstrapItemReplicates(n int, b Bootstrap, workers int, groups ...ItemStats) (full [][]Estimate, reps [][][]float64, err error) {
	if err := b.validate(); err != nil {
		return nil, nil, err
	}
	ones := make([]int, n)
	for i := range ones {
		ones[i] = 1
	}
	full = make([][]Estimate, len(groups))
	reps = make([][][]float64, len(groups))
	for g, st := range groups {
		full[g] = make([]Estimate, st.N)
		st.Eval(ones, full[g])
		reps[g] = make([][]float64, b.Replicates)
		flat := make([]float64, b.Replicates*st.N)
		for r := range reps[g] {
			reps[g][r] = flat[r*st.N : (r+1)*st.N : (r+1)*st.N]
		}
	}
	s, err := newSampler(ones, b.Seed)
	if err != nil {
		return nil, nil, err
	}
	if s == nil {
		// No items: no resample, and every replicate is undefined.
		for g := range reps {
			for _, row := range reps[g] {
				for i := range row {
					row[i] = math.NaN()
				}
			}
		}
		return full, reps, nil
	}
	// The resamples BootstrapItemGroups draws, in its order, so that
	// replicate r is the same resample in both.
	evalBatches(n, b.Replicates, workers, groups, func(_ int, w []int) { s.resample(w) },
		func(g, r int, est []Estimate) {
			row := reps[g][r]
			for i, e := range est {
				row[i] = math.NaN()
				if e.Defined {
					row[i] = e.Value
				}
			}
		})
	return full, reps, nil
}

// StudentTQuantile returns the p-quantile of Student's t distribution with
// df > 0 degrees of freedom, for p strictly between 0 and 1 (NaN
// otherwise), to about 1e-12. It lets a critical value found on the normal
// scale — by a bootstrap of a maximum, say — be carried to the t scale,
// which allows for the standard errors being estimated from n items.
func StudentTQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || !(df > 0) {
		return math.NaN()
	}
	if p < 0.5 {
		return -StudentTQuantile(1-p, df)
	}
	// Newton's method on the distribution function from the normal
	// quantile, kept inside a bracket that bisection narrows whenever a
	// step would leave it: a handful of evaluations instead of the fifty
	// or so of bisection alone (a report finds one quantile per figure).
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, df) < p {
		lo, hi = hi, hi*2
	}
	logDensity := lgamma((df+1)/2) - lgamma(df/2) - 0.5*math.Log(df*math.Pi)
	x := min(max(normalQuantile(p), lo), hi)
	for range 100 {
		f := studentTCDF(x, df) - p
		if f < 0 {
			lo = x
		} else {
			hi = x
		}
		density := math.Exp(logDensity - (df+1)/2*math.Log1p(x*x/df))
		next := x - f/density
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-x) <= 1e-14*max(1, x) || next == lo || next == hi {
			return next
		}
		x = next
	}
	return x
}
