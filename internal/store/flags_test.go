package store_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// flagItem has the annotator take their next item and skip it with a flag.
func (f *fixture) flagItem(t *testing.T, u *attune.User, reason, note string) *attune.Assignment {
	t.Helper()
	ctx := context.Background()
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.Skip(ctx, a.ID, u.ID, reason, note); err != nil {
		t.Fatal(err)
	}
	return a
}

func holdsOf(t *testing.T, db *store.DB, itemID int64) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), `SELECT holds FROM item_counts WHERE item_id = $1`, itemID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFlagsListResolveAndPool follows flags from the annotators' skips to
// the lead's resolutions: listed and counted by reason and status, pulled
// (the item leaves the pool, a holder cannot submit it, progress leaves it
// out), dismissed, fixed (the item comes back), each with who, when and how
// and an audit event.
func TestFlagsListResolveAndPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 3, annotators: 4})
	ann := f.annotators
	// With an overlap of 1, a skipped item goes to the next annotator: the
	// first three are all handed item-000.
	first := f.flagItem(t, ann[0], "broken", "cut off after one turn")
	second := f.flagItem(t, ann[1], "off-topic", "")
	if second.ItemID != first.ItemID {
		t.Fatalf("the skipped item was not handed on: %d then %d", first.ItemID, second.ItemID)
	}
	held, err := f.db.NextAssignment(ctx, f.project.ID, ann[2].ID)
	if err != nil || held.ItemID != first.ItemID {
		t.Fatalf("third annotator: %v, %v", held, err)
	}

	all, err := f.db.ListFlags(ctx, store.FlagFilter{ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != second.ID || all[1].ID != first.ID {
		t.Fatalf("flags, newest first: %+v", all)
	}
	if g := all[1]; g.Reason != "broken" || g.Note != "cut off after one turn" || g.Annotator != ann[0].Email ||
		g.ItemSourceID != "item-000" || g.Status() != attune.FlagOpen || !g.ItemInPool || g.FlaggedAt.IsZero() {
		t.Fatalf("first flag: %+v", g)
	}
	broken, err := f.db.ListFlags(ctx, store.FlagFilter{ProjectID: f.project.ID, Reason: "broken"})
	if err != nil || len(broken) != 1 || broken[0].ID != first.ID {
		t.Fatalf("broken only: %+v, %v", broken, err)
	}
	if limited, err := f.db.ListFlags(ctx, store.FlagFilter{ProjectID: f.project.ID, Limit: 1}); err != nil || len(limited) != 1 {
		t.Fatalf("limit 1: %+v, %v", limited, err)
	}
	c, err := f.db.CountFlags(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Open != 2 || c.Resolved != 0 || c.OpenByReason["broken"] != 1 || c.OpenByReason["off-topic"] != 1 ||
		c.OpenByReason["distressing"] != 0 || c.Pulled != 0 {
		t.Fatalf("counts: %+v", c)
	}

	// Dismissing closes one flag and leaves the item alone.
	res, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: second.ID,
		How: attune.ResolveDismissed, Note: "fine as it is"})
	if err != nil || res.Flags != 1 || res.Pulled || res.ItemSourceID != "item-000" {
		t.Fatalf("dismiss: %+v, %v", res, err)
	}
	if _, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: second.ID,
		How: attune.ResolvePulled}); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("resolving twice: %v", err)
	}
	// A flag is found only in its own project.
	if _, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID + 1000, FlagID: first.ID,
		How: attune.ResolvePulled}); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("another project's flag: %v", err)
	}
	if _, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: first.ID,
		How: attune.ResolvePulled, Note: strings.Repeat("x", attune.MaxResolutionNote+1)}); !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("a note too long: %v", err)
	}

	// Taking the item out of the pool.
	res, err = f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: first.ID, How: attune.ResolvePulled})
	if err != nil || res.Flags != 1 || !res.Pulled {
		t.Fatalf("pull: %+v, %v", res, err)
	}
	// The annotator who held it can no longer submit it...
	_, err = f.db.SubmitLabels(ctx, store.Submission{AssignmentID: held.ID, UserID: ann[2].ID, Answers: fullAnswers})
	if !errors.Is(err, attune.ErrConflict) || !strings.Contains(attune.PublicMessage(err), "out of the pool") {
		t.Fatalf("submitting a pulled item: %v", err)
	}
	// ...and is handed another item, their hold on it released.
	next, err := f.db.NextAssignment(ctx, f.project.ID, ann[2].ID)
	if err != nil || next.ItemID == first.ItemID {
		t.Fatalf("after the pull: %+v, %v", next, err)
	}
	if h := holdsOf(t, f.db, first.ItemID); h != 0 {
		t.Fatalf("the pulled item still has %d holds", h)
	}
	pr, err := f.db.Progress(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Items != 2 || pr.Pulled != 1 || pr.ByLabels[0]+pr.ByLabels[1] != 2 {
		t.Fatalf("progress: %+v", pr)
	}
	pulled, err := f.db.ListPulledItems(ctx, f.project.ID, 0)
	if err != nil || len(pulled) != 1 || pulled[0].SourceID != "item-000" || pulled[0].PulledBy != f.lead.Email {
		t.Fatalf("pulled items: %+v, %v", pulled, err)
	}

	resolved, err := f.db.ListFlags(ctx, store.FlagFilter{ProjectID: f.project.ID, Status: attune.FlagResolved})
	if err != nil || len(resolved) != 2 {
		t.Fatalf("resolved: %+v, %v", resolved, err)
	}
	byID := map[int64]attune.Flag{resolved[0].ID: resolved[0], resolved[1].ID: resolved[1]}
	if g := byID[first.ID]; g.Resolution != attune.ResolvePulled || g.ResolvedBy != f.lead.Email || g.ResolvedAt.IsZero() || g.ItemInPool {
		t.Fatalf("pulled flag: %+v", g)
	}
	if g := byID[second.ID]; g.Resolution != attune.ResolveDismissed || g.ResolutionNote != "fine as it is" {
		t.Fatalf("dismissed flag: %+v", g)
	}
	if open, err := f.db.ListFlags(ctx, store.FlagFilter{ProjectID: f.project.ID, Status: attune.FlagOpen}); err != nil || len(open) != 0 {
		t.Fatalf("open after resolving: %+v, %v", open, err)
	}

	// Fixed: two flags on one item, the item taken out by hand; marking
	// one fixed resolves both and puts the item back.
	third := f.flagItem(t, ann[3], "other", "the reply is in French")
	fourth := f.flagItem(t, ann[0], "broken", "")
	if third.ItemID != fourth.ItemID {
		t.Fatalf("want two flags on one item: %d and %d", third.ItemID, fourth.ItemID)
	}
	if changed, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, third.ItemID, false); err != nil || !changed {
		t.Fatalf("take out by hand: %v, %v", changed, err)
	}
	res, err = f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: third.ID, How: attune.ResolveFixed})
	if err != nil || res.Flags != 2 || !res.Returned {
		t.Fatalf("fixed: %+v, %v", res, err)
	}
	if changed, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, third.ItemID, true); err != nil || changed {
		t.Fatalf("putting back an item in the pool: %v, %v", changed, err)
	}
	// Putting back the first item is reversible too.
	if changed, src, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, first.ItemID, true); err != nil || !changed || src != "item-000" {
		t.Fatalf("put back: %v %q %v", changed, src, err)
	}
	if _, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID+1000, first.ItemID, true); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("another project's item: %v", err)
	}
	c, err = f.db.CountFlags(ctx, f.project.ID)
	if err != nil || c.Open != 0 || c.Resolved != 4 || c.Pulled != 0 {
		t.Fatalf("counts at the end: %+v, %v", c, err)
	}

	got := auditActions(t, f.db, "flag.")
	if len(got) != 3 || !strings.Contains(got[0], `"how": "dismissed"`) || !strings.Contains(got[0], `"note": "fine as it is"`) ||
		!strings.Contains(got[1], `"how": "pulled"`) || !strings.Contains(got[2], `"flags": "2"`) {
		t.Fatalf("flag audit = %q", got)
	}
	if pool := auditActions(t, f.db, "item."); len(pool) != 4 || !strings.HasPrefix(pool[0], "item.pull item-000") ||
		!strings.HasPrefix(pool[2], "item.return") || !strings.HasPrefix(pool[3], "item.return item-000") {
		t.Fatalf("pool audit = %q", pool)
	}
}

// TestPulledItemIsNotHandedOut: an item out of the pool goes to nobody,
// however much room it has, and comes back when a lead puts it back.
func TestPulledItemIsNotHandedOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 2, annotators: 2})
	var pulledID int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND source_id = 'item-000'`, f.project.ID).Scan(&pulledID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, pulledID, false); err != nil {
		t.Fatal(err)
	}
	for _, u := range f.annotators {
		a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil || a.ItemID == pulledID {
			t.Fatalf("%s was handed %+v (%v); item-000 is out of the pool", u.Email, a, err)
		}
		f.submit(t, a, u)
		if a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID); !errors.Is(err, attune.ErrNoWork) {
			t.Fatalf("%s: want no work with item-000 out of the pool, got %+v, %v", u.Email, a, err)
		}
	}
	if _, _, err := f.db.SetItemInPool(ctx, f.lead.ID, f.project.ID, pulledID, true); err != nil {
		t.Fatal(err)
	}
	a, err := f.db.NextAssignment(ctx, f.project.ID, f.annotators[0].ID)
	if err != nil || a.ItemID != pulledID {
		t.Fatalf("after putting it back: %+v, %v", a, err)
	}
}

// TestExportFlags writes the flags export: one row per flag, oldest first,
// the annotator's note neutralised in CSV as every export's text is.
func TestExportFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 2})
	first := f.flagItem(t, f.annotators[0], "broken", `=HYPERLINK("http://x","y")`)
	if _, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: first.ID,
		How: attune.ResolvePulled, Note: "@cmd"}); err != nil {
		t.Fatal(err)
	}
	f.flagItem(t, f.annotators[1], "distressing", "")
	var b bytes.Buffer
	n, err := export.Write(ctx, f.db, &b, f.project.ID, export.Flags, export.CSV, false)
	if err != nil || n != 2 {
		t.Fatalf("export: %d rows, %v", n, err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("csv: %v, %d records", err, len(recs))
	}
	if h := strings.Join(recs[0], ","); h != "item_id,system,reason,note,annotator,flagged_at,status,resolution,resolved_by,resolved_at,resolution_note,in_pool" {
		t.Fatalf("header = %s", h)
	}
	r1, r2 := recs[1], recs[2]
	if r1[0] != "item-000" || r1[1] != "" || r1[2] != "broken" || r1[3] != `'=HYPERLINK("http://x","y")` || r1[4] != f.annotators[0].Email ||
		r1[6] != "resolved" || r1[7] != "pulled" || r1[8] != f.lead.Email || r1[9] == "" || r1[10] != "'@cmd" || r1[11] != "false" {
		t.Fatalf("first row = %q", r1)
	}
	// item-000 was out of the pool, so the second annotator flagged
	// item-001; their flag is open, with empty resolution cells.
	if r2[0] != "item-001" || r2[2] != "distressing" || r2[3] != "" || r2[6] != "open" || r2[7] != "" || r2[9] != "" || r2[11] != "true" {
		t.Fatalf("second row = %q", r2)
	}
	b.Reset()
	if n, err := export.Write(ctx, f.db, &b, f.project.ID, export.Flags, export.JSONL, false); err != nil || n != 2 {
		t.Fatalf("jsonl: %d, %v", n, err)
	}
	if line := strings.SplitN(b.String(), "\n", 2)[0]; !strings.Contains(line, `"note":"=HYPERLINK(\"http://x\",\"y\")"`) ||
		!strings.Contains(line, `"in_pool":false`) {
		t.Fatalf("jsonl line = %s", line)
	}
}
