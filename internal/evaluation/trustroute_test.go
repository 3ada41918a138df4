package evaluation_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

var _ evaluation.TrustRouter = (*store.DB)(nil)

// TestTrustRouting turns trust routing on in a project worked by hand and
// follows every item. On 50 items two people agree on every rubric item;
// the judge answers 40 of them as they do at confidence 0.95 and 10
// otherwise at 0.55, on every rubric item, so each rubric item's threshold
// is 0.95 (TestTrustFlow works the numbers). Of seven items no person
// labelled, four the judge answered at 0.97 on every rubric item; two at
// 0.6 on validation; one with no certainty on emotion. Turning routing on
// keeps the four, their gold the judge's answers of method trusted_judge,
// held back from people's queue, and escalates the three: six annotators
// (overlap 2) claim exactly those three, twice each, and a seventh finds
// nothing. The gold export and the counts say how each was decided.
// Terms nothing can be guaranteed at route nothing; turning routing off
// gives the kept items back to people.
func TestTrustRouting(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-dialogue@2")
	def, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "routing", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	type judged struct {
		value string
		dist  map[string]float64
	}
	sure := judged{"4", map[string]float64{"4": 0.97, "5": 0.03}}
	answers := map[string]map[string]judged{} // source id → rubric item → answer
	for i := range 57 {
		id := fmt.Sprintf("i%02d", i)
		if i >= 50 {
			id = fmt.Sprintf("j%d", i-50)
		}
		fmt.Fprintf(&items, `{"id":%q,"messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}]}`+"\n", id, i)
		answers[id] = map[string]judged{}
		for _, it := range def.Items {
			var a judged
			switch {
			case i < 40:
				a = judged{"4", map[string]float64{"4": 0.95, "3": 0.05}}
			case i < 50:
				a = judged{"3", map[string]float64{"3": 0.55, "4": 0.45}}
			case (i == 54 || i == 55) && it.Key == "validation":
				a = judged{"4", map[string]float64{"4": 0.6, "3": 0.4}}
			case i == 56 && it.Key == "emotion":
				a = judged{"4", nil}
			default:
				a = sure
			}
			answers[id][it.Key] = a
			if i < 50 {
				fmt.Fprintf(&labels, "%s,ann,human,%s,4\n%s,bo,human,%s,4\n", id, it.Key, id, it.Key)
			}
		}
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(items.String()), importer.Options{Source: "items.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.ImportLabels(ctx, db, p, strings.NewReader(labels.String()), store.LabelsImportOptions{Source: "labels.csv"}); err != nil {
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
	if err != nil || hi-lo != 56 {
		t.Fatalf("items %d..%d: %v", lo, hi, err)
	}
	source := map[int64]string{}
	for id := lo; id <= hi; id++ {
		it, err := db.FindItem(ctx, p.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		source[id] = it.SourceID
		var ls []store.JudgeLabel
		for _, ri := range def.Items {
			a := answers[it.SourceID][ri.Key]
			ls = append(ls, store.JudgeLabel{Key: ri.Key, Value: a.value, Method: "structured", PromptHash: "ph", Distribution: a.dist, Samples: []string{a.value}})
		}
		if _, _, err := db.WriteJudgeAnswers(ctx, run, it.ID, ls, 10); err != nil {
			t.Fatal(err)
		}
	}
	lead, err := db.CreateUser(ctx, nil, store.NewUser{Email: "lead@example.org", Name: "Lead", Role: attune.RoleLead, PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}

	// Before the lead turns it on: the rule on every rubric item, nothing routed.
	st, err := evaluation.TrustStatus(ctx, db, p.ID, "sure")
	if err != nil {
		t.Fatal(err)
	}
	if st.Setting.On || st.Setting.Set || st.Setting.Target != 0.9 || !st.Guaranteed || len(st.Criteria) != len(def.Items) || st.Kept+st.Escalated != 0 {
		t.Fatalf("status before: %+v", st)
	}
	for _, c := range st.Criteria {
		if !c.Found || c.Threshold != 0.95 || c.Coverage != 0.8 {
			t.Errorf("%s: %+v", c.RubricItem, c.Trust)
		}
	}
	if _, err := evaluation.RouteTrust(ctx, db, p.ID, "sure", &lead.ID); !errors.Is(err, attune.ErrConflict) {
		t.Errorf("routing while off: %v", err)
	}

	on, err := evaluation.SetTrustRouting(ctx, db, evaluation.TrustChange{ProjectID: p.ID, ActorID: &lead.ID, Judge: "sure", Target: 0.9, Alpha: 0.05, On: true})
	if err != nil {
		t.Fatal(err)
	}
	if on.Routed == nil || *on.Routed != (store.TrustRouted{Kept: 4, Escalated: 3}) || on.Kept != 4 || on.Escalated != 3 || !on.Setting.On || on.Setting.UpdatedBy != "lead@example.org" {
		t.Fatalf("turned on: %+v routed %+v", on, on.Routed)
	}
	route := map[string]evaluation.TrustRouteJSON{}
	for _, r := range on.Routes {
		route[r.Item] = r
	}
	for _, id := range []string{"j0", "j1", "j2", "j3"} {
		if route[id].Decision != store.TrustKept {
			t.Errorf("%s: %+v, want kept", id, route[id])
		}
	}
	for id, why := range map[string]string{"j4": "0.6 on validation is below the threshold 0.95", "j5": "on validation", "j6": "no certainty on emotion"} {
		if r := route[id]; r.Decision != store.TrustEscalated || !strings.Contains(r.Reason, why) {
			t.Errorf("%s: %+v, want escalated for %q", id, r, why)
		}
	}
	held := heldItems(t, db, p.ID, source)
	if !slices.Equal(held, []string{"j0", "j1", "j2", "j3"}) {
		t.Errorf("held back from people: %v", held)
	}

	// People's queue: exactly the escalated items, each to the overlap.
	var claimed []string
	for n := range 7 {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("a%d@example.org", n), Name: "A", Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.AddMember(ctx, nil, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
		a, err := db.NextAssignment(ctx, p.ID, u.ID)
		if n == 6 {
			if !errors.Is(err, attune.ErrNoWork) {
				t.Errorf("seventh annotator: %v, %+v", err, a)
			}
			continue
		}
		if err != nil {
			t.Fatalf("annotator %d: %v", n, err)
		}
		claimed = append(claimed, source[a.ItemID])
	}
	slices.Sort(claimed)
	if !slices.Equal(claimed, []string{"j4", "j4", "j5", "j5", "j6", "j6"}) {
		t.Errorf("people's queue gave %v", claimed)
	}

	// Gold and its export say how each item was decided.
	g, err := db.FindGold(ctx, lo+50)
	if err != nil || g.Method != store.GoldTrustedJudge || g.Answers["emotion"] != "4" || !strings.Contains(g.Notes["emotion"], "trusted judge sure") {
		t.Errorf("gold of j0: %+v, %v", g, err)
	}
	if _, err := db.FindGold(ctx, lo+54); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("gold of escalated j4: %v", err)
	}
	counts, err := db.CountGold(ctx, p.ID)
	if err != nil || counts.Trusted != 4 {
		t.Errorf("gold counts %+v, %v", counts, err)
	}
	methods := map[string]string{}
	if _, err := db.ExportGold(ctx, p.ID, false, func([]export.Rater) error { return nil }, func(it *export.GoldItem) error {
		methods[it.ItemID] = it.Method
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id, m := range map[string]string{"j0": "trusted_judge", "j3": "trusted_judge", "j4": "", "j6": ""} {
		if methods[id] != m {
			t.Errorf("export method of %s: %q, want %q", id, methods[id], m)
		}
	}
	var trustedCopies int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM item_gold WHERE project_id = $1 AND trusted`, p.ID).Scan(&trustedCopies); err != nil || trustedCopies != 4 {
		t.Errorf("item_gold trusted copies: %d, %v", trustedCopies, err)
	}

	// A target no threshold reaches: routing is on, but keeps nothing.
	strict, err := evaluation.SetTrustRouting(ctx, db, evaluation.TrustChange{ProjectID: p.ID, ActorID: &lead.ID, Judge: "sure", Target: 0.99, On: true})
	if err != nil {
		t.Fatal(err)
	}
	if strict.Guaranteed || strict.Reason == "" || *strict.Routed != (store.TrustRouted{}) || strict.Setting.Alpha != 0.05 {
		t.Errorf("at 99 %%: %+v routed %+v", strict, strict.Routed)
	}
	if held := heldItems(t, db, p.ID, source); len(held) != 0 {
		t.Errorf("held at 99 %%: %v", held)
	}

	// Back on at 90 %, then off: the kept items go back to people.
	if _, err := evaluation.SetTrustRouting(ctx, db, evaluation.TrustChange{ProjectID: p.ID, ActorID: &lead.ID, Judge: "sure", Target: 0.9, On: true}); err != nil {
		t.Fatal(err)
	}
	if held := heldItems(t, db, p.ID, source); len(held) != 4 {
		t.Errorf("held on again: %v", held)
	}
	off, err := evaluation.SetTrustRouting(ctx, db, evaluation.TrustChange{ProjectID: p.ID, ActorID: &lead.ID, Judge: "sure", On: false})
	if err != nil {
		t.Fatal(err)
	}
	if off.Setting.On || off.Kept != 0 || off.Setting.Target != 0.9 {
		t.Errorf("off: %+v", off)
	}
	if held := heldItems(t, db, p.ID, source); len(held) != 0 {
		t.Errorf("held after off: %v", held)
	}
	if counts, err := db.CountGold(ctx, p.ID); err != nil || counts.Trusted != 0 {
		t.Errorf("gold after off: %+v, %v", counts, err)
	}
	if _, err := evaluation.SetTrustRouting(ctx, db, evaluation.TrustChange{ProjectID: p.ID, Judge: "sure", Target: 1.5, On: true}); !errors.Is(err, attune.ErrInvalid) {
		t.Errorf("target 1.5: %v", err)
	}
}

// heldItems lists the project's items held back from people's queues, by
// source id.
func heldItems(t *testing.T, db *store.DB, projectID int64, source map[int64]string) []string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT item_id FROM item_counts WHERE project_id = $1 AND held ORDER BY item_id`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, source[id])
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
