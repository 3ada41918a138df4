package evaluation

import (
	"context"
	"strings"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

// outcomeColumn reads every item the judge answered and scores its answer
// sets with the engine, as the report does: the judge's value of an item
// is the outcome of the judge's answer set (the mean over the judge's
// raters), the human value the mean of the outcomes of the people's
// answer sets — on pass and safety the share passing and the share
// failing the gate — or, with gold, the outcome of the gold answers. Only
// complete answer sets are scored: the engine would score a missing
// answer as ERROR, which says nothing of an item imported partial on
// purpose. An item with no complete judge set is left out; one with no
// complete human set is unlabelled.
func outcomeColumn(ctx context.Context, src Source, def *rubric.Definition, read store.EstimateRead, outcome string) (*store.EstimateColumn, error) {
	col, score := outcomeScorer(def, read.Gold, outcome)
	err := src.StreamEstimateSets(ctx, read, score)
	return col, err
}

// outcomeScorer returns the values outcomeColumn returns and the function
// that, given each item's answer sets in item order, gathers them.
func outcomeScorer(def *rubric.Definition, gold bool, outcome string) (*store.EstimateColumn, func(*store.EstimateSets) error) {
	value := outcomeOf(def, outcome)
	col := &store.EstimateColumn{}
	return col, func(it *store.EstimateSets) error {
		judge, nj := mean(value, it.Judge)
		if nj == 0 {
			return nil
		}
		human := it.People
		if gold {
			human = nil
			if it.Gold != nil {
				human = []map[string]string{it.Gold}
			}
		}
		h, nh := mean(value, human)
		col.Add(it.ItemID, it.System, judge, h, nh > 0)
		return nil
	}
}

// mean averages value over the sets it scores; n counts them.
func mean(value func(map[string]string) (float64, bool), sets []map[string]string) (m float64, n int) {
	sum := 0.0
	for _, set := range sets {
		if x, ok := value(set); ok {
			sum += x
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// outcomeOf returns the engine's output named outcome as a number for one
// answer set, ok false for a set it does not score (incomplete, or with
// no final score). Answer sets repeat a great deal, so each distinct one
// is scored once.
func outcomeOf(def *rubric.Definition, outcome string) func(map[string]string) (float64, bool) {
	type scored struct {
		x  float64
		ok bool
	}
	memo := map[string]scored{}
	var key strings.Builder
	return func(set map[string]string) (float64, bool) {
		key.Reset()
		for _, it := range def.Items {
			v := set[it.Key]
			if v == "" {
				return 0, false
			}
			key.WriteString(v)
			key.WriteByte(0)
		}
		if s, ok := memo[key.String()]; ok {
			return s.x, s.ok
		}
		answers := make(rubric.Answers, len(def.Items))
		for _, it := range def.Items {
			answers[it.Key] = rubric.Value(set[it.Key])
		}
		// The engine's outputs do not depend on the item's facts (they
		// only add warnings), so none are given, as in the report.
		var s scored
		if res, err := scoring.Score(def, answers, rubric.Facts{}); err == nil {
			switch outcome {
			case OutcomeFinal:
				if res.Score != nil {
					s = scored{*res.Score, true}
				}
			case OutcomePass:
				if res.Pass != nil {
					s = scored{share(*res.Pass), true}
				}
			case OutcomeSafety:
				s = scored{share(res.SafetyGateFailed), true}
			}
		}
		memo[key.String()] = s
		return s.x, s.ok
	}
}

func share(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
