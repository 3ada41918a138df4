package agreement

import "math"

// studentTCDF returns P(T ≤ t) for Student's t distribution with df > 0
// degrees of freedom, through the regularized incomplete beta function:
// for x = df/(df+t²), P(T ≤ t) = I_x(df/2, 1/2)/2 when t ≤ 0, and one
// minus that when t > 0. Infinite t gives 0 or 1; NaN t or df ≤ 0 gives
// NaN, which callers never pass.
func studentTCDF(t, df float64) float64 {
	switch {
	case math.IsNaN(t) || !(df > 0):
		return math.NaN()
	case math.IsInf(t, -1):
		return 0
	case math.IsInf(t, 1):
		return 1
	case t == 0:
		return 0.5
	}
	// x = df/(df+t²) loses the tail for large |t| (t² swamps df); the
	// complement 1-x = t²/(df+t²) is computed directly so that whichever
	// of the two the beta function evaluates is exact to rounding.
	t2 := t * t
	x, y := df/(df+t2), t2/(df+t2)
	tail := 0.5 * regIncBeta(df/2, 0.5, x, y)
	if t < 0 {
		return tail
	}
	return 1 - tail
}

// regIncBeta returns the regularized incomplete beta function I_x(a, b)
// for a, b > 0 and x in [0, 1], given y = 1 - x computed by the caller
// without cancellation. It evaluates the continued fraction (DLMF 8.17.22)
// on whichever side converges fast, using I_x(a,b) = 1 - I_y(b,a).
func regIncBeta(a, b, x, y float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	}
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(b, a, y, x)
	}
	// The prefactor x^a y^b / (a B(a,b)), in logs to avoid overflow; y is
	// the caller's 1-x, which keeps the digits a subtraction would lose.
	lbeta := lgamma(a) + lgamma(b) - lgamma(a+b)
	front := math.Exp(a*math.Log(x) + b*math.Log(y) - lbeta)
	return front * betaFraction(a, b, x) / a
}

// betaFraction evaluates the continued fraction of I_x(a, b) by the
// modified Lentz method:
//
//	1/(1+ d1/(1+ d2/(1+ ...))), d_{2m+1} = -(a+m)(a+b+m)x/((a+2m)(a+2m+1)),
//	d_{2m} = m(b-m)x/((a+2m-1)(a+2m)).
func betaFraction(a, b, x float64) float64 {
	const (
		tiny    = 1e-300
		eps     = 1e-16
		maxIter = 10000
	)
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		// Even step.
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		// Odd step.
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		h *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return h
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}
