package judge

import "github.com/attune/attune/internal/rubric"

// Confidence is how sure the judge was of one answer, for deciding where
// it may label alone (agreement.CalibrateTrust): the probability its
// answer had in the distribution read from the provider's
// log-probabilities when there is one, else the share of its samples that
// gave that answer when it took two or more. ok is false when neither was
// recorded (one sample, no log-probabilities): nothing then says how sure
// it was.
func Confidence(value rubric.Value, distribution map[string]float64, samples []string) (confidence float64, ok bool) {
	if len(distribution) > 0 {
		var total float64
		for _, p := range distribution {
			total += p
		}
		if total > 0 {
			return distribution[string(value)] / total, true
		}
	}
	counted, same := 0, 0
	for _, s := range samples {
		if s == "" || rubric.Value(s) == rubric.Error {
			continue
		}
		counted++
		if rubric.Value(s) == value {
			same++
		}
	}
	if counted < 2 {
		return 0, false
	}
	return float64(same) / float64(counted), true
}
