package agreement

import (
	"encoding/json"
	"fmt"
)

// ReasonFewInformative is the Reason of a NoInterval withheld by a figure's
// Reach: the figure is shown, but too few items carry what it measures for
// an interval to bound it.
const ReasonFewInformative = "not enough informative items to bound it"

// NoInterval says why a defined figure that was bootstrapped has no
// interval. Its JSON, the same in the report, the CLI and the API, is
// {"reason"} when every resample gave the figure back
// (ReasonNoResampleSpread) and {"reason", "informative_items",
// "min_informative_items"} when its Reach withheld it.
type NoInterval struct {
	Reason string
	// Informative counts the items that inform the figure, by its Reach;
	// Minimum is how many it needs. Both are 0 unless the Reach withheld
	// the interval.
	Informative, Minimum int
}

// String is the reason as a lead reads it, with the counts when there are.
func (n NoInterval) String() string {
	if n.Minimum == 0 {
		return n.Reason
	}
	return fmt.Sprintf("%s (%d of the %d it needs)", n.Reason, n.Informative, n.Minimum)
}

// MarshalJSON encodes the NoInterval as described on it.
func (n NoInterval) MarshalJSON() ([]byte, error) {
	if n.Minimum == 0 {
		return json.Marshal(struct {
			Reason string `json:"reason"`
		}{n.Reason})
	}
	return json.Marshal(struct {
		Reason      string `json:"reason"`
		Informative int    `json:"informative_items"`
		Minimum     int    `json:"min_informative_items"`
	}{n.Reason, n.Informative, n.Minimum})
}

// Reach is a figure's rule for showing its interval: which items inform
// the figure and how many of them it needs. A chance-corrected figure
// measures agreement beyond what the answers' spread would give by
// chance, so it is informed only by the items that show that spread;
// when they are very few, the intervals of TestIntervalCoverage fail to
// hold the true figure however they are taken, and a bound would claim
// a precision the items do not give. The figure itself is still shown.
// The zero Reach never withholds: percent agreement and the rank
// correlations, which held their intervals in every cell of the grid,
// have no minimum.
type Reach struct {
	// Distant counts the items with an answer two or more categories from
	// the modal answer (the most common one over all answers), the items
	// a weighted figure's chance term rests on; otherwise the items with
	// any answer other than the modal one. On a scale where no category
	// is two from the modal answer (YES/NO, or 1–3 with 2 the most
	// common) a distant Reach is ChanceReach.
	Distant bool
	// Minimum is the fewest informative items that get an interval.
	Minimum int
}

// The minimums, chosen from TestIntervalCoverage's grid (300 data sets of
// 500 replicates a cell; the floor there is 0.900) as the smallest that
// lift every cell to 0.93 while withholding next to nothing from 100
// items on:
//
//   - ChanceReach, 2 items with an answer other than the modal one, for
//     the unweighted figures (nominal alpha, Fleiss' and Cohen's kappa,
//     Scott's pi, AC1). With 90 % YES, three raters who rarely disagree
//     and 30 items, alpha and Fleiss' kappa were held 0.926 with intervals
//     on one such item and 0.956 from two, withholding 17 % of data sets
//     there instead of the 14 % every resample already withholds, and
//     none at 100 items. AC1 was held 0.98 either way; it keeps the same
//     minimum so that the figures over the same items show or withhold
//     their intervals together.
//   - A distant Reach of 1 for weighted kappa and ordinal (interval,
//     ratio) alpha. On 1–5 with 90 % one answer and raters right 60 % of
//     the time, quadratic kappa at 30 items was held 0.887 (two raters)
//     and 0.883 (three): a sample with no item far from the common answer
//     (one in five) gives a kappa well below the true one, and resamples
//     that cannot show otherwise. With one such item it was held 0.959
//     and 0.976 (withholding 19 % and 17 % there), ordinal alpha 0.971
//     and 0.968; at 100 items at most 1 % of data sets were withheld.
//   - A distant Reach of 2 for weighted AC2. Its chance term gives distant
//     items less weight than kappa's, so one such item did not lift it:
//     0.913 → 0.906 of two raters at 30 items; from two it was held 0.936
//     (withholding about half of those data sets, which rarely hold two
//     distant items), and at 100 items it withheld at most 4 %.
var ChanceReach = Reach{Minimum: 2}

// KappaReach is the Reach of Cohen's kappa with weights w.
func KappaReach(w Weighting) Reach {
	if w == NoWeights {
		return ChanceReach
	}
	return Reach{Distant: true, Minimum: 1}
}

// AlphaReach is the Reach of Krippendorff's alpha at level l.
func AlphaReach(l Level) Reach {
	if l == Nominal {
		return ChanceReach
	}
	return Reach{Distant: true, Minimum: 1}
}

// AC2Reach is the Reach of Gwet's AC2 with weights w.
func AC2Reach(w Weighting) Reach {
	if w == NoWeights {
		return ChanceReach
	}
	return Reach{Distant: true, Minimum: 2}
}

// OfUnits counts the items of u that inform the figure and returns the
// count with the minimum it needs (the Reach's own, or ChanceReach's when
// the scale has no category two from the modal answer).
func (r Reach) OfUnits(u Units) (informative, minimum int) {
	if r.Minimum == 0 || u.scale == nil {
		return 0, r.Minimum
	}
	total := make([]int, u.scale.Len())
	for _, x := range u.list {
		for k, c := range x.Counts {
			total[k] += c * x.Weight
		}
	}
	from, rule := r.onScale(total)
	m := modal(total)
	for _, x := range u.list {
		for k, c := range x.Counts {
			if c > 0 && abs(k-m) >= from {
				informative += x.Weight
				break
			}
		}
	}
	return informative, rule.Minimum
}

// OfPairs is OfUnits for the items of a two-rater table: an item informs
// the figure when either rater's answer does.
func (r Reach) OfPairs(c Contingency) (informative, minimum int) {
	if r.Minimum == 0 || c.scale == nil {
		return 0, r.Minimum
	}
	total := make([]int, len(c.cells))
	for k, row := range c.cells {
		for l, x := range row {
			total[k] += x
			total[l] += x
		}
	}
	from, rule := r.onScale(total)
	m := modal(total)
	for k, row := range c.cells {
		for l, x := range row {
			if abs(k-m) >= from || abs(l-m) >= from {
				informative += x
			}
		}
	}
	return informative, rule.Minimum
}

// onScale returns how many categories from the modal answer an answer must
// be to count, given the answers' totals per category, and the Reach that
// applies on this scale.
func (r Reach) onScale(total []int) (int, Reach) {
	m := modal(total)
	if r.Distant && (m >= 2 || len(total)-1-m >= 2) {
		return 2, r
	}
	if r.Distant {
		return 1, ChanceReach
	}
	return 1, r
}

// modal returns the category with the most answers, the first of ties.
func modal(total []int) int {
	m := 0
	for k, x := range total {
		if x > total[m] {
			m = k
		}
	}
	return m
}

// WithholdUnits applies figure i's Reach rules[i] to its bootstrapped
// estimate es[i] over the units u: an interval resting on fewer
// informative items than the Reach needs is replaced by a NoInterval
// saying so, with both counts. Estimates without an interval are left as
// they are. len(rules) must not exceed len(es).
func WithholdUnits(es []Estimate, u Units, rules ...Reach) {
	for i, r := range rules {
		if es[i].CI != nil {
			es[i].withhold(r.OfUnits(u))
		}
	}
}

// WithholdPairs is WithholdUnits for figures of a two-rater table.
func WithholdPairs(es []Estimate, c Contingency, rules ...Reach) {
	for i, r := range rules {
		if es[i].CI != nil {
			es[i].withhold(r.OfPairs(c))
		}
	}
}

func (e *Estimate) withhold(informative, minimum int) {
	if informative < minimum {
		e.CI = nil
		e.NoCI = &NoInterval{Reason: ReasonFewInformative, Informative: informative, Minimum: minimum}
	}
}
