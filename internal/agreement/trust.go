package agreement

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Trust or escalate: a judge may label alone only the items on which its
// agreement with people is guaranteed. From human-labelled items, each
// with the judge's confidence in its answer and whether that answer
// agreed with people, CalibrateTrust picks the lowest confidence
// threshold t such that, with probability at least 1 − Alpha over the
// calibration items, the judge agrees with people on at least Target of
// the items whose confidence is ≥ t. Items below t go to people.
//
// The guarantee comes from fixed-sequence testing (the method of Jung,
// Brahman and Choi's "Trust or Escalate"): thresholds are tested from the
// most confident down; at each, the null "agreement above t is below
// Target" is rejected when the binomial tail of the disagreements seen is
// at most Alpha, and testing stops at the first threshold not rejected.
// Tested in a fixed order and stopped at the first failure, every test may
// use the full Alpha: a false guarantee needs the first true null reached
// to be rejected, which happens with probability at most Alpha.
//
// The thresholds tested are those that keep 1/trustGrid of the items by
// confidence, then 2/trustGrid, and so on: few enough tests that each
// has the items to reject, fine enough that the last one passed is near
// the best. They depend only on the confidences, never on whether the
// judge agreed.
//
// Thresholds keeping too few items for any test to reject them (with no
// disagreement at all the tail is Target^n, so n must reach
// log Alpha / log Target) are passed over rather than ending the sequence:
// whether a threshold is passed over depends on how many items it keeps,
// never on whether the judge agreed on them.

// Judged is one human-labelled item as trust calibration reads it: the
// judge's confidence in its answer (a probability from the provider's
// log-probabilities, or the share of repeated samples that gave the same
// answer) and whether the judge's answer agreed with people's.
type Judged struct {
	Confidence float64
	Agrees     bool
}

// TrustOptions are the lead's terms: the agreement wanted on the items the
// judge keeps, and the error level of the guarantee.
type TrustOptions struct {
	Target float64 // e.g. 0.9: the judge agrees with people on ≥ 90 % of its items
	Alpha  float64 // e.g. 0.05: the guarantee holds with probability ≥ 0.95
}

// TrustStep is one threshold tested: how many calibration items it keeps,
// how many of those the judge disagreed on, and the test's p-value.
type TrustStep struct {
	Threshold float64 `json:"threshold"`
	Kept      int     `json:"kept"`
	Disagreed int     `json:"disagreed"`
	PValue    float64 `json:"p_value"`
	Level     float64 `json:"level"`
	Rejected  bool    `json:"rejected"`
}

// Trust is the calibrated rule. When Found, the judge keeps items whose
// confidence is ≥ Threshold: Coverage is the share of calibration items
// that is, and Agreement the judge's agreement on them. When not Found,
// no threshold could be guaranteed and every item goes to people; Reason
// says why. Steps lists the thresholds tested, in order.
type Trust struct {
	Found     bool        `json:"found"`
	Threshold float64     `json:"threshold"`
	Kept      int         `json:"kept"`
	Coverage  float64     `json:"coverage"`
	Agreement float64     `json:"agreement"`
	Reason    string      `json:"reason,omitempty"`
	Steps     []TrustStep `json:"steps"`
}

// Keeps says whether the rule lets the judge's answer stand on an item of
// the given confidence.
func (t Trust) Keeps(confidence float64) bool { return t.Found && confidence >= t.Threshold }

// MinTrustItems is the fewest items a threshold must keep for its test to
// be able to reject at all, at the given terms.
func MinTrustItems(o TrustOptions) int {
	return int(math.Ceil(math.Log(o.Alpha)/math.Log(o.Target) - 1e-9))
}

// Check says what is wrong with the terms, or nil: the target and the
// error level are each a share strictly between 0 and 1. Every path that
// takes a lead's terms (a calibration, the stored setting of trust
// routing) holds them to it.
func (o TrustOptions) Check() error {
	switch {
	case !(o.Target > 0 && o.Target < 1):
		return fmt.Errorf("target agreement must be between 0 and 1 (exclusive), not %v", o.Target)
	case !(o.Alpha > 0 && o.Alpha < 1):
		return fmt.Errorf("the guarantee's error level must be between 0 and 1 (exclusive), not %v", o.Alpha)
	}
	return nil
}

// trustGrid is how many thresholds CalibrateTrust tests at most.
const trustGrid = 20

// trustLevel is the share of Alpha given to the i-th of n tests: half to
// the first, the rest evenly, so that an early test with few items that
// fails does not end the search, while a run of rejections carries its
// whole level on.
func trustLevel(i, n int, alpha float64) float64 {
	if n == 1 {
		return alpha
	}
	if i == 0 {
		return alpha / 2
	}
	return alpha / 2 / float64(n-1)
}

// CalibrateTrust finds the lowest confidence threshold whose agreement is
// guaranteed at the options' terms, testing thresholds from the highest
// confidence down.
func CalibrateTrust(items []Judged, o TrustOptions) (Trust, error) {
	if err := o.Check(); err != nil {
		return Trust{}, err
	}
	for i, it := range items {
		if math.IsNaN(it.Confidence) || it.Confidence < 0 || it.Confidence > 1 {
			return Trust{}, fmt.Errorf("item %d: confidence must be between 0 and 1, not %v", i+1, it.Confidence)
		}
	}
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b Judged) int { return cmp.Compare(b.Confidence, a.Confidence) })
	minKept := MinTrustItems(o)
	out := Trust{Steps: []TrustStep{}}
	// The thresholds to test, each with the items it keeps; passed-over
	// ones are dropped before any level is given out.
	type candidate struct {
		t               float64
		kept, disagreed int
	}
	var cands []candidate
	disagreed, kept := 0, 0
	for step := 1; step <= trustGrid && kept < len(sorted); step++ {
		want := max(1, (step*len(sorted)+trustGrid-1)/trustGrid)
		if want <= kept {
			continue
		}
		t := sorted[want-1].Confidence // with every item tied at it
		for ; kept < len(sorted) && sorted[kept].Confidence >= t; kept++ {
			if !sorted[kept].Agrees {
				disagreed++
			}
		}
		if kept >= minKept {
			cands = append(cands, candidate{t, kept, disagreed})
		}
	}
	carried := 0.0
	for i, c := range cands {
		level := carried + trustLevel(i, len(cands), o.Alpha)
		p := BinomialAtMost(c.disagreed, c.kept, 1-o.Target)
		s := TrustStep{Threshold: c.t, Kept: c.kept, Disagreed: c.disagreed, PValue: p, Level: level, Rejected: p <= level}
		out.Steps = append(out.Steps, s)
		carried = 0
		if s.Rejected {
			carried = level
			out.Found, out.Threshold, out.Kept = true, c.t, c.kept
			out.Agreement = 1 - float64(c.disagreed)/float64(c.kept)
		}
	}
	switch {
	case out.Found:
		out.Coverage = float64(out.Kept) / float64(len(items))
	case len(items) < minKept:
		out.Reason = fmt.Sprintf("too few labelled items: a guarantee of %.0f %% agreement at level %.0f %% needs at least %d, and there are %d",
			100*o.Target, 100*(1-o.Alpha), minKept, len(items))
	default:
		out.Reason = fmt.Sprintf("no confidence threshold keeps the judge's agreement at %.0f %% with %.0f %% certainty on these items",
			100*o.Target, 100*(1-o.Alpha))
	}
	return out, nil
}

// BinomialAtMost is P(X ≤ k) for X binomial with n trials of probability p.
func BinomialAtMost(k, n int, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n || p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	// P(X ≤ k) = I_{1−p}(n − k, k + 1).
	return regIncBeta(float64(n-k), float64(k+1), 1-p, p)
}
