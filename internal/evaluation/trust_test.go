package evaluation_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// The store is what the flows declare they need.
var (
	_ evaluation.Source        = (*store.DB)(nil)
	_ evaluation.FailureSource = (*store.DB)(nil)
	_ evaluation.TrustSource   = (*store.DB)(nil)
)

// TestTrustFlow calibrates on a project worked by hand: on 50 items two
// people agree; the judge answers 40 of them as they do at confidence
// 0.95 and 10 otherwise at 0.55. At 90 % and alpha 0.05 the thresholds
// tested are 0.95 (40 kept, none against: 0.9^40 = 0.0148 ≤ 0.025) and
// 0.55 (50 kept, 10 against: not at 0.05), so the judge keeps confidence ≥
// 0.95. Of five items only the judge labelled, the three at 0.97 would be
// kept. Three answers record no certainty (one sample); on two items the
// people tie: both are left out and counted.
func TestTrustFlow(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-dialogue@2")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "trust", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	type judged struct {
		value string
		dist  map[string]float64
	}
	answers := map[string]judged{}
	for i := range 60 {
		id := fmt.Sprintf("i%02d", i)
		fmt.Fprintf(&items, `{"id":%q,"messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}]}`+"\n", id, i)
		switch {
		case i < 40: // people agree; the judge with them, sure
			fmt.Fprintf(&labels, "%s,ann,human,emotion,4\n%s,bo,human,emotion,4\n", id, id)
			answers[id] = judged{"4", map[string]float64{"4": 0.95, "3": 0.05}}
		case i < 50: // people agree; the judge not, unsure
			fmt.Fprintf(&labels, "%s,ann,human,emotion,4\n%s,bo,human,emotion,4\n", id, id)
			answers[id] = judged{"3", map[string]float64{"3": 0.55, "4": 0.45}}
		case i < 53: // the judge alone, sure
			answers[id] = judged{"4", map[string]float64{"4": 0.97, "5": 0.03}}
		case i < 55: // the judge alone, unsure
			answers[id] = judged{"4", map[string]float64{"4": 0.5, "5": 0.5}}
		case i < 58: // no certainty recorded
			fmt.Fprintf(&labels, "%s,ann,human,emotion,4\n", id)
			answers[id] = judged{"4", nil}
		default: // people tie
			fmt.Fprintf(&labels, "%s,ann,human,emotion,4\n%s,bo,human,emotion,3\n", id, id)
			answers[id] = judged{"4", map[string]float64{"4": 0.9, "3": 0.1}}
		}
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(items.String()), importer.Options{Source: "items.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportLabels(ctx, p.ID, strings.NewReader(labels.String()), store.LabelsImportOptions{Source: "labels.csv"}); err != nil {
		t.Fatal(err)
	}
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "sure", Provider: "openai", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, err := db.ItemIDRange(ctx, p.ID)
	if err != nil || hi-lo != 59 {
		t.Fatalf("items %d..%d: %v", lo, hi, err)
	}
	for id := lo; id <= hi; id++ {
		it, err := db.FindItem(ctx, p.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		a := answers[it.SourceID]
		l := store.JudgeLabel{Key: "emotion", Value: a.value, Method: "structured", PromptHash: "ph", Distribution: a.dist, Samples: []string{a.value}}
		if _, _, err := db.WriteJudgeAnswers(ctx, run, it.ID, []store.JudgeLabel{l}, 10); err != nil {
			t.Fatal(err)
		}
	}

	got, err := evaluation.Trust(ctx, db, evaluation.TrustQuery{ProjectID: p.ID, Judge: "sure", RubricItem: "emotion"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != 0.9 || got.Alpha != 0.05 || got.Calibration != 50 || got.NoConfidence != 3 || got.PeopleTied != 2 ||
		got.JudgeOnly != 5 || got.JudgeOnlyKept != 3 {
		t.Errorf("counts: %+v", got)
	}
	if !got.Found || got.Threshold != 0.95 || got.Kept != 40 || got.Coverage != 0.8 || got.Agreement != 1 {
		t.Errorf("rule: %+v", got.Trust)
	}
	if len(got.Steps) != 2 || math.Abs(got.Steps[0].PValue-math.Pow(0.9, 40)) > 1e-9 || got.Steps[1].Rejected {
		t.Errorf("steps: %+v", got.Steps)
	}
	want := agreement.TrustStep{Threshold: 0.55, Kept: 50, Disagreed: 10}
	if s := got.Steps[1]; s.Threshold != want.Threshold || s.Kept != want.Kept || s.Disagreed != want.Disagreed {
		t.Errorf("second step %+v", s)
	}

	// At 99 % nothing can be guaranteed on 50 items.
	strict, err := evaluation.Trust(ctx, db, evaluation.TrustQuery{ProjectID: p.ID, Judge: "sure", RubricItem: "emotion", Target: 0.99})
	if err != nil || strict.Found || strict.JudgeOnlyKept != 0 || strict.Reason == "" {
		t.Errorf("at 99 %%: %+v, %v", strict, err)
	}
	for _, q := range []evaluation.TrustQuery{{ProjectID: p.ID, RubricItem: "emotion"}, {ProjectID: p.ID, Judge: "sure"}} {
		if _, err := evaluation.Trust(ctx, db, q); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
	if _, err := evaluation.Trust(ctx, db, evaluation.TrustQuery{ProjectID: p.ID, Judge: "nobody", RubricItem: "emotion"}); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("an unknown judge: %v", err)
	}
}

func TestParseTrustTerms(t *testing.T) {
	for _, c := range []struct {
		target, alpha string
		t, a          float64
		bad           string
	}{
		{"", "", 0.9, 0.05, ""},
		{"95", "1%", 0.95, 0.01, ""},
		{"0.8", "0.1", 0.8, 0.1, ""},
		{"100", "", 0, 0, "target"},
		{"90", "0", 0, 0, "alpha"},
		{"abc", "", 0, 0, "target"},
	} {
		tt, aa, err := evaluation.ParseTrustTerms(c.target, c.alpha)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%q %q: %v, want a problem with %s", c.target, c.alpha, err, c.bad)
			}
			continue
		}
		if err != nil || math.Abs(tt-c.t) > 1e-12 || math.Abs(aa-c.a) > 1e-12 {
			t.Errorf("%q %q: %v %v %v", c.target, c.alpha, tt, aa, err)
		}
	}
}
