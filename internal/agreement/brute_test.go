package agreement

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The functions below compute each statistic straight from its published
// definition over the raw raters × items table, with none of the count
// shortcuts of the package, so that the two can be compared on random data.

// bruteAlpha is Krippendorff's alpha by its pairwise-disagreement definition:
// D_o averages δ² over the ordered pairs of values within each unit (a unit
// of m values weighted 1/(m-1)), D_e over all ordered pairs of pairable
// values, alpha = 1 - D_o/D_e.
func bruteAlpha(m matrix, s *Scale, level Level) Estimate {
	var units [][]int
	var all []int
	for i := range m[0] {
		var vals []int
		for j := range m {
			if m[j][i] >= 0 {
				vals = append(vals, m[j][i])
			}
		}
		if len(vals) >= 2 {
			units = append(units, vals)
			all = append(all, vals...)
		}
	}
	if len(all) == 0 {
		return undefined(ReasonNoPairable)
	}
	if (level == Interval || level == Ratio) && !s.Numeric() {
		return undefined(ReasonNotNumeric)
	}
	ng := make([]float64, s.Len())
	for _, v := range all {
		ng[v]++
	}
	v := s.Values()
	delta := func(c, k int) float64 {
		if c == k {
			return 0
		}
		switch level {
		case Ordinal:
			lo, hi := min(c, k), max(c, k)
			d := -(ng[c] + ng[k]) / 2
			for g := lo; g <= hi; g++ {
				d += ng[g]
			}
			return d * d
		case Interval:
			return (v[c] - v[k]) * (v[c] - v[k])
		case Ratio:
			d := (v[c] - v[k]) / (v[c] + v[k])
			return d * d
		}
		return 1
	}
	n := float64(len(all))
	var do, de float64
	for _, vals := range units {
		for a := range vals {
			for b := range vals {
				if a != b {
					do += delta(vals[a], vals[b]) / float64(len(vals)-1)
				}
			}
		}
	}
	for a := range all {
		for b := range all {
			if a != b {
				de += delta(all[a], all[b])
			}
		}
	}
	if de == 0 {
		return undefined(ReasonNoVariation)
	}
	return defined(1 - (do/n)/(de/(n*(n-1))))
}

// bruteGwet returns Fleiss' kappa (Gwet's missing-data form) and Gwet's AC2
// from rater-level loops: p_a averages w over the ordered pairs of distinct
// raters of each item with two or more ratings; π_k averages each rated
// item's share of k.
func bruteGwet(m matrix, s *Scale, w Weighting) (fleiss, ac Estimate) {
	q := s.Len()
	wm, werr := WeightMatrix(w, s.Values())
	if werr != nil {
		wm = make([][]float64, q)
		for k := range wm {
			wm[k] = make([]float64, q)
		}
	}
	pi := make([]float64, q)
	var pa float64
	rated, pairable := 0, 0
	for i := range m[0] {
		var vals []int
		for j := range m {
			if m[j][i] >= 0 {
				vals = append(vals, m[j][i])
			}
		}
		if len(vals) == 0 {
			continue
		}
		rated++
		for _, v := range vals {
			pi[v] += 1 / float64(len(vals))
		}
		if len(vals) < 2 {
			continue
		}
		pairable++
		var agree float64
		for a := range vals {
			for b := range vals {
				if a != b {
					agree += wm[vals[a]][vals[b]]
				}
			}
		}
		pa += agree / float64(len(vals)*(len(vals)-1))
	}
	if pairable == 0 {
		return undefined(ReasonNoPairable), undefined(ReasonNoPairable)
	}
	pa /= float64(pairable)
	if werr != nil {
		ac = undefined(ReasonNegative)
		if q < 2 {
			ac = undefined(ReasonFewCategories)
		}
		return undefined(ReasonNegative), ac
	}
	var pe, rest, tw, spread float64
	for k := range q {
		pi[k] /= float64(rated)
	}
	for k := range q {
		spread += pi[k] * (1 - pi[k])
		for l := range q {
			pe += wm[k][l] * pi[k] * pi[l]
			rest += (1 - wm[k][l]) * pi[k] * pi[l]
			tw += wm[k][l]
		}
	}
	fleiss = undefined(ReasonNoVariation)
	if rest > 0 {
		fleiss = defined((pa - pe) / rest)
	}
	ac = undefined(ReasonFewCategories)
	if q >= 2 {
		pg := tw * spread / float64(q*(q-1))
		ac = defined((pa - pg) / (1 - pg))
	}
	return fleiss, ac
}

// brutePercent is the mean share of agreeing rater pairs.
func brutePercent(m matrix) Estimate {
	var sum float64
	n := 0
	for i := range m[0] {
		var vals []int
		for j := range m {
			if m[j][i] >= 0 {
				vals = append(vals, m[j][i])
			}
		}
		if len(vals) < 2 {
			continue
		}
		agree := 0
		for a := range vals {
			for b := range vals {
				if a != b && vals[a] == vals[b] {
					agree++
				}
			}
		}
		sum += float64(agree) / float64(len(vals)*(len(vals)-1))
		n++
	}
	if n == 0 {
		return undefined(ReasonNoPairable)
	}
	return defined(sum / float64(n))
}

// paired returns the two raters' answers on the items both rated.
func paired(a, b []int) (xs, ys []int) {
	for i := range a {
		if a[i] >= 0 && b[i] >= 0 {
			xs, ys = append(xs, a[i]), append(ys, b[i])
		}
	}
	return xs, ys
}

// bruteKappa is Cohen's (scott=false) or Scott's kappa with chance agreement
// as the mean weight over all pairs of one answer of each rater (Cohen) or
// of two answers from the pooled answers (Scott).
func bruteKappa(a, b []int, s *Scale, w Weighting, scott bool) Estimate {
	xs, ys := paired(a, b)
	if len(xs) == 0 {
		return undefined(ReasonNoPairable)
	}
	wm, _ := WeightMatrix(w, s.Positions())
	n := float64(len(xs))
	var po, pe, rest float64
	for i := range xs {
		po += wm[xs[i]][ys[i]] / n
	}
	left, right := xs, ys
	if scott {
		left = slices.Concat(xs, ys)
		right = left
	}
	nn := float64(len(left) * len(right))
	for _, x := range left {
		for _, y := range right {
			pe += wm[x][y] / nn
			rest += (1 - wm[x][y]) / nn
		}
	}
	if rest == 0 {
		return undefined(ReasonNoVariation)
	}
	return defined((po - pe) / rest)
}

// averageRanks ranks x, ties sharing their mean rank.
func averageRanks(x []int) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return x[a] - x[b] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && x[idx[j]] == x[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

func bruteSpearman(a, b []int) Estimate {
	xs, ys := paired(a, b)
	if len(xs) == 0 {
		return undefined(ReasonNoPairable)
	}
	rx, ry := averageRanks(xs), averageRanks(ys)
	var mx, my float64
	for i := range rx {
		mx += rx[i] / float64(len(rx))
		my += ry[i] / float64(len(ry))
	}
	var sxy, sxx, syy float64
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	if slices.Min(xs) == slices.Max(xs) || slices.Min(ys) == slices.Max(ys) {
		return undefined(ReasonNoVariation)
	}
	return defined(sxy / math.Sqrt(sxx*syy))
}

func bruteKendall(a, b []int) Estimate {
	xs, ys := paired(a, b)
	if len(xs) == 0 {
		return undefined(ReasonNoPairable)
	}
	var p, q, tx, ty, n0 float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			n0++
			dx, dy := xs[i]-xs[j], ys[i]-ys[j]
			switch {
			case dx == 0 && dy == 0:
				tx++
				ty++
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case (dx > 0) == (dy > 0):
				p++
			default:
				q++
			}
		}
	}
	if n0 == tx || n0 == ty {
		return undefined(ReasonNoVariation)
	}
	return defined((p - q) / math.Sqrt((n0-tx)*(n0-ty)))
}

// metricScale has unevenly spaced values, so that values and positions
// differ and interval, ratio and AC2 weights see the difference.
func metricScale(t testing.TB, q int) *Scale {
	return mustScale(t, []string{"0", "1", "3", "4.5", "10", "11"}[:q]...)
}

func TestAgainstBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		raters := 1 + rng.IntN(6)
		items := 1 + rng.IntN(30)
		q := 1 + rng.IntN(6)
		m := randomMatrix(rng, raters, items, q, rng.Float64()*0.6)
		s := metricScale(t, q)
		if trial%3 == 0 {
			s = mustScale(t, []string{"YES", "NO", "NA", "MAYBE", "X", "Y"}[:q]...)
		}
		compareBrute(t, s, m)
		if t.Failed() {
			t.Fatalf("trial %d: raters %d items %d q %d scale %v: %v", trial, raters, items, q, s, m)
		}
	}
}

// compareBrute checks every count-based statistic against its brute-force
// definition, on counts grouped by Ratings.Units and on one unit per item.
func compareBrute(t *testing.T, s *Scale, m matrix) {
	t.Helper()
	const tol = 1e-9
	grouped, err := ratingsFromMatrix(t, s, m).Units(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []Units{grouped, itemUnits(t, s, m)} {
		if got, want := PercentAgreement(u), brutePercent(m); !near(got, want, tol) {
			t.Errorf("percent agreement = %+v, want %+v", got, want)
		}
		for _, level := range []Level{Nominal, Ordinal, Interval, Ratio} {
			if got, want := KrippendorffAlpha(u, level), bruteAlpha(m, s, level); !near(got, want, tol) {
				t.Errorf("alpha %v = %+v, want %+v", level, got, want)
			}
		}
		for _, w := range []Weighting{NoWeights, LinearWeights, QuadraticWeights, OrdinalWeights, RadicalWeights, RatioWeights} {
			fleiss, ac := bruteGwet(m, s, w)
			if got := FleissKappa(u, w); !near(got, fleiss, tol) {
				t.Errorf("fleiss %v = %+v, want %+v", w, got, fleiss)
			}
			if got := GwetAC2(u, w); !near(got, ac, tol) {
				t.Errorf("ac2 %v = %+v, want %+v", w, got, ac)
			}
		}
	}
	for a := range m {
		for b := range m {
			if a == b {
				continue
			}
			c := pairTable(t, s, m[a], m[b])
			for _, w := range []Weighting{NoWeights, LinearWeights, QuadraticWeights, OrdinalWeights} {
				if got, want := CohenKappa(c, w), bruteKappa(m[a], m[b], s, w, false); !near(got, want, tol) {
					t.Errorf("cohen %v (%d,%d) = %+v, want %+v", w, a, b, got, want)
				}
				if got, want := ScottPi(c, w), bruteKappa(m[a], m[b], s, w, true); !near(got, want, tol) {
					t.Errorf("scott %v (%d,%d) = %+v, want %+v", w, a, b, got, want)
				}
			}
			if got, want := Spearman(c), bruteSpearman(m[a], m[b]); !near(got, want, tol) {
				t.Errorf("spearman (%d,%d) = %+v, want %+v", a, b, got, want)
			}
			if got, want := KendallTauB(c), bruteKendall(m[a], m[b]); !near(got, want, tol) {
				t.Errorf("kendall (%d,%d) = %+v, want %+v", a, b, got, want)
			}
		}
	}
}
