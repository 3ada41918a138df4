package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

func TestWorkspaceDraftsFollowTheAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 4, annotators: 2})
	ann, other := f.annotators[0], f.annotators[1]
	pid := f.project.ID

	a, err := f.db.NextAssignment(ctx, pid, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.db.FindWorkspace(ctx, pid, a.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Assignment == nil || w.Assignment.ID != a.ID || w.Answers != nil || w.Draft != nil || w.PrevItem != 0 || w.CurrentItem != a.ItemID {
		t.Fatalf("fresh workspace = %+v", w)
	}
	if w.Item.ID != a.ItemID || len(w.Item.Messages) != 2 || w.Item.Turns != 1 {
		t.Fatalf("item = %+v", w.Item)
	}

	// A draft is kept while the item is held, and read back.
	d := store.Draft{Answers: map[string]string{"CQ1": "YES"}, Rationales: map[string]string{"CQ1": "clear"}, Rationale: "so far", ActiveMS: 4200}
	if ok, err := f.db.SaveDraft(ctx, pid, a.ItemID, ann.ID, d); err != nil || !ok {
		t.Fatalf("save draft = %v, %v", ok, err)
	}
	d.ActiveMS = 5000
	if ok, err := f.db.SaveDraft(ctx, pid, a.ItemID, ann.ID, d); err != nil || !ok {
		t.Fatalf("save draft again = %v, %v", ok, err)
	}
	w, err = f.db.FindWorkspace(ctx, pid, a.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Draft == nil || w.Draft.Answers["CQ1"] != "YES" || w.Draft.Rationales["CQ1"] != "clear" || w.Draft.Rationale != "so far" || w.Draft.ActiveMS != 5000 {
		t.Fatalf("draft = %+v", w.Draft)
	}
	// Nobody drafts on an item they do not hold.
	if ok, err := f.db.SaveDraft(ctx, pid, a.ItemID, other.ID, d); err != nil || ok {
		t.Fatalf("draft by someone else = %v, %v", ok, err)
	}
	ow, err := f.db.FindWorkspace(ctx, pid, a.ItemID, other.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ow.Assignment != nil || ow.Answers != nil || ow.Draft != nil {
		t.Fatalf("another annotator's view of the item = %+v", ow)
	}

	// Submitting drops the draft in the same transaction; a late autosave
	// is refused.
	res := f.submit(t, a, ann)
	w, err = f.db.FindWorkspace(ctx, pid, a.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Draft != nil || w.Answers == nil || w.Answers.ID != res.AnswerSetID || w.Answers.Answers["CQ1"] != "YES" || w.Submitted != 1 {
		t.Fatalf("after submit: draft %+v answers %+v submitted %d", w.Draft, w.Answers, w.Submitted)
	}
	var drafts int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM drafts`).Scan(&drafts); err != nil {
		t.Fatal(err)
	}
	if drafts != 0 {
		t.Fatalf("%d drafts left after submit", drafts)
	}
	if ok, err := f.db.SaveDraft(ctx, pid, a.ItemID, ann.ID, d); err != nil || ok {
		t.Fatalf("late autosave = %v, %v", ok, err)
	}

	// Editing: a draft at the answers' revision is kept until the edit is
	// stored; one at an older revision is refused.
	d.Base = w.Answers.Revision
	if ok, err := f.db.SaveDraft(ctx, pid, a.ItemID, ann.ID, d); err != nil || !ok {
		t.Fatalf("edit draft = %v, %v", ok, err)
	}
	w, err = f.db.FindWorkspace(ctx, pid, a.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Draft == nil || w.Draft.Base != 1 {
		t.Fatalf("edit draft read back = %+v", w.Draft)
	}
	answers := map[string]string{}
	for k, v := range fullAnswers {
		answers[k] = v
	}
	answers["CQ1"] = "NO"
	if _, _, err := f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: pid, ItemID: a.ItemID, UserID: ann.ID, Answers: answers}); err != nil {
		t.Fatal(err)
	}
	w, err = f.db.FindWorkspace(ctx, pid, a.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Draft != nil || w.Answers.Revision != 2 || w.Answers.Answers["CQ1"] != "NO" {
		t.Fatalf("after edit: draft %+v answers %+v", w.Draft, w.Answers)
	}
	ok, err := f.db.SaveDraft(ctx, pid, a.ItemID, ann.ID, d)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatal("a draft of revision 1 was saved over revision 2")
	}

	// Skipping drops the draft too.
	b, err := f.db.NextAssignment(ctx, pid, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	ok, err = f.db.SaveDraft(ctx, pid, b.ItemID, ann.ID, store.Draft{Answers: map[string]string{"CQ2": "NO"}})
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("draft on the second item refused")
	}
	if err := f.db.Skip(ctx, b.ID, ann.ID, "distressing", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM drafts`).Scan(&drafts); err != nil {
		t.Fatal(err)
	}
	if drafts != 0 {
		t.Fatalf("%d drafts left after skip", drafts)
	}

	if _, err := f.db.FindWorkspace(ctx, pid, 1<<40, ann.ID); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("missing item: %v, want ErrNotFound", err)
	}
}

func TestWorkspaceNeighboursAndCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 5, annotators: 2})
	ann := f.annotators[0]
	pid := f.project.ID

	var done []int64
	for range 3 {
		a, err := f.db.NextAssignment(ctx, pid, ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.submit(t, a, ann)
		done = append(done, a.ItemID)
	}
	cur, err := f.db.NextAssignment(ctx, pid, ann.ID)
	if err != nil {
		t.Fatal(err)
	}

	w, err := f.db.FindWorkspace(ctx, pid, cur.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.PrevItem != done[2] || w.NextItem != 0 || w.CurrentItem != cur.ItemID || w.Submitted != 3 || w.SeenOpen != 4 {
		t.Fatalf("current item: prev %d next %d current %d submitted %d seen-open %d; done %v", w.PrevItem, w.NextItem, w.CurrentItem, w.Submitted, w.SeenOpen, done)
	}
	w, err = f.db.FindWorkspace(ctx, pid, done[1], ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.PrevItem != done[0] || w.NextItem != done[2] {
		t.Fatalf("middle item: prev %d next %d; done %v", w.PrevItem, w.NextItem, done)
	}
	w, err = f.db.FindWorkspace(ctx, pid, done[0], ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.PrevItem != 0 || w.NextItem != done[1] {
		t.Fatalf("first item: prev %d next %d; done %v", w.PrevItem, w.NextItem, done)
	}

	c, err := f.db.CountLabels(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if c != (store.LabelCounts{Items: 5, Open: 5, Labels: 3, Needed: 10}) {
		t.Fatalf("counts = %+v", c)
	}
}

func TestMarkSensitive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 3})
	pid := f.project.ID

	changed, unknown, err := f.db.MarkSensitive(ctx, f.lead.ID, pid, []string{"item-000", "item-002", "item-002", "nope", "also-nope"}, true)
	if err != nil || changed != 2 || !slices.Equal(unknown, []string{"also-nope", "nope"}) {
		t.Fatalf("mark = %d, %v, %v", changed, unknown, err)
	}
	// Marking again changes nothing.
	if changed, _, _ := f.db.MarkSensitive(ctx, f.lead.ID, pid, []string{"item-000"}, true); changed != 0 {
		t.Fatalf("marking a marked item changed %d", changed)
	}
	var marked []string
	rows, err := f.db.Pool().Query(ctx, `SELECT source_id FROM items WHERE project_id = $1 AND sensitive ORDER BY 1`, pid)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		marked = append(marked, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(marked, []string{"item-000", "item-002"}) {
		t.Fatalf("marked = %v", marked)
	}
	if changed, _, _ := f.db.MarkSensitive(ctx, f.lead.ID, pid, []string{"item-000"}, false); changed != 1 {
		t.Fatalf("clearing changed %d", changed)
	}
	var audits int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'project.mark_sensitive' AND project_id = $1`, pid).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 3 {
		t.Fatalf("%d audit events, want 3", audits)
	}
	if _, _, err := f.db.MarkSensitive(ctx, f.lead.ID, pid, make([]string, 10001), true); !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("too many ids: %v", err)
	}
}
