package agreement

import (
	"errors"
	"fmt"
	"math"
)

// Weighting names a family of agreement weights w(k,l) in [0,1], with
// w(k,k) = 1: how much credit a pair of answers k and l earns. The zero value
// is NoWeights.
type Weighting int

const (
	// NoWeights is the identity: only identical answers agree.
	NoWeights Weighting = iota
	// LinearWeights: 1 - |x_k - x_l| / (x_max - x_min).
	LinearWeights
	// QuadraticWeights: 1 - (x_k - x_l)² / (x_max - x_min)².
	QuadraticWeights
	// OrdinalWeights is Gwet's ordinal weighting, which uses ranks only:
	// with m = |k - l| + 1, 1 - C(m,2) / C(q,2).
	OrdinalWeights
	// RadicalWeights: 1 - sqrt|x_k - x_l| / sqrt(x_max - x_min).
	RadicalWeights
	// RatioWeights: 1 - ((x_k - x_l)/(x_k + x_l))² / ((x_max - x_min)/(x_max + x_min))²;
	// coordinates must be non-negative.
	RatioWeights
)

var weightingNames = [...]string{"none", "linear", "quadratic", "ordinal", "radical", "ratio"}

// String returns the name ParseWeighting reads ("none", "linear", ...).
func (w Weighting) String() string {
	if w < 0 || int(w) >= len(weightingNames) {
		return fmt.Sprintf("Weighting(%d)", int(w))
	}
	return weightingNames[w]
}

// ParseWeighting returns the weighting named s: none, linear, quadratic,
// ordinal, radical or ratio. The empty string is none.
func ParseWeighting(s string) (Weighting, error) {
	if s == "" {
		return NoWeights, nil
	}
	for i, n := range weightingNames {
		if n == s {
			return Weighting(i), nil
		}
	}
	return 0, fmt.Errorf("agreement: unknown weights %q (want none, linear, quadratic, ordinal, radical or ratio)", s)
}

// WeightMatrix returns the q×q matrix of weights w over the coordinates x
// (one per category, in scale order; q = len(x)). Pass Scale.Positions for
// Cohen's kappa and Scale.Values for Gwet's AC2 and weighted Fleiss' kappa;
// OrdinalWeights looks at ranks only. It fails for an unknown weighting, for
// non-finite coordinates, and for RatioWeights over negative coordinates or
// coordinates that are all zero. Categories with equal coordinates get weight
// 1 under the metric weightings (linear, quadratic, radical, ratio).
func WeightMatrix(w Weighting, x []float64) ([][]float64, error) {
	q := len(x)
	if q == 0 {
		return nil, errors.New("agreement: weights over no categories")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("agreement: weights over a non-finite coordinate")
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if w == RatioWeights && (lo < 0 || hi == 0) {
		return nil, errors.New("agreement: ratio weights need non-negative values, not all zero")
	}
	m := make([][]float64, q)
	for k := range m {
		m[k] = make([]float64, q)
		for l := range m[k] {
			if k == l {
				m[k][l] = 1
				continue
			}
			d := math.Abs(x[k] - x[l])
			span := hi - lo
			if d == 0 && w != NoWeights && w != OrdinalWeights {
				// Equal coordinates are the same point on a metric scale;
				// this also keeps 0/0 out of every formula below.
				m[k][l] = 1
				continue
			}
			switch w {
			case NoWeights:
				m[k][l] = 0
			case LinearWeights:
				m[k][l] = 1 - d/span
			case QuadraticWeights:
				m[k][l] = 1 - (d*d)/(span*span)
			case OrdinalWeights:
				r := float64(abs(k-l) + 1)
				m[k][l] = 1 - (r*(r-1)/2)/(float64(q)*float64(q-1)/2)
			case RadicalWeights:
				m[k][l] = 1 - math.Sqrt(d)/math.Sqrt(span)
			case RatioWeights:
				// x[k]+x[l] > 0 here: d > 0 and both are non-negative.
				a := d / (x[k] + x[l])
				b := span / (hi + lo)
				m[k][l] = 1 - (a*a)/(b*b)
			default:
				return nil, fmt.Errorf("agreement: unknown weights %v", w)
			}
		}
	}
	return m, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
