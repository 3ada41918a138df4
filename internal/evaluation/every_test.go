package evaluation_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/attune/attune/internal/evaluation"
)

// TestEstimateEveryIsEachEstimate: EstimateEvery reads the labels once
// for every rubric item and the safety gate, and gives what Estimate
// gives asked for each rubric item alone, safety gate check included.
func TestEstimateEveryIsEachEstimate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := outcomeProject(t)
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	all, err := evaluation.EstimateEvery(ctx, db, p, def, "@gpt")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(def.Items) {
		t.Fatalf("%d estimates, want %d", len(all), len(def.Items))
	}
	labelled := 0
	for i, it := range def.Items {
		one, err := evaluation.Estimate(ctx, db, evaluation.Query{ProjectID: p.ID, Judge: "@gpt", RubricItem: it.Key})
		if err != nil {
			t.Fatal(err)
		}
		// As published, since NaN (an interval not worked out) is never
		// equal to itself.
		got, err := json.Marshal(all[i])
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(one)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s at once:\n%s\nalone:\n%s", it.Key, got, want)
		}
		if one.Conclusion.SafetyGate == nil {
			t.Errorf("%s: no safety gate check", it.Key)
		}
		labelled += len(one.Systems)
	}
	if labelled == 0 {
		t.Error("no rubric item has an estimate for any system: the comparison says nothing")
	}
	// A rubric item's estimate scores the gate in the same pass as its
	// values; the gate's own estimate reads the sets on its own. Both
	// must come to the same check.
	one, err := evaluation.Estimate(ctx, db, evaluation.Query{ProjectID: p.ID, Judge: "@gpt", RubricItem: def.Items[0].Key})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := evaluation.Estimate(ctx, db, evaluation.Query{ProjectID: p.ID, Judge: "@gpt", Outcome: evaluation.OutcomeSafety})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(one.Conclusion.SafetyGate)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(gate.Conclusion)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the gate's check beside %s:\n%s\nthe gate's own estimate:\n%s", def.Items[0].Key, got, want)
	}
	if len(gate.Systems) == 0 {
		t.Error("the gate's estimate has no system: the comparison says nothing")
	}
}
