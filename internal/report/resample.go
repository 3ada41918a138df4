package report

import (
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/attune/attune/internal/agreement"
)

// The report's intervals resample items exactly as agreement.BootstrapUnits
// and agreement.BootstrapPairs do: a replicate draws as many items as the
// data have, with replacement, from the count patterns (or the cells of a
// contingency table) in proportion to how many items share each. Those
// functions make one draw per item, which for 100,000 items and a few
// hundred replicates per statistic is most of a report's time. The
// multinomial counts of a replicate have the same law when drawn one cell
// at a time as binomials conditional on the cells before, which takes time
// in proportion to the number of patterns, not of items. The statistics
// themselves are always agreement's.

// bootUnits computes stats on the units and, when b has replicates,
// attaches a percentile interval to every defined one (as
// agreement.BootstrapUnits).
func bootUnits(u agreement.Units, b agreement.Bootstrap, seed uint64, stats ...func(agreement.Units) agreement.Estimate) []agreement.Estimate {
	out := make([]agreement.Estimate, len(stats))
	for i, f := range stats {
		out[i] = f(u)
	}
	list := u.List()
	if b.Replicates < 1 || len(list) == 0 {
		return out
	}
	weights := make([]int, len(list))
	for i, x := range list {
		weights[i] = x.Weight
	}
	s := newMultinomial(weights, seed)
	reps := make([][]float64, len(stats))
	counts := make([]int, len(weights))
	resampled := make([]agreement.Unit, len(list))
	for range b.Replicates {
		s.draw(counts)
		for i, x := range list {
			resampled[i] = agreement.Unit{Counts: x.Counts, Weight: counts[i]}
		}
		r, err := agreement.NewUnits(u.Scale(), resampled)
		if err != nil {
			// The counts came from valid units; only the weights changed.
			panic(err)
		}
		for i, f := range stats {
			if !out[i].Defined {
				continue
			}
			if e := f(r); e.Defined {
				reps[i] = append(reps[i], e.Value)
			}
		}
	}
	intervals(out, reps, b)
	return out
}

// bootPairs is bootUnits for pairwise statistics: a replicate resamples
// the items both raters rated from the cells of the table (as
// agreement.BootstrapPairs).
func bootPairs(c agreement.Contingency, b agreement.Bootstrap, seed uint64, stats ...func(agreement.Contingency) agreement.Estimate) []agreement.Estimate {
	out := make([]agreement.Estimate, len(stats))
	for i, f := range stats {
		out[i] = f(c)
	}
	if b.Replicates < 1 || c.N() == 0 {
		return out
	}
	cells := c.Counts()
	q := len(cells)
	// Only the cells that hold items can be drawn: a table over many
	// categories (final scores) is mostly empty.
	var weights, at []int
	for k, row := range cells {
		for l, x := range row {
			if x > 0 {
				weights = append(weights, x)
				at = append(at, k*q+l)
			}
		}
	}
	s := newMultinomial(weights, seed)
	reps := make([][]float64, len(stats))
	drawn := make([]int, len(weights))
	flat := make([]int, q*q)
	table := make([][]int, q)
	for k := range table {
		table[k] = flat[k*q : (k+1)*q]
	}
	for range b.Replicates {
		s.draw(drawn)
		for i, x := range drawn {
			flat[at[i]] = x
		}
		r, err := agreement.NewContingency(c.Scale(), table)
		if err != nil {
			panic(err) // same shape as c, non-negative counts
		}
		for i, f := range stats {
			if !out[i].Defined {
				continue
			}
			if e := f(r); e.Defined {
				reps[i] = append(reps[i], e.Value)
			}
		}
	}
	intervals(out, reps, b)
	return out
}

// intervals sets the percentile interval of every defined estimate from
// its defined replicates: the (1-level)/2 and (1+level)/2 quantiles, R's
// type 7, as agreement does.
func intervals(out []agreement.Estimate, reps [][]float64, b agreement.Bootstrap) {
	lo, hi := (1-b.Level)/2, (1+b.Level)/2
	for i := range out {
		if !out[i].Defined || len(reps[i]) == 0 {
			continue
		}
		slices.Sort(reps[i])
		out[i].CI = &agreement.ConfidenceInterval{
			Lower: quantile(reps[i], lo), Upper: quantile(reps[i], hi),
			Level: b.Level, Replicates: b.Replicates, Defined: len(reps[i]),
		}
	}
}

func quantile(x []float64, p float64) float64 {
	h := p * float64(len(x)-1)
	i := int(h)
	if i >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[i] + (h-float64(i))*(x[i+1]-x[i])
}

// checkBootstrap refuses a configuration agreement would refuse.
func checkBootstrap(b agreement.Bootstrap) error {
	if b.Replicates < 0 {
		return errors.New("report: negative number of bootstrap replicates")
	}
	if b.Replicates > 0 && !(b.Level > 0 && b.Level < 1) {
		return errors.New("report: bootstrap level must be strictly between 0 and 1")
	}
	return nil
}

// seedFor derives the seed of one group of statistics from the report's
// seed and the group's name, so that every interval is reproducible and
// no two groups share a stream of draws.
func seedFor(base uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return base ^ h.Sum64()
}

// multinomial draws the counts of n items resampled with replacement from
// cells of the given weights (n their sum).
type multinomial struct {
	rng     *rand.Rand
	weights []int
	n       int
}

func newMultinomial(weights []int, seed uint64) *multinomial {
	n := 0
	for _, w := range weights {
		n += w
	}
	return &multinomial{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), weights: weights, n: n}
}

// draw fills counts (one per cell) with one replicate: cell i gets a
// binomial share of the items not yet drawn, with the probability of its
// weight among the weights not yet visited.
func (m *multinomial) draw(counts []int) {
	left, mass := m.n, m.n
	for i, w := range m.weights {
		switch {
		case left == 0 || w == 0:
			counts[i] = 0
		case w >= mass:
			counts[i] = left
		default:
			counts[i] = binomial(m.rng, left, float64(w)/float64(mass))
		}
		left -= counts[i]
		mass -= w
	}
}

// binomial returns a draw of Binomial(n, p): by inversion for small means,
// by Hörmann's (1993) transformed rejection with squeeze (BTRS) otherwise,
// so that a draw takes constant expected time whatever n is.
func binomial(r *rand.Rand, n int, p float64) int {
	if p > 0.5 {
		return n - binomial(r, n, 1-p)
	}
	if p <= 0 || n == 0 {
		return 0
	}
	if float64(n)*p < 10 {
		return binomialInversion(r, n, p)
	}
	return binomialBTRS(r, n, p)
}

// binomialInversion walks the cumulative distribution from 0; its
// expected number of steps is about n·p, which the caller keeps small.
func binomialInversion(r *rand.Rand, n int, p float64) int {
	q := 1 - p
	s := p / q
	a := float64(n+1) * s
	f := math.Pow(q, float64(n))
	u := r.Float64()
	x := 0
	for u > f && x < n {
		u -= f
		x++
		f *= a/float64(x) - s
	}
	return x
}

// binomialBTRS is algorithm BTRS of Hörmann, "The generation of binomial
// random variates" (J. Stat. Comput. Simul. 46, 1993), for n·p ≥ 10 and
// p ≤ 0.5.
func binomialBTRS(r *rand.Rand, n int, p float64) int {
	q := 1 - p
	nf := float64(n)
	spq := math.Sqrt(nf * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	lpq := math.Log(p / q)
	m := math.Floor((nf + 1) * p)
	h := lgamma(m+1) + lgamma(nf-m+1)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		v = math.Log(v * alpha / (a/(us*us) + b))
		if v <= h-lgamma(k+1)-lgamma(nf-k+1)+(k-m)*lpq {
			return int(k)
		}
	}
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}
