package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// countedDirectly counts a project's labels from every item's counters:
// what CountLabels kept incrementally must always equal it.
func countedDirectly(t *testing.T, f *fixture) store.LabelCounts {
	t.Helper()
	var c store.LabelCounts
	err := f.db.Pool().QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE NOT c.pulled), count(*) FILTER (WHERE NOT c.pulled AND c.done < p.overlap),
		       coalesce(sum(least(c.done, p.overlap)) FILTER (WHERE NOT c.pulled), 0), count(*) FILTER (WHERE NOT c.pulled) * p.overlap
		FROM projects p JOIN item_counts c ON c.project_id = p.id WHERE p.id = $1 GROUP BY p.id`,
		f.project.ID).Scan(&c.Items, &c.Open, &c.Labels, &c.Needed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestProgressFollowsEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 12, annotators: 4})
	check := func(when string) {
		t.Helper()
		got, err := f.db.CountLabels(ctx, f.project.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := countedDirectly(t, f); got != want {
			t.Fatalf("%s: progress %+v, counted directly %+v", when, got, want)
		}
	}
	check("after import")

	// Annotators submit at once, on several connections (so on several
	// shards of the progress), each claiming the next in the same
	// transaction.
	var wg sync.WaitGroup
	for _, u := range f.annotators {
		wg.Go(func() {
			a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
			for i := 0; err == nil && i < 4; i++ {
				var res store.SubmitResult
				res, err = f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: u.ID,
					Answers: fullAnswers, ActiveMS: 1000, ClaimNext: true})
				if err == nil && res.Next == nil {
					err = res.NextErr
				}
				a = res.Next
			}
			if err != nil && !errors.Is(err, attune.ErrNoWork) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	check("after concurrent submits")
	c, err := f.db.CountLabels(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Labels == 0 {
		t.Fatal("no labels counted after the submits")
	}

	// Taking a labelled item out of the pool, and putting it back.
	var itemID int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT item_id FROM item_counts WHERE project_id = $1 AND done > 0 ORDER BY item_id LIMIT 1`,
		f.project.ID).Scan(&itemID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, itemID, false); err != nil {
		t.Fatal(err)
	}
	check("after a pull")
	if _, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, itemID, true); err != nil {
		t.Fatal(err)
	}
	check("after a return")

	// The workspace reads the same counts with the item.
	a, err := f.db.NextAssignment(ctx, f.project.ID, f.annotators[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.db.FindWorkspace(ctx, f.project.ID, a.ItemID, f.annotators[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := countedDirectly(t, f); w.Counts == nil || *w.Counts != want {
		t.Fatalf("workspace counts %+v, want %+v", w.Counts, want)
	}
}

// Nothing but the trigger on items removes an item's counters (no foreign
// key does it): deleted items, labelled or not, must leave none behind, and
// the progress must lose exactly them.
func TestDeletedItemsTakeTheirCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 6, annotators: 1})
	u := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, a, u)

	// The labelled item and two others, in one statement.
	tag, err := f.db.Pool().Exec(ctx, `DELETE FROM items WHERE project_id = $1 AND (id = $2 OR id IN (
		SELECT id FROM items WHERE project_id = $1 AND id <> $2 ORDER BY id LIMIT 2))`, f.project.ID, a.ItemID)
	if err != nil || tag.RowsAffected() != 3 {
		t.Fatalf("delete items: %v, %v", tag, err)
	}
	var orphans int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM item_counts c WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.id = c.item_id)`).
		Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Fatalf("%d counters of deleted items remain", orphans)
	}
	got, err := f.db.CountLabels(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.LabelCounts{Items: 3, Open: 3, Labels: 0, Needed: 6}); got != want || got != countedDirectly(t, f) {
		t.Fatalf("progress after deleting items %+v, want %+v (counted directly %+v)", got, want, countedDirectly(t, f))
	}
}

// No trigger makes an item's counters: ImportItems writes them, on both
// of its paths (straight into an empty project, and through the temporary
// table into one that has items), so every item must have exactly one
// counter row and the progress must count every item.
func TestImportCountsEveryItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 1})
	changed := testItem(2, "x")
	changed.Messages = []byte(`[{"role":"user","content":"changed"}]`)
	changed.SHA256 = fmt.Sprintf("%064x", 99999)
	res, err := importItems(f.db, f.project.ID, true, testItem(0, "x"), testItem(1, "x"), changed, testItem(3, "x"), testItem(4, "x"))
	if err != nil || res.Inserted != 2 || res.Updated != 1 {
		t.Fatalf("second import: %+v, %v", res, err)
	}
	var items, counted, uncounted int
	if err := f.db.Pool().QueryRow(ctx, `
		SELECT count(*), count(c.item_id), count(*) FILTER (WHERE c.item_id IS NULL)
		FROM items i LEFT JOIN item_counts c ON c.item_id = i.id WHERE i.project_id = $1`, f.project.ID).
		Scan(&items, &counted, &uncounted); err != nil {
		t.Fatal(err)
	}
	if items != 5 || counted != 5 || uncounted != 0 {
		t.Fatalf("%d items, %d counter rows, %d items without counters; want 5, 5, 0", items, counted, uncounted)
	}
	got, err := f.db.CountLabels(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.LabelCounts{Items: 5, Open: 5, Labels: 0, Needed: 10}); got != want {
		t.Fatalf("progress after imports %+v, want %+v", got, want)
	}
}

// The hash check accepts exactly 64 lower-case hexadecimal digits.
func TestItemHashCheck(t *testing.T) {
	t.Parallel()
	f := newProject(t, dbtest.New(t), projectOpts{items: 1, annotators: 1})
	hex64 := strings.Repeat("0123456789abcdef", 4)
	for i, tc := range []struct {
		hash string
		ok   bool
	}{
		{hex64, true},
		{strings.ToUpper(hex64), false},
		{hex64[:63], false},
		{hex64 + "0", false},
		{hex64[:63] + "g", false},
		{hex64[:63] + "\n", false},
		{hex64[:62] + "é", false},
		{"", false},
	} {
		it := testItem(10+i, "x")
		it.SHA256 = tc.hash
		_, err := importItems(f.db, f.project.ID, false, it)
		if (err == nil) != tc.ok {
			t.Errorf("hash %q: error %v, want accepted %v", tc.hash, err, tc.ok)
		}
	}
}
