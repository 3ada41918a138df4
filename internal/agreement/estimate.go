package agreement

import (
	"encoding/json"
	"math"
)

// Reasons a statistic is undefined. They are the Reason of an undefined
// Estimate and the text of the summary's notes; callers may compare them.
const (
	// ReasonNoPairable: no item has two ratings (or, for a pair of raters, no
	// item was rated by both), so there is nothing to compare.
	ReasonNoPairable = "no pairable items: no item was rated by two or more raters"
	// ReasonFewRaters: the data have fewer than two raters.
	ReasonFewRaters = "fewer than two raters"
	// ReasonNoVariation: every comparable answer is in one category (or, with
	// weights, every pair of answers earns full credit), so chance agreement
	// is 1 and the statistic is 0/0.
	ReasonNoVariation = "no variation: every answer is in one category, so chance agreement is 1 and the statistic is 0/0"
	// ReasonFewCategories: the declared scale has fewer than two categories,
	// which Gwet's AC1/AC2 divide by q-1.
	ReasonFewCategories = "the scale has fewer than two categories"
	// ReasonNotTwoRaters: a pairwise statistic asked of data that do not have
	// exactly two raters.
	ReasonNotTwoRaters = "defined for exactly two raters"
	// ReasonNotNumeric: the interval or ratio level asked of a scale whose
	// labels are not numbers.
	ReasonNotNumeric = "the interval and ratio levels need numeric categories"
	// ReasonUnordered: a rank statistic asked of categories that have no
	// order (words at the nominal level).
	ReasonUnordered = "the categories have no order: rank correlations need numbers or an ordinal level"
	// ReasonNegative: the ratio level or ratio weights asked of a scale with
	// negative values or only zero.
	ReasonNegative = "ratio metrics need non-negative values, not all zero"
	// ReasonNoResampleSpread is the NoCI of an agreement figure whose every
	// bootstrap replicate equals it, as when no item shows a disagreement:
	// the resamples cannot tell how far off the figure may be.
	ReasonNoResampleSpread = "too few items for an interval: no resample of them gives another value (no item shows a disagreement)"
)

// Estimate is the value of one statistic on one data set. When Defined is
// false, Value is 0 and Reason says why (one of the Reason constants); Value
// is never NaN or infinite. CI is set only when a bootstrap was asked for and
// at least one replicate was defined; NoCI says why a defined estimate
// that was bootstrapped has none when the replicates were defined but no
// interval could be trusted: every resample gave the figure back
// (ReasonNoResampleSpread), or too few items inform it
// (ReasonFewInformative, set by WithholdUnits and WithholdPairs).
type Estimate struct {
	Value   float64
	Defined bool
	Reason  string
	CI      *ConfidenceInterval
	NoCI    *NoInterval
}

// ConfidenceInterval is a bootstrap confidence interval.
type ConfidenceInterval struct {
	// Lower and Upper bound the interval.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// Level is the confidence level, e.g. 0.95.
	Level float64 `json:"level"`
	// Replicates is the number of bootstrap replicates drawn.
	Replicates int `json:"replicates"`
	// Defined is how many of them gave a defined statistic; the percentiles
	// are taken over those. Fewer than Replicates means some resamples had,
	// say, no variation, and the interval should be read with care.
	Defined int `json:"defined"`
	// Method names how the bounds were taken from the replicates:
	// MethodWideBCa for agreement figures, MethodBCa for statistics over
	// items (BootstrapItems).
	Method string `json:"method"`
}

func defined(v float64) Estimate {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		// Every formula guards its denominators, so this is a bug; still,
		// never hand a NaN to a caller.
		return undefined("numerical failure")
	}
	return Estimate{Value: v, Defined: true}
}

func undefined(reason string) Estimate { return Estimate{Reason: reason} }

// MarshalJSON encodes a defined estimate as its value and an undefined one as
// null. The reason and interval are not part of it; Summary carries them.
func (e Estimate) MarshalJSON() ([]byte, error) {
	if !e.Defined {
		return []byte("null"), nil
	}
	return json.Marshal(e.Value)
}
