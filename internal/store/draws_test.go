package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/ppi"
	"github.com/attune/attune/internal/store"
)

// drawFixture is a project of n items, the first half of system v1 and
// the rest v2, with one annotator.
func drawFixture(t *testing.T, n int) *fixture {
	t.Helper()
	f := newProject(t, dbtest.New(t), projectOpts{items: n, annotators: 2, overlap: 1})
	if _, err := f.db.Pool().Exec(context.Background(), `
		UPDATE items SET meta = jsonb_build_object('system', CASE WHEN substr(source_id, 6)::int < $2 THEN 'v1' ELSE 'v2' END)
		WHERE project_id = $1`, f.project.ID, n/2); err != nil {
		t.Fatal(err)
	}
	return f
}

// claimAll claims and labels items as u until the queue is empty, and
// returns the items given.
func claimAll(t *testing.T, f *fixture, u *attune.User) []int64 {
	t.Helper()
	var got []int64
	for {
		a, err := f.db.NextAssignment(context.Background(), f.project.ID, u.ID)
		if errors.Is(err, attune.ErrNoWork) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.ItemID)
		f.submit(t, a, u)
	}
}

func itemIDs(d store.Draw) []int64 {
	var ids []int64
	for _, it := range d.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// TestDrawHoldsBackAndClaimGetsDrawnItemsOnly: an item labelled before the
// first draw stays as it was; the first draw holds back every other one,
// so people are given the drawn items only, and an item imported later
// waits for a draw too. The draw is stored with its seed, reproduces from
// it, and is audited.
func TestDrawHoldsBackAndClaimGetsDrawnItemsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := drawFixture(t, 10)
	ann := f.annotators[0]
	first, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, first, ann)

	d, err := evaluation.Draw(ctx, f.db, evaluation.DrawQuery{ProjectID: f.project.ID, ActorID: &f.lead.ID, K: 3, System: "v2", Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if d.Seed != 42 || d.K != 3 || len(d.Items) != 3 || d.System != "v2" || d.SystemKey != "system" || d.Actor != f.lead.Email {
		t.Fatalf("draw = %+v", d)
	}
	// The pool was the v2 items in id order; the seed reproduces the pick.
	var pool []string
	rows, err := f.db.Pool().Query(ctx, `SELECT i.id::text FROM items i WHERE i.project_id = $1 AND i.meta ->> 'system' = 'v2' ORDER BY i.id`, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		pool = append(pool, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	again, err := ppi.Draw(pool, 3, 42)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, s := range again.IDs {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if !slices.Equal(itemIDs(d), want) {
		t.Errorf("drawn %v, the seed gives %v (pool %v)", itemIDs(d), want, pool)
	}

	// Another item arrives after the first draw: it is held back too.
	if _, err := f.db.ImportItems(ctx, f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		return emit([]store.ImportItem{testItem(50, "late")})
	}); err != nil {
		t.Fatal(err)
	}
	got := claimAll(t, f, f.annotators[1])
	slices.Sort(got)
	sorted := slices.Clone(itemIDs(d))
	slices.Sort(sorted)
	if !slices.Equal(got, sorted) {
		t.Fatalf("the annotator was given %v, want exactly the drawn %v", got, sorted)
	}
	if n := f.count(t, `SELECT count(*) FROM item_counts WHERE project_id = $1 AND held`, f.project.ID); n != 10+1-1-3 {
		t.Errorf("%d items held back, want the 7 neither labelled nor drawn", n)
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE action = 'draw.create' AND project_id = $1 AND details ->> 'seed' = '42'`, f.project.ID); n != 1 {
		t.Errorf("%d audit events of the draw", n)
	}
	list, err := f.db.ListDraws(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Seed != 42 || !slices.Equal(itemIDs(list[0]), itemIDs(d)) {
		t.Errorf("listed %+v", list)
	}
	pools, err := f.db.DrawPool(ctx, f.project.ID, "system")
	if err != nil {
		t.Fatal(err)
	}
	// v1 lost the item labelled first; v2 the three drawn; the late
	// import names no system.
	if pools["v1"] != 4 || pools["v2"] != 2 || pools[store.NoSystem] != 1 {
		t.Errorf("pools = %v", pools)
	}
}

// TestDrawRefusals: k of 0 or below and k beyond the pool are refused
// naming k, and nothing is stored, not even the switch to drawn queues.
func TestDrawRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := drawFixture(t, 6)
	for _, c := range []struct {
		q    evaluation.DrawQuery
		want string
	}{
		{evaluation.DrawQuery{K: 0}, "at least one"},
		{evaluation.DrawQuery{K: -2}, "at least one"},
		{evaluation.DrawQuery{K: 4, System: "v1"}, `only 3 judge-only items of system "v1"`},
		{evaluation.DrawQuery{K: 7}, "only 6 judge-only items"},
		{evaluation.DrawQuery{K: 1, System: "v9"}, `only 0 judge-only items of system "v9"`},
	} {
		c.q.ProjectID, c.q.ActorID = f.project.ID, &f.lead.ID
		_, err := evaluation.Draw(ctx, f.db, c.q)
		var v *attune.ValidationError
		if !errors.As(err, &v) || v.Fields[evaluation.FieldK] == "" || !strings.Contains(v.Fields[evaluation.FieldK], c.want) {
			t.Errorf("%+v: %v, want k refused saying %q", c.q, err, c.want)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM item_counts WHERE project_id = $1 AND held`, f.project.ID) +
		f.count(t, `SELECT count(*) FROM draws`) + f.count(t, `SELECT count(*) FROM projects WHERE drawn_queue`); n != 0 {
		t.Errorf("a refused draw left %d things behind", n)
	}
	if got := claimAll(t, f, f.annotators[0]); len(got) != 6 {
		t.Errorf("after refused draws the queue gave %d items, want all 6", len(got))
	}
}

// TestConcurrentDrawsNeverDrawAnItemTwice: eight draws of 5 from 40 items
// at once draw 40 different items, and the ninth finds none left.
func TestConcurrentDrawsNeverDrawAnItemTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := drawFixture(t, 40)
	var wg sync.WaitGroup
	draws := make([]store.Draw, 8)
	errs := make([]error, 8)
	for i := range draws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			draws[i], errs[i] = evaluation.Draw(ctx, f.db, evaluation.DrawQuery{ProjectID: f.project.ID, ActorID: &f.lead.ID, K: 5})
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, d := range draws {
		if errs[i] != nil {
			t.Fatalf("draw %d: %v", i, errs[i])
		}
		for _, id := range itemIDs(d) {
			if seen[id] {
				t.Errorf("item %d drawn twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d items drawn, want 40", len(seen))
	}
	if _, err := evaluation.Draw(ctx, f.db, evaluation.DrawQuery{ProjectID: f.project.ID, ActorID: &f.lead.ID, K: 1}); err == nil || !strings.Contains(err.Error(), "only 0") {
		t.Errorf("a draw from an empty pool: %v", err)
	}
	if n := f.count(t, `SELECT count(DISTINCT item_id) FROM draw_items`); n != 40 {
		t.Errorf("%d items stored as drawn", n)
	}
}

// TestEstimateSaysItRestsOnDraws: once every labelled item was drawn, the
// estimate's sample says so, with the seed and how many drawn items are
// labelled; an item labelled outside a draw brings the caveat back.
func TestEstimateSaysItRestsOnDraws(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := drawFixture(t, 8)
	d, err := evaluation.Draw(ctx, f.db, evaluation.DrawQuery{ProjectID: f.project.ID, ActorID: &f.lead.ID, K: 4, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i := range 8 {
		fmt.Fprintf(&csv, "item-%03d,j1,judge,CQ1,YES\n", i)
	}
	for _, it := range d.Items[:3] {
		fmt.Fprintf(&csv, "%s,Ann,human,CQ1,YES\n", it.SourceID)
	}
	if _, err := f.importLabelsCSV(t, csv.String()); err != nil {
		t.Fatal(err)
	}
	q := evaluation.Query{ProjectID: f.project.ID, Judge: "j1", RubricItem: "CQ1"}
	est, err := evaluation.Estimate(ctx, f.db, q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(est.Sample, "drawn by attune") || !strings.Contains(est.Sample, "seeds 7") || !strings.Contains(est.Sample, "3 of the 4 drawn items") {
		t.Errorf("sample = %q", est.Sample)
	}
	var outside string
	for i := range 8 {
		id := fmt.Sprintf("item-%03d", i)
		if !slices.ContainsFunc(d.Items, func(it store.DrawnItem) bool { return it.SourceID == id }) {
			outside = id
			break
		}
	}
	if _, err := f.importLabelsCSV(t, "item,rater,rater_kind,rubric_item,value\n"+outside+",Ann,human,CQ1,NO\n"); err != nil {
		t.Fatal(err)
	}
	if est, err = evaluation.Estimate(ctx, f.db, q); err != nil {
		t.Fatal(err)
	}
	if est.Sample != ppi.SampleCaveat {
		t.Errorf("with an item labelled outside the draws, sample = %q", est.Sample)
	}
}
