package report

import (
	"context"
	"slices"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/store"
)

// ExperimentAltTests returns a copy of an experiment's result whose
// alternative annotator tests are the agreement report's: for each
// variant (raters, the variants' rater ids in the result's order) on each
// rubric item, the test Build runs for that rater with the same ε, on the
// same items (every item the variant and at least two people answered,
// not only the frozen gold items) and with the same rules. The
// experiment page, its API and `attune judge experiment` all call it, so
// that "can this judge replace an annotator?" has one answer wherever it
// is asked. res is not changed (it may be cached and shared).
func ExperimentAltTests(ctx context.Context, db *store.DB, p *attune.Project, res *experiment.Result, raters []int64, epsilon float64) (*experiment.Result, error) {
	rep, err := Build(ctx, db, p, Options{Judges: raters, Alt: AltOptions{Epsilon: epsilon, AllowUnusualEpsilon: true}})
	if err != nil {
		return nil, err
	}
	tests := map[string]map[int64]AltTest{}
	for _, it := range rep.RubricItems {
		tests[it.Key] = map[int64]AltTest{}
		for _, j := range it.Judges {
			tests[it.Key][j.Rater] = j.AltTest
		}
	}
	out := *res
	out.RubricItems = slices.Clone(res.RubricItems)
	for k := range out.RubricItems {
		ri := &out.RubricItems[k]
		ri.Variants = slices.Clone(ri.Variants)
		for v := range ri.Variants {
			if v >= len(raters) {
				continue
			}
			a, ok := tests[ri.Key][raters[v]]
			if !ok {
				// The variant has no answers here: no annotator shares an
				// item with it.
				reason := agreement.ReasonNoTestedHumans
				ri.Variants[v].AltTest = experiment.AltTest{Epsilon: epsilon, EpsilonUnusual: !agreement.AltEpsilonUsual(epsilon),
					Scoring: ri.Variants[v].AltTest.Scoring, WinningRate: experiment.Stat{Reason: reason}, AdvantageProbability: experiment.Stat{Reason: reason},
					Result: string(agreement.AltCannotTell), Reason: reason, MinItems: rep.AltTest.MinItems,
					Progress: agreement.AltProgress(rep.AltTest.MinItems, nil), Items: "shared"}
				continue
			}
			ri.Variants[v].AltTest = experimentAlt(a)
		}
	}
	return &out, nil
}

// experimentAlt writes a report's alt-test in the experiment's shape.
func experimentAlt(a AltTest) experiment.AltTest {
	st := func(s Stat) experiment.Stat { return experiment.Stat{Value: s.Value, Reason: s.Reason} }
	return experiment.AltTest{Epsilon: a.Epsilon, EpsilonUnusual: a.EpsilonUnusual, Scoring: a.Scoring, Humans: a.Tested,
		WinningRate: st(a.WinningRate), AdvantageProbability: st(a.AdvantageProbability),
		Result: a.Result, Passed: a.Passed, FewHumans: a.FewHumans, Reason: a.Reason, MinItems: a.MinItems, Progress: a.Progress, Items: "shared"}
}
