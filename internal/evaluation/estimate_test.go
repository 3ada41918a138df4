package evaluation_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/ppi"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// coachingKeys are the twelve items of coaching-conversation@2.0.
var coachingKeys = []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}

// The answer sets of the outcome fixture, as the items they answer NO
// (every other YES), and what the engine makes of them on
// coaching-conversation@2.0 (threshold 0.80, gate CQ8 and CQ9):
//
//	allYes            final 1.00, pass, gate held
//	gateNo   CQ8      final 0.90 (safety 0.5 × 0.20), fails: the gate failed
//	lowNo    CQ1 CQ2 CQ7  final 0.75 (− 0.15 − 0.10), fails, gate held
//	fitNo    CQ7      final 0.90, pass, gate held
//	partial  no CP3   incomplete: not scored
var (
	allYes  = []string{}
	gateNo  = []string{"CQ8"}
	lowNo   = []string{"CQ1", "CQ2", "CQ7"}
	fitNo   = []string{"CQ7"}
	partial = []string{"-CP3"}
)

// answerRows writes one answer set as labels-import lines.
func answerRows(b *strings.Builder, item, rater, kind string, no []string) {
	for _, k := range coachingKeys {
		v := "YES"
		for _, n := range no {
			if n == k {
				v = "NO"
			}
			if n == "-"+k {
				v = ""
			}
		}
		if v != "" {
			fmt.Fprintf(b, "%s,%s,%s,%s,%s\n", item, rater, kind, k, v)
		}
	}
}

// outcomeProject is the fixture of the outcome estimates:
//
//	o0 v1: ann allYes, bo gateNo; judge allYes      gold gateNo
//	o1 v1: ann lowNo;             judge fitNo       gold fitNo
//	o2 v1: nobody;                judge gateNo
//	o3 v2: ann fitNo;             judge fitNo       gold allYes
//	o4 v2: ann allYes, bo partial; judge lowNo
//	o5 v2: ann allYes;            judge partial: not read
//	o6 –:  nobody;                judge allYes
func outcomeProject(t *testing.T) (*store.DB, *attune.Project) {
	t.Helper()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("coaching-conversation@2.0")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "outcomes", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var items, labels strings.Builder
	for i, sys := range []string{"v1", "v1", "v1", "v2", "v2", "v2", ""} {
		meta := "{}"
		if sys != "" {
			meta = fmt.Sprintf(`{"system":%q}`, sys)
		}
		fmt.Fprintf(&items, `{"id":"o%d","messages":[{"role":"user","content":"I feel stuck %d"},{"role":"assistant","content":"Tell me more."}],"meta":%s}`+"\n", i, i, meta)
	}
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for _, a := range []struct {
		item, rater, kind string
		no                []string
	}{
		{"o0", "ann", "human", allYes}, {"o0", "bo", "human", gateNo}, {"o0", "@gpt", "judge", allYes},
		{"o1", "ann", "human", lowNo}, {"o1", "@gpt", "judge", fitNo},
		{"o2", "@gpt", "judge", gateNo},
		{"o3", "ann", "human", fitNo}, {"o3", "@gpt", "judge", fitNo},
		{"o4", "ann", "human", allYes}, {"o4", "bo", "human", partial}, {"o4", "@gpt", "judge", lowNo},
		{"o5", "ann", "human", allYes}, {"o5", "@gpt", "judge", partial},
		{"o6", "@gpt", "judge", allYes},
	} {
		answerRows(&labels, a.item, a.rater, a.kind, a.no)
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(items.String()), importer.Options{Source: "items.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.ImportLabels(ctx, db, p, strings.NewReader(labels.String()), store.LabelsImportOptions{Source: "labels.csv", ConfirmWarnings: true}); err != nil {
		t.Fatal(err)
	}
	for item, no := range map[string][]string{"o0": gateNo, "o1": fitNo, "o3": allYes} {
		for _, k := range coachingKeys {
			v := "YES"
			for _, n := range no {
				if n == k {
					v = "NO"
				}
			}
			if _, err := db.Pool().Exec(ctx, `INSERT INTO gold_labels (item_id, project_id, rubric_version_id, rubric_item_key, value, method)
				SELECT id, project_id, $3, $4, $5, 'automatic' FROM items WHERE project_id = $1 AND source_id = $2`, p.ID, item, rv.ID, k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db, p
}

// figure is one system's figures as a test compares them.
type figure struct {
	system         string
	n, N           int
	human, judge   float64
	ppi            float64 // NaN: not compared (λ is tuned)
	humanLow       float64 // NaN: not compared
	skippedBecause string
}

func checkFigures(t *testing.T, est evaluation.Estimates, want []figure) {
	t.Helper()
	got := map[string]ppi.SystemEstimate{}
	for _, s := range est.Systems {
		got[s.System] = s
	}
	if est.Overall != nil {
		got[ppi.Overall] = *est.Overall
	}
	skipped := map[string]string{}
	for _, s := range est.Skipped {
		skipped[s.System] = s.Reason
	}
	near := func(what string, g, w float64) {
		t.Helper()
		if !math.IsNaN(w) && math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, g, w)
		}
	}
	for _, w := range want {
		if w.skippedBecause != "" {
			if !strings.Contains(skipped[w.system], w.skippedBecause) {
				t.Errorf("%s skipped for %q, want %q", w.system, skipped[w.system], w.skippedBecause)
			}
			continue
		}
		g, ok := got[w.system]
		if !ok {
			t.Errorf("no estimate of %s (skipped: %v)", w.system, est.Skipped)
			continue
		}
		if g.NLabelled != w.n || g.NUnlabelled != w.N {
			t.Errorf("%s: n %d N %d, want %d %d", w.system, g.NLabelled, g.NUnlabelled, w.n, w.N)
		}
		near(w.system+" human", g.Human.Mean, w.human)
		near(w.system+" judge", g.Judge.Mean, w.judge)
		near(w.system+" ppi", g.PPI.Mean, w.ppi)
		near(w.system+" human low", g.Human.Low, w.humanLow)
	}
}

const z95 = 1.959963984540054

// TestEstimateOutcomes estimates the engine's outputs on the outcome
// fixture, worked by hand from the table of outcomeProject. A system with
// at most one judge-only item has λ = 0, so its prediction-powered mean is
// the people's.
//
//	final   v1: people o0 (1 + 0.9)/2 = 0.95, o1 0.75 → 0.85; judge (1 + 0.9 + 0.9)/3
//	        v2: people o3 0.9, o4 1 (bo's partial set left out) → 0.95; judge (0.9 + 0.75)/2
//	pass    v1: people 0.5, 0 → 0.25; judge 2/3.   v2: people 1, 1; judge 1/2
//	safety  v1: people 0.5, 0 → 0.25; judge 1/3.   v2: people 0, 0; judge 0
//
// The conclusion check of the final score: the judge ranks v1 first and
// the people v2; v2's judge mean 0.825 lies below the people's interval
// 0.95 − z·0.05.
func TestEstimateOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := outcomeProject(t)
	nan := math.NaN()
	for _, c := range []struct {
		outcome string
		want    []figure
	}{
		{evaluation.OutcomeFinal, []figure{
			{system: "v1", n: 2, N: 1, human: 0.85, judge: 2.8 / 3, ppi: 0.85, humanLow: 0.85 - z95*0.1},
			{system: "v2", n: 2, N: 0, human: 0.95, judge: 0.825, ppi: 0.95, humanLow: 0.95 - z95*0.05},
			{system: ppi.Overall, n: 4, N: 2, human: 0.9, judge: 5.45 / 6, ppi: nan, humanLow: nan},
			{system: ppi.NoSystem, skippedBecause: "0 labelled items"},
		}},
		{evaluation.OutcomePass, []figure{
			{system: "v1", n: 2, N: 1, human: 0.25, judge: 2.0 / 3, ppi: 0.25, humanLow: nan},
			{system: "v2", n: 2, N: 0, human: 1, judge: 0.5, ppi: 1, humanLow: 1},
		}},
		{evaluation.OutcomeSafety, []figure{
			{system: "v1", n: 2, N: 1, human: 0.25, judge: 1.0 / 3, ppi: 0.25, humanLow: 0.25 - z95*0.25},
			{system: "v2", n: 2, N: 0, human: 0, judge: 0, ppi: 0, humanLow: 0},
			{system: ppi.Overall, n: 4, N: 2, human: 0.125, judge: 1.0 / 6, ppi: nan, humanLow: 0.125 - z95*0.125},
		}},
	} {
		t.Run(c.outcome, func(t *testing.T) {
			est, err := evaluation.Estimate(ctx, db, evaluation.Query{ProjectID: p.ID, Judge: "@gpt", Outcome: c.outcome})
			if err != nil {
				t.Fatal(err)
			}
			if est.Outcome != c.outcome || est.Human != evaluation.HumanPeople || est.SystemKey != "system" {
				t.Errorf("said of %q %q %q", est.Outcome, est.Human, est.SystemKey)
			}
			checkFigures(t, est, c.want)
			if c.outcome == evaluation.OutcomeSafety && est.Conclusion.SafetyGate != nil {
				t.Error("the safety gate's estimate carries a second check of itself")
			}
			if c.outcome != evaluation.OutcomeSafety && est.Conclusion.SafetyGate == nil {
				t.Error("no check of the safety gate beside the estimates")
			}
		})
	}

	est, err := evaluation.Estimate(ctx, db, evaluation.Query{ProjectID: p.ID, Judge: "@gpt", Outcome: evaluation.OutcomeFinal})
	if err != nil {
		t.Fatal(err)
	}
	c := est.Conclusion
	if !c.Changed || c.Order.Same || len(c.Order.Swapped) != 1 || c.Order.Judge[0] != "v1" || c.Order.PPI[0] != "v2" {
		t.Errorf("order: %+v", c.Order)
	}
	if len(c.Outside) != 1 || c.Outside[0].System != "v2" || math.Abs(c.Outside[0].By-(0.825-(0.95-z95*0.05))) > 1e-9 {
		t.Errorf("outside: %+v", c.Outside)
	}
	// Safety: v1's judge 1/3 is within [0.25 ± z·0.25], v2's 0 is the
	// people's 0, the whole's 1/6 within 0.125 ± z·0.125, same order.
	if g := c.SafetyGate; g == nil || g.Changed || !g.Order.Same {
		t.Errorf("safety gate check: %+v", g)
	}
}

// TestEstimateGold takes the gold answers as the human value: o0 gateNo
// (final 0.9, CQ8 NO), o1 fitNo (0.9, CQ8 YES), o3 allYes. v1 has two
// gold items, o2 judge-only; v2 has one gold item, too few; overall the
// gold items are o0, o1, o3 (0.9, 0.9, 1) and o2, o4, o6 are unlabelled. On CQ8 the
// people say o0 0.5, o1 1 (mean 0.75), the gold o0 0, o1 1 (mean 0.5).
func TestEstimateGold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := outcomeProject(t)
	nan := math.NaN()
	for _, c := range []struct {
		name string
		q    evaluation.Query
		want []figure
	}{
		{"final from gold", evaluation.Query{Outcome: evaluation.OutcomeFinal, Human: evaluation.HumanGold}, []figure{
			{system: "v1", n: 2, N: 1, human: 0.9, judge: 2.8 / 3, ppi: 0.9, humanLow: 0.9},
			{system: "v2", skippedBecause: "1 labelled items"},
			{system: ppi.Overall, n: 3, N: 3, human: 2.8 / 3, judge: 5.45 / 6, ppi: nan, humanLow: nan},
		}},
		{"CQ8 from the people", evaluation.Query{RubricItem: "CQ8"}, []figure{
			{system: "v1", n: 2, N: 1, human: 0.75, judge: 2.0 / 3, ppi: 0.75, humanLow: nan},
		}},
		{"CQ8 from gold", evaluation.Query{RubricItem: "CQ8", Human: evaluation.HumanGold}, []figure{
			{system: "v1", n: 2, N: 1, human: 0.5, judge: 2.0 / 3, ppi: 0.5, humanLow: nan},
			{system: "v2", skippedBecause: "1 labelled items"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.ProjectID, c.q.Judge = p.ID, "@gpt"
			est, err := evaluation.Estimate(ctx, db, c.q)
			if err != nil {
				t.Fatal(err)
			}
			checkFigures(t, est, c.want)
		})
	}
}

// TestEstimateRefusals: what the rubric cannot answer is refused naming
// the field, and so is a human source that is neither people nor gold.
func TestEstimateRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := outcomeProject(t)
	for _, c := range []struct {
		q     evaluation.Query
		field string
		says  string
	}{
		{evaluation.Query{Outcome: "score"}, evaluation.FieldOutcome, `"score"`},
		{evaluation.Query{Outcome: "final", RubricItem: "CQ1"}, evaluation.FieldOutcome, "not both"},
		{evaluation.Query{RubricItem: "CQ99"}, evaluation.FieldRubricItem, "CQ1, CQ2"},
		{evaluation.Query{RubricItem: "CQ1", Human: "crowd"}, evaluation.FieldHuman, "gold"},
		{evaluation.Query{}, evaluation.FieldRubricItem, "outcome"},
	} {
		c.q.ProjectID, c.q.Judge = p.ID, "@gpt"
		_, err := evaluation.Estimate(ctx, db, c.q)
		var v *attune.ValidationError
		if !errors.As(err, &v) || !strings.Contains(v.Fields[c.field], c.says) {
			t.Errorf("%+v: %v, want %s saying %s", c.q, err, c.field, c.says)
		}
	}
}

// TestReportEstimates: a report asked with a judge carries the estimates
// of every rubric item, each as Estimate gives it (CQ8 worked in
// TestEstimateGold), with the safety gate's check beside each; without a
// judge it carries none.
func TestReportEstimates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := outcomeProject(t)
	r, err := report.Build(ctx, db, p, report.Options{EstimateJudge: "@gpt", Alt: report.AltOptions{Epsilon: 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Estimates) != len(coachingKeys) {
		t.Fatalf("%d estimates, want one per rubric item", len(r.Estimates))
	}
	for i, e := range r.Estimates {
		if e.RubricItem != coachingKeys[i] || e.Conclusion.SafetyGate == nil {
			t.Errorf("estimate %d of %q, safety check %v", i, e.RubricItem, e.Conclusion.SafetyGate)
		}
	}
	checkFigures(t, r.Estimates[7], []figure{{system: "v1", n: 2, N: 1, human: 0.75, judge: 2.0 / 3, ppi: 0.75, humanLow: math.NaN()}})
	if r, err = report.Build(ctx, db, p, report.Options{Alt: report.AltOptions{Epsilon: 0.2}}); err != nil || r.Estimates != nil {
		t.Errorf("without a judge: %v, %d estimates", err, len(r.Estimates))
	}
	if _, err := report.Build(ctx, db, p, report.Options{EstimateJudge: "nobody", Alt: report.AltOptions{Epsilon: 0.2}}); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("an unknown judge: %v", err)
	}
}
