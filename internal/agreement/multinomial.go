package agreement

import (
	"math"
	"math/rand/v2"
)

// BootstrapUnits and BootstrapPairs resample items from count patterns or
// table cells shared by many items. Drawing the items one at a time would
// make a replicate of 100,000 items cost 100,000 draws whatever the
// number of patterns; the multinomial counts of a replicate have the same
// law when drawn one cell at a time, each a binomial of the items not yet
// drawn conditional on the cells before, which takes time in proportion
// to the number of cells.

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
	return &multinomial{rng: rand.New(rand.NewPCG(seed, seedStream)), weights: weights, n: n}
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
