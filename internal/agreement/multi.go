package agreement

import "fmt"

// Level is Krippendorff's level of measurement, which picks the difference
// function of alpha. The zero value is Nominal.
type Level int

const (
	// Nominal: any two different categories differ by 1.
	Nominal Level = iota
	// Ordinal: categories differ by the number of pairable values between
	// them, counted by marginal mid-ranks (Krippendorff 2011).
	Ordinal
	// Interval: categories differ by the squared difference of their values.
	Interval
	// Ratio: categories differ by ((v_c - v_k)/(v_c + v_k))².
	Ratio
)

var levelNames = [...]string{"nominal", "ordinal", "interval", "ratio"}

// String returns the name ParseLevel reads.
func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// ParseLevel returns the level named s: nominal, ordinal, interval or ratio.
// The empty string is nominal.
func ParseLevel(s string) (Level, error) {
	if s == "" {
		return Nominal, nil
	}
	for i, n := range levelNames {
		if n == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("agreement: unknown level %q (want nominal, ordinal, interval or ratio)", s)
}

// PercentAgreement returns the observed agreement p_a: over the items with at
// least two ratings, the mean share of pairs of their ratings that are the
// same category (Fleiss 1971; Gwet 2014). Undefined when no item has two
// ratings.
func PercentAgreement(u Units) Estimate {
	pa, n := observedAgreement(u, nil)
	if n == 0 {
		return undefined(ReasonNoPairable)
	}
	return defined(pa)
}

// FleissKappa returns Fleiss' kappa with Gwet's (2014) treatment of missing
// ratings: p_a as in PercentAgreement (weighted when w is not NoWeights),
// chance agreement p_e = Σ w(k,l) π_k π_l with π_k the mean over every rated
// item of the share of its ratings in category k, and kappa = (p_a - p_e) /
// (1 - p_e). Weights are computed over the scale's values. With no missing
// ratings and NoWeights this is Fleiss' (1971) kappa. Undefined when no item
// has two ratings, when p_e = 1 (no variation), or when the weights cannot
// be built over the scale.
func FleissKappa(u Units, w Weighting) Estimate {
	if u.Pairable() == 0 {
		return undefined(ReasonNoPairable)
	}
	wm, reason := unitWeights(u, w)
	if reason != "" {
		return undefined(reason)
	}
	pa, _ := observedAgreement(u, wm)
	pi := classShares(u)
	// 1 - p_e as a sum of non-negative terms, so that "no variation" is an
	// exact zero rather than a rounding residue.
	var pe, oneMinusPe float64
	for k := range pi {
		for l := range pi {
			pe += wm[k][l] * pi[k] * pi[l]
			oneMinusPe += (1 - wm[k][l]) * pi[k] * pi[l]
		}
	}
	if oneMinusPe <= 0 {
		return undefined(ReasonNoVariation)
	}
	return defined((pa - pe) / oneMinusPe)
}

// GwetAC1 returns Gwet's AC1 for any number of raters with missing ratings
// (Gwet 2014): p_a as in PercentAgreement, chance agreement
// p_e = Σ_k π_k (1 - π_k) / (q - 1) with π_k as in FleissKappa and q the
// number of categories on the declared scale (used or not), and
// AC1 = (p_a - p_e) / (1 - p_e). Undefined when no item has two ratings or
// the scale has fewer than two categories. When every rating is in one
// category AC1 is 1: p_e is 0 there, unlike kappa's.
func GwetAC1(u Units) Estimate { return GwetAC2(u, NoWeights) }

// GwetAC2 returns Gwet's AC2, the weighted AC1 (Gwet 2014): p_a weighted
// by w, p_e = T_w Σ_k π_k (1 - π_k) / (q (q - 1)) with T_w the sum of all
// weights. Weights are computed over the scale's values (OrdinalWeights over
// ranks). With NoWeights it equals GwetAC1. Undefined as GwetAC1, and when
// the weights cannot be built over the scale.
func GwetAC2(u Units, w Weighting) Estimate {
	if u.Pairable() == 0 {
		return undefined(ReasonNoPairable)
	}
	if u.scale.Len() < 2 {
		return undefined(ReasonFewCategories)
	}
	wm, reason := unitWeights(u, w)
	if reason != "" {
		return undefined(reason)
	}
	pa, _ := observedAgreement(u, wm)
	q := float64(u.scale.Len())
	var tw float64
	for _, row := range wm {
		for _, x := range row {
			tw += x
		}
	}
	var spread float64
	for _, p := range classShares(u) {
		spread += p * (1 - p)
	}
	pe := tw * spread / (q * (q - 1))
	if pe >= 1 {
		// Cannot happen with weights in [0,1] and q ≥ 2 (p_e ≤ T_w/q² < 1);
		// kept so that no weighting can produce a division by zero.
		return undefined(ReasonNoVariation)
	}
	return defined((pa - pe) / (1 - pe))
}

// KrippendorffAlpha returns Krippendorff's alpha at the given level
// (Krippendorff 2011): alpha = 1 - (n - 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck,
// with o the coincidence matrix (see Coincidence), n_c the pairable values in
// category c and n their total. Only pairable values count: items with a
// single rating drop out. The ordinal metric uses the marginal mid-ranks of
// the pairable values; interval and ratio use the scale's values. Alpha is at
// most 1 and may be negative. Undefined when no item has two ratings, when
// every pairable value is in one category (no variation), when interval or
// ratio is asked of a non-numeric scale, or ratio of negative values.
func KrippendorffAlpha(u Units, level Level) Estimate {
	q := 0
	if u.scale != nil {
		q = u.scale.Len()
	}
	// Marginals from integer counts, so that n and n_c are exact.
	nc := make([]float64, q)
	var n float64
	for _, x := range u.list {
		m := sum(x.Counts)
		if m < 2 {
			continue
		}
		for k, r := range x.Counts {
			nc[k] += float64(r * x.Weight)
		}
		n += float64(m * x.Weight)
	}
	if n == 0 {
		return undefined(ReasonNoPairable)
	}
	d2, reason := alphaMetric(u.scale, level, nc)
	if reason != "" {
		return undefined(reason)
	}
	o := Coincidence(u)
	var do, de float64
	for c := range q {
		for k := range q {
			do += o[c][k] * d2[c][k]
			de += nc[c] * nc[k] * d2[c][k]
		}
	}
	if de == 0 {
		return undefined(ReasonNoVariation)
	}
	return defined(1 - (n-1)*do/de)
}

// alphaMetric returns Krippendorff's squared difference δ²(c,k) for the
// level, or the reason it cannot be built.
func alphaMetric(s *Scale, level Level, nc []float64) ([][]float64, string) {
	q := len(nc)
	if (level == Interval || level == Ratio) && !s.Numeric() {
		return nil, ReasonNotNumeric
	}
	v := s.values
	if level == Ratio {
		for _, x := range v {
			if x < 0 {
				return nil, ReasonNegative
			}
		}
	}
	d2 := make([][]float64, q)
	for c := range d2 {
		d2[c] = make([]float64, q)
		for k := range d2[c] {
			if c == k {
				continue
			}
			var d float64
			switch level {
			case Nominal:
				d = 1
			case Ordinal:
				lo, hi := min(c, k), max(c, k)
				for g := lo; g <= hi; g++ {
					d += nc[g]
				}
				d -= (nc[c] + nc[k]) / 2
			case Interval:
				d = v[c] - v[k]
			case Ratio:
				// v[c]+v[k] > 0: values are distinct and non-negative.
				d = (v[c] - v[k]) / (v[c] + v[k])
			default:
				return nil, fmt.Sprintf("unknown level %v", level)
			}
			d2[c][k] = d * d
		}
	}
	return d2, ""
}

// observedAgreement returns Gwet's (weighted) p_a over the items with at least
// two ratings, and how many such items there are. A nil w is the identity.
func observedAgreement(u Units, w [][]float64) (float64, int) {
	var total float64
	n := 0
	for _, x := range u.list {
		m := sum(x.Counts)
		if m < 2 {
			continue
		}
		var a float64
		for k, rk := range x.Counts {
			if rk == 0 {
				continue
			}
			star := float64(rk)
			if w != nil {
				star = 0
				for l, rl := range x.Counts {
					star += w[k][l] * float64(rl)
				}
			}
			a += float64(rk) * (star - 1)
		}
		total += float64(x.Weight) * a / (float64(m) * float64(m-1))
		n += x.Weight
	}
	if n == 0 {
		return 0, 0
	}
	return total / float64(n), n
}

// classShares returns π_k: over every item with at least one rating, the mean
// share of its ratings in category k (Gwet 2014). The shares sum to 1.
func classShares(u Units) []float64 {
	pi := make([]float64, u.scale.Len())
	n := 0
	for _, x := range u.list {
		m := float64(sum(x.Counts))
		for k, r := range x.Counts {
			pi[k] += float64(x.Weight) * float64(r) / m
		}
		n += x.Weight
	}
	for k := range pi {
		pi[k] /= float64(n)
	}
	return pi
}

// unitWeights builds the weight matrix over the scale's values, or says why
// it cannot.
func unitWeights(u Units, w Weighting) ([][]float64, string) {
	wm, err := WeightMatrix(w, u.scale.values)
	if err != nil {
		if w == RatioWeights {
			return nil, ReasonNegative
		}
		return nil, err.Error()
	}
	return wm, ""
}
