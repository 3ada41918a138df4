package ppi

import (
	"errors"
	"fmt"
	"math"
)

// DefaultLevel is the confidence level of every interval when Options.Level
// is zero.
const DefaultLevel = 0.95

// ErrTooFewLabelled is returned (wrapped, with the count) when fewer than two
// items carry a human value: one value has no variance, so no interval of a
// human-only or prediction-powered figure can be drawn. Callers may test for
// it with errors.Is and show the judge-only figure alone.
var ErrTooFewLabelled = errors.New("ppi: fewer than two labelled items")

// Interval is a point estimate with the bounds of its confidence interval.
// Low ≤ Mean ≤ High always; the bounds are not clipped to the scale, so a
// share near 0 may have a negative Low.
type Interval struct {
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Tuned is the prediction-powered interval with the weight λ the judge was
// given: 0 ignores the judge (the human-only figure), 1 is classic
// prediction-powered inference.
type Tuned struct {
	Interval
	Lambda float64 `json:"lambda"`
}

// Sample is the input of Mean. Human[i] and JudgeLabelled[i] are the human
// value and the judge's value of the same labelled item; JudgeUnlabelled
// holds the judge's values on the items no person labelled. A human value
// may be a mean of several people's answers (1–5) or a share of YES (0–1);
// the package does not care about the scale, only that every value is
// finite.
type Sample struct {
	Human           []float64
	JudgeLabelled   []float64
	JudgeUnlabelled []float64
}

// Options tune Mean. The zero value is a power-tuned estimate at the 95 %
// level.
type Options struct {
	// Level is the confidence level of every interval, in (0, 1); zero
	// means DefaultLevel.
	Level float64
	// FixLambda, when set, uses Lambda as given instead of tuning it:
	// Lambda 1 is classic prediction-powered inference, 0 the human-only
	// estimate. Lambda must be in [0, 1]. With fewer than two unlabelled
	// items λ is 0 all the same: there is no judge-only mean to lean on.
	FixLambda bool
	Lambda    float64
}

// Variances are the variances of the three figures of an Estimate (the
// squares of their standard errors), for callers who combine estimates.
type Variances struct {
	Human float64
	Judge float64
	PPI   float64
}

// Estimate is the mean of a quantity on a set of items three ways: from
// the people alone, from the judge alone, and prediction-powered. Its JSON
// is the shape the report, the CLI and the API publish.
type Estimate struct {
	// NLabelled counts the items with a human value (n), NUnlabelled the
	// items only the judge rated (N).
	NLabelled   int `json:"n_labelled"`
	NUnlabelled int `json:"n_unlabelled"`
	// Human is the mean of the human values on the n labelled items.
	Human Interval `json:"human"`
	// Judge is the mean of the judge's values on all n + N items. Its
	// interval covers sampling noise only: it says nothing of the judge's
	// bias, which is what PPI corrects.
	Judge Interval `json:"judge"`
	// PPI is the prediction-powered estimate of the human mean.
	PPI Tuned `json:"ppi"`
	// EffectiveHumanLabels is how many human labels a human-only estimate
	// would need for an interval as narrow as PPI's: n when the judge
	// adds nothing, more the better the judge tracks the people.
	EffectiveHumanLabels float64 `json:"effective_human_labels"`

	// Level is the confidence level of the intervals.
	Level float64 `json:"-"`
	// Var holds the variances behind the intervals.
	Var Variances `json:"-"`

	// moments are what Budget needs to project the interval to more labels.
	m moments
}

// moments are the sample moments the estimate was built from: variances of
// the human values (vh), the judge on the labelled items (vjl), on the
// unlabelled items (vjn) and on all of them (vjp), and the covariance of
// human and judge on the labelled items (c).
type moments struct {
	vh, vjl, vjn, vjp, c float64
	tuned                bool
	lambda               float64
	// set marks moments Mean filled in, which an Estimate decoded from
	// JSON or built by hand lacks.
	set bool
}

// Mean computes the prediction-powered estimate of the mean human value
// over all items, with the human-only and judge-only figures beside it. The
// labelled items must be a uniform random sample of all the items (Draw
// makes one); otherwise no figure but the judge's is what it claims.
//
// λ is tuned as Cov(human, judge) / ((1 + n/N)·Var(judge)), the covariance
// over the labelled items and Var(judge) over all n + N, then clipped to
// [0, 1]. Degenerate cases: when the judge gives one value on every item
// (Var(judge) = 0), or N < 2 (no variance of the judge's unlabelled values,
// and nothing to gain from them), λ is 0 and PPI equals the human-only
// figure. Fewer than two labelled items is ErrTooFewLabelled. Paired slices
// of different lengths, a non-finite value, a level outside (0, 1) or a
// fixed λ outside [0, 1] is an error naming the problem; values so large that
// their variance overflows are ErrOverflow. The result never holds a NaN or
// an infinity.
func Mean(s Sample, o Options) (Estimate, error) {
	level, err := o.level()
	if err != nil {
		return Estimate{}, err
	}
	if o.FixLambda && !(o.Lambda >= 0 && o.Lambda <= 1) {
		return Estimate{}, fmt.Errorf("ppi: fixed λ %v is outside [0, 1]", o.Lambda)
	}
	if err := s.validate(); err != nil {
		return Estimate{}, err
	}
	n, N := len(s.Human), len(s.JudgeUnlabelled)
	if n < 2 {
		return Estimate{}, fmt.Errorf("%w: %d, need at least 2", ErrTooFewLabelled, n)
	}

	mh, vh := meanVar(s.Human)
	mjl, vjl := meanVar(s.JudgeLabelled)
	mjn, vjn := meanVar(s.JudgeUnlabelled)
	mjp, vjp := pooledMeanVar(mjl, vjl, n, mjn, vjn, N)
	c := covariance(s.Human, mh, s.JudgeLabelled, mjl)

	m := moments{vh: vh, vjl: vjl, vjn: vjn, vjp: vjp, c: c, tuned: !o.FixLambda, lambda: o.Lambda, set: true}
	lambda := m.lambdaFor(n, N)

	// The residual h − λ·j is formed item by item, not from the moments,
	// so that λ = 0 gives the human values themselves and the human-only
	// figure to the last bit.
	mr, vr := residualMeanVar(s.Human, s.JudgeLabelled, lambda)
	theta := lambda*mjn + mr
	vppi := vr / float64(n)
	if lambda != 0 {
		vppi += lambda * lambda * vjn / float64(N)
	}

	z := zFor(level)
	e := Estimate{
		NLabelled:   n,
		NUnlabelled: N,
		Human:       interval(mh, vh/float64(n), z),
		Judge:       interval(mjp, vjp/float64(n+N), z),
		PPI:         Tuned{Interval: interval(theta, vppi, z), Lambda: lambda},
		Level:       level,
		Var:         Variances{Human: vh / float64(n), Judge: vjp / float64(n+N), PPI: vppi},
		m:           m,
	}
	e.EffectiveHumanLabels = effective(n, e.Var.Human, vppi, n+N)
	if !e.finite() {
		return Estimate{}, ErrOverflow
	}
	return e, nil
}

// ErrOverflow is returned when finite values are so large (beyond about
// 1e150) that their squares overflow and no interval can be computed.
var ErrOverflow = errors.New("ppi: values too large: their variance overflows float64")

// finite reports whether every published figure is a finite number.
func (e Estimate) finite() bool {
	for _, v := range []float64{
		e.Human.Mean, e.Human.Low, e.Human.High, e.Judge.Mean, e.Judge.Low, e.Judge.High,
		e.PPI.Mean, e.PPI.Low, e.PPI.High, e.PPI.Lambda, e.EffectiveHumanLabels,
		e.Var.Human, e.Var.Judge, e.Var.PPI, e.m.vh, e.m.vjl, e.m.vjn, e.m.vjp, e.m.c,
	} {
		if !finite(v) {
			return false
		}
	}
	return true
}

// lambdaFor is λ for n labelled and N unlabelled items: the fixed one, or
// the power-tuned one clipped to [0, 1]. Budget calls it with the counts
// after more labels.
func (m moments) lambdaFor(n, N int) float64 {
	if N < 2 {
		return 0
	}
	if !m.tuned {
		return m.lambda
	}
	if !(m.vjp > 0) {
		return 0
	}
	l := m.c / ((1 + float64(n)/float64(N)) * m.vjp)
	return max(0, min(1, l))
}

// effective is n·(human-only variance)/(PPI variance): the labels a
// human-only estimate needs to be as narrow. When both variances are 0 the
// judge adds nothing and the answer is n; when only PPI's is, the judge
// and people agree perfectly and the figure is capped at every item, all.
func effective(n int, vhuman, vppi float64, all int) float64 {
	switch {
	case vppi > 0:
		return float64(n) * vhuman / vppi
	case vhuman > 0:
		return float64(all)
	default:
		return float64(n)
	}
}

func (o Options) level() (float64, error) {
	if o.Level == 0 {
		return DefaultLevel, nil
	}
	if !(o.Level > 0 && o.Level < 1) {
		return 0, fmt.Errorf("ppi: confidence level %v is outside (0, 1)", o.Level)
	}
	return o.Level, nil
}

func (s Sample) validate() error {
	if len(s.Human) != len(s.JudgeLabelled) {
		return fmt.Errorf("ppi: %d human values but %d judge values on the labelled items; they must pair item by item", len(s.Human), len(s.JudgeLabelled))
	}
	for _, part := range []struct {
		name string
		x    []float64
	}{{"human value", s.Human}, {"judge value on labelled item", s.JudgeLabelled}, {"judge value on unlabelled item", s.JudgeUnlabelled}} {
		for i, v := range part.x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("ppi: %s %d is %v; every value must be finite", part.name, i, v)
			}
		}
	}
	return nil
}

// zFor is the two-sided normal quantile of a confidence level.
func zFor(level float64) float64 {
	return -math.Sqrt2 * math.Erfcinv(1+level)
}

// interval is mean ± z·√variance. The bounds are taken so that Low ≤ Mean ≤
// High even when the half-width rounds to nothing.
func interval(mean, variance, z float64) Interval {
	h := z * math.Sqrt(max(0, variance))
	return Interval{Mean: mean, Low: min(mean, mean-h), High: max(mean, mean+h)}
}

// meanVar returns the mean and the sample variance (n − 1 denominator) in
// two passes, which keeps the digits a one-pass sum of squares loses on
// values far from 0. The variance of fewer than two values is 0.
func meanVar(x []float64) (mean, variance float64) {
	if len(x) == 0 {
		return 0, 0
	}
	var sum float64
	for _, v := range x {
		sum += v
	}
	mean = sum / float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss, comp float64
	for _, v := range x {
		d := v - mean
		ss += d * d
		comp += d
	}
	// comp is the rounding error of the mean (the corrected two-pass
	// algorithm); it is zero in exact arithmetic.
	ss -= comp * comp / float64(len(x))
	return mean, max(0, ss/float64(len(x)-1))
}

// pooledMeanVar combines two groups' means and sample variances into those
// of the union, without a third pass over the values.
func pooledMeanVar(ma, va float64, na int, mb, vb float64, nb int) (mean, variance float64) {
	n := na + nb
	if nb == 0 {
		return ma, va
	}
	mean = (float64(na)*ma + float64(nb)*mb) / float64(n)
	if n < 2 {
		return mean, 0
	}
	d := mb - ma
	ss := float64(max(na-1, 0))*va + float64(max(nb-1, 0))*vb + d*d*float64(na)*float64(nb)/float64(n)
	return mean, max(0, ss/float64(n-1))
}

// covariance is the sample covariance of paired x and y with the given
// means.
func covariance(x []float64, mx float64, y []float64, my float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var s float64
	for i := range x {
		s += (x[i] - mx) * (y[i] - my)
	}
	return s / float64(len(x)-1)
}

// residualMeanVar is meanVar of h − λ·j.
func residualMeanVar(h, j []float64, lambda float64) (mean, variance float64) {
	if lambda == 0 {
		return meanVar(h)
	}
	r := make([]float64, len(h))
	for i := range h {
		r[i] = h[i] - lambda*j[i]
	}
	return meanVar(r)
}
