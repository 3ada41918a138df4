package agreement

import (
	"math"
	"testing"
)

// tCDFClosed is Student's t CDF for a whole number of degrees of freedom
// by the finite trigonometric series of Abramowitz and Stegun (26.7.3 and
// 26.7.4), with θ = atan(t/√ν): for odd ν, A = (2/π)(θ + sinθ(cosθ +
// (2/3)cos³θ + … )), for even ν, A = sinθ(1 + (1/2)cos²θ + (1·3)/(2·4)cos⁴θ
// + …), and F(t) = (1+A)/2. It shares nothing with the incomplete beta
// function, so it checks it independently.
func tCDFClosed(t float64, nu int) float64 {
	th := math.Atan(t / math.Sqrt(float64(nu)))
	s, c := math.Sin(th), math.Cos(th)
	var a float64
	if nu%2 == 1 {
		var sum float64
		if nu > 1 {
			term := c
			sum = term
			for k := 3; k <= nu-2; k += 2 {
				term *= c * c * float64(k-1) / float64(k)
				sum += term
			}
		}
		a = 2 / math.Pi * (th + s*sum)
	} else {
		term, sum := 1.0, 1.0
		for k := 2; k <= nu-2; k += 2 {
			term *= c * c * float64(k-1) / float64(k)
			sum += term
		}
		a = s * sum
	}
	return (1 + a) / 2
}

func TestStudentTCDFMatchesClosedForms(t *testing.T) {
	t.Parallel()
	ts := []float64{-40, -12.5, -6, -3.3, -2.228138851986274, -1.8, -1, -0.5, -0.1, 0, 0.05, 0.7, 1.4, 2, 2.5, 4.2, 9, 30}
	worst := 0.0
	for nu := 1; nu <= 400; nu++ {
		if nu > 60 && nu%17 != 0 {
			continue
		}
		for _, x := range ts {
			got, want := studentTCDF(x, float64(nu)), tCDFClosed(x, nu)
			d := math.Abs(got - want)
			worst = max(worst, d)
			if d > 1e-12 {
				t.Errorf("F(%v; %d) = %.17g, closed form %.17g (off by %.1e)", x, nu, got, want, d)
			}
		}
	}
	t.Logf("largest difference from the closed forms: %.2e", worst)
}

// The far tails, where 1+A cancels: one and two degrees of freedom have
// tails in closed form without cancellation, so the relative error is
// checked there.
func TestStudentTCDFTails(t *testing.T) {
	t.Parallel()
	for _, x := range []float64{3, 10, 100, 1e3, 1e6, 1e12} {
		cauchy := math.Atan(1/x) / math.Pi                     // ν = 1
		two := 1 / (math.Sqrt(2+x*x) * (math.Sqrt(2+x*x) + x)) // ν = 2
		for _, c := range []struct {
			nu   float64
			want float64
		}{{1, cauchy}, {2, two}} {
			got := studentTCDF(-x, c.nu)
			if rel := math.Abs(got-c.want) / c.want; rel > 1e-12 {
				t.Errorf("F(-%v; %v) = %.17g, want %.17g (relative error %.1e)", x, c.nu, got, c.want, rel)
			}
			if up := studentTCDF(x, c.nu); math.Abs(up-(1-c.want)) > 1e-15 {
				t.Errorf("F(%v; %v) = %.17g, want %.17g", x, c.nu, up, 1-c.want)
			}
		}
	}
}

// Integration of the density by Gauss–Legendre on [0, |t|] for degrees of
// freedom the closed forms do not cover (halves) and large ones.
func TestStudentTCDFByQuadrature(t *testing.T) {
	t.Parallel()
	for _, nu := range []float64{0.5, 1.5, 2.5, 7.5, 29, 1000, 20000} {
		logc := lgamma((nu+1)/2) - lgamma(nu/2) - 0.5*math.Log(nu*math.Pi)
		density := func(x float64) float64 { return math.Exp(logc - (nu+1)/2*math.Log1p(x*x/nu)) }
		for _, x := range []float64{-3, -1.2, 0.4, 2.2} {
			want := 0.5 + math.Copysign(gaussLegendre(density, 0, math.Abs(x), 400), x)
			got := studentTCDF(x, nu)
			tol := 1e-12
			if nu > 100 {
				// lgamma of a large argument carries an absolute error of
				// about 1e-16 times its size into the normalising constant.
				tol = 1e-10
			}
			if math.Abs(got-want) > tol {
				t.Errorf("F(%v; %v) = %.17g, quadrature %.17g", x, nu, got, want)
			}
		}
	}
}

// gaussLegendre integrates f over [a, b] with n panels of the 5-point rule.
func gaussLegendre(f func(float64) float64, a, b float64, n int) float64 {
	nodes := [5]float64{0, -0.5384693101056831, 0.5384693101056831, -0.9061798459386640, 0.9061798459386640}
	weights := [5]float64{0.5688888888888889, 0.4786286704993665, 0.4786286704993665, 0.2369268850561891, 0.2369268850561891}
	h := (b - a) / float64(n)
	var sum float64
	for i := range n {
		mid := a + (float64(i)+0.5)*h
		var s float64
		for k := range nodes {
			s += weights[k] * f(mid+nodes[k]*h/2)
		}
		sum += s * h / 2
	}
	return sum
}

func TestStudentTCDFEdges(t *testing.T) {
	t.Parallel()
	if got := studentTCDF(math.Inf(-1), 3); got != 0 {
		t.Errorf("F(-inf) = %v", got)
	}
	if got := studentTCDF(math.Inf(1), 3); got != 1 {
		t.Errorf("F(+inf) = %v", got)
	}
	if got := studentTCDF(0, 3); got != 0.5 {
		t.Errorf("F(0) = %v", got)
	}
	if !math.IsNaN(studentTCDF(1, 0)) || !math.IsNaN(studentTCDF(math.NaN(), 4)) {
		t.Error("want NaN for df 0 or t NaN")
	}
}
