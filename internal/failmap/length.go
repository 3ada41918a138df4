package failmap

import (
	"fmt"
	"math"
	"strconv"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
)

// MinLengthItems is the fewest items LengthBias regresses on: below it a
// slope of answers on length says more about the few replies read than
// about the judge.
const MinLengthItems = 10

// LengthUnit names what a slope is per. Length enters as log₂ of the
// reply's characters, so a slope is the change in the answer when a reply
// doubles: reply lengths are skewed (tens to thousands of characters) and
// a hundred characters more is a different thing on a 60-character reply
// than on a 2,000-character one; a doubling means the same at every
// length, and keeps the few very long replies from setting the slope.
const LengthUnit = "doubling of reply length"

// Length is the length probe of one rubric item: the judge's answer and
// the people's mean answer, each regressed on log₂ of the reply's length
// over the same items, and how the two slopes differ.
type Length struct {
	// Items are those with a reply, a numeric answer from the judge and
	// from at least one person (YES is 1, NO 0, a level its number; NA and
	// other words are left out).
	Items int    `json:"items"`
	Unit  string `json:"unit"`
	// Defined is false when there are fewer than MinLengthItems items or
	// the replies do not differ in length; Reason then says which, and the
	// figures are absent.
	Defined bool     `json:"defined"`
	Reason  string   `json:"reason,omitempty"`
	Judge   *float64 `json:"judge_slope"`
	People  *float64 `json:"people_slope"`
	// Difference is Judge − People, with Low and High its 95 % interval.
	Difference *float64 `json:"difference"`
	Low        *float64 `json:"low"`
	High       *float64 `json:"high"`
	// Verdict says in plain words which way the judge leans, only when the
	// interval excludes 0; "" otherwise.
	Verdict string `json:"verdict,omitempty"`
}

// Verdicts of the length probe.
const (
	VerdictLonger  = "the judge rewards longer replies more than people do"
	VerdictShorter = "the judge rewards shorter replies more than people do"
)

// numeric reads an answer as a number: YES 1, NO 0, a level its value.
func numeric(v string) (float64, bool) {
	switch rubric.Value(v) {
	case rubric.Yes:
		return 1, true
	case rubric.No:
		return 0, true
	}
	x, err := strconv.Atoi(v)
	return float64(x), err == nil
}

// LengthBias regresses, over the items, the judge's answer and the
// people's mean answer on log₂ of the reply's characters (ordinary least
// squares) and gives both slopes and their difference.
//
// The items are the unit and each gives one judge answer and one people's
// mean, so the difference of the slopes is the slope of the paired
// difference (judge − people mean) on length: the two regressions share
// the same lengths, and least squares is linear in the answers. Its
// interval is that slope ± t times the HC2 standard error, on Bell and
// McCaffrey's degrees of freedom. The sandwich error allows the spread of
// the differences to change with length (answers on a bounded scale
// spread least near an end); the degrees of freedom keep the coverage
// with few items, where the plain standard error, HC3 on n − 2 and a
// percentile bootstrap over items all run short of 95 %.
func LengthBias(items []Item) Length {
	var x, j, p []float64
	for _, it := range items {
		if it.ReplyChars <= 0 {
			continue
		}
		jv, ok := numeric(it.Judge)
		if !ok {
			continue
		}
		sum, k := 0.0, 0
		for _, a := range it.People {
			if v, ok := numeric(a); ok {
				sum += v
				k++
			}
		}
		if k == 0 {
			continue
		}
		x = append(x, math.Log2(float64(it.ReplyChars)))
		j = append(j, jv)
		p = append(p, sum/float64(k))
	}
	l := Length{Items: len(x), Unit: LengthUnit}
	n := len(x)
	if n < MinLengthItems {
		l.Reason = fmt.Sprintf("%d items with a reply and numeric answers from the judge and people; the probe needs at least %d", n, MinLengthItems)
		return l
	}
	xbar := mean(x)
	sxx := 0.0
	for _, v := range x {
		sxx += (v - xbar) * (v - xbar)
	}
	if sxx <= 1e-12*float64(n) {
		l.Reason = "every reply has the same length"
		return l
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = j[i] - p[i]
	}
	slope := func(y []float64) float64 {
		s := 0.0
		for i, v := range y {
			s += (x[i] - xbar) * v
		}
		return s / sxx
	}
	bj, bp, bd := slope(j), slope(p), slope(d)
	// HC2: each squared residual scaled by 1/(1−h), h its leverage, so it
	// is unbiased for its item's variance when the spread is constant;
	// c is each item's weight in the slope, so scaled.
	ad := mean(d) - bd*xbar
	c := make([]float64, n)
	v := 0.0
	for i := range d {
		e := d[i] - ad - bd*x[i]
		dx := x[i] - xbar
		c[i] = dx / (sxx * math.Sqrt(1-(1/float64(n)+dx*dx/sxx)))
		v += c[i] * c[i] * e * e
	}
	se := math.Sqrt(v)
	// Bell and McCaffrey's degrees of freedom: v is a weighted sum of
	// squared residuals, Σ λ·χ²₁ with λ the eigenvalues of C·M·C (M the
	// residual maker, C the weights), carried to one χ² by matching two
	// moments, (Σλ)²/Σλ². With few items, or a few long replies that
	// carry the slope, they fall well below n − 2 and widen the interval.
	// With w = c², h the hat matrix (M = I − H) and u = x − x̄:
	// Σλ = Σ w·M_ii, and Σλ² = Σ_ik w_i·w_k·M_ik² = Σ w²(1 − 2h_ii) +
	// Σ_ik w_i·w_k·H_ik², where H_ik = 1/n + u_i·u_k/Sxx, so the double
	// sum opens into three single ones: linear in n, not quadratic, for
	// projects of many items.
	fn := float64(n)
	tr, tr2, sw, swu, swu2 := 0.0, 0.0, 0.0, 0.0, 0.0
	for i := range n {
		u := x[i] - xbar
		w := c[i] * c[i]
		hii := 1/fn + u*u/sxx
		tr += w * (1 - hii)
		tr2 += w * w * (1 - 2*hii)
		sw += w
		swu += w * u
		swu2 += w * u * u
	}
	tr2 += sw*sw/(fn*fn) + 2*swu*swu/(fn*sxx) + swu2*swu2/(sxx*sxx)
	df := float64(n - 2)
	if tr2 > 0 {
		df = min(df, tr*tr/tr2)
	}
	t := agreement.StudentTQuantile(0.975, df)
	lo, hi := bd-t*se, bd+t*se
	l.Defined = true
	l.Judge, l.People, l.Difference, l.Low, l.High = &bj, &bp, &bd, &lo, &hi
	switch {
	case lo > 0:
		l.Verdict = VerdictLonger
	case hi < 0:
		l.Verdict = VerdictShorter
	}
	return l
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, v := range xs {
		s += v
	}
	return s / float64(len(xs))
}
