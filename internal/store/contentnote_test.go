package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestContentNoteMustBeOpened: answers to an item behind a content note
// are stored only once its annotator opened the note, for a submission and
// an edit alike; an opening is the person's own and lasts.
func TestContentNoteMustBeOpened(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 2, annotators: 2})
	ann, other := f.annotators[0], f.annotators[1]
	pid := f.project.ID
	a, err := f.db.NextAssignment(ctx, pid, ann.ID)
	if err != nil {
		t.Fatal(err)
	}

	sub := store.Submission{AssignmentID: a.ID, UserID: ann.ID, Answers: fullAnswers, NoteRequired: true}
	_, err = f.db.SubmitLabels(ctx, sub)
	if !errors.Is(err, store.ErrNoteUnopened) || !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("submit before opening: %v, want ErrNoteUnopened", err)
	}
	var sets int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets`).Scan(&sets); err != nil || sets != 0 {
		t.Fatalf("%d answer sets after a refused submit (%v)", sets, err)
	}

	// Only the item's own annotator can open it.
	if err := f.db.OpenContentNote(ctx, pid, a.ItemID, other.ID); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("someone else opening the note: %v, want not found", err)
	}
	if w, err := f.db.FindOwnItem(ctx, pid, a.ItemID, ann.ID); err != nil || w.NoteOpened {
		t.Fatalf("before opening: %+v, %v", w, err)
	}
	for range 2 { // opening twice is one opening
		if err := f.db.OpenContentNote(ctx, pid, a.ItemID, ann.ID); err != nil {
			t.Fatal(err)
		}
	}
	if w, err := f.db.FindWorkspace(ctx, pid, a.ItemID, ann.ID); err != nil || !w.NoteOpened {
		t.Fatalf("after opening: %+v, %v", w, err)
	}
	if res, err := f.db.SubmitLabels(ctx, sub); err != nil || !res.Created {
		t.Fatalf("submit after opening: %+v, %v", res, err)
	}
	edit := store.LabelEdit{ProjectID: pid, ItemID: a.ItemID, UserID: ann.ID, Answers: fullAnswers, NoteRequired: true}
	if _, rev, err := f.db.UpdateLabels(ctx, edit); err != nil || rev != 2 {
		t.Fatalf("edit after opening: revision %d, %v", rev, err)
	}

	// The other annotator's opening is theirs: it does not open the note
	// for anyone else, and their edit of an unopened item is refused.
	b, err := f.db.NextAssignment(ctx, pid, other.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ow, err := f.db.FindOwnItem(ctx, pid, b.ItemID, other.ID); err != nil || ow.NoteOpened {
		t.Fatalf("another annotator's item: %+v, %v", ow, err)
	}
	f.submit(t, b, other) // an item without a note
	edit = store.LabelEdit{ProjectID: pid, ItemID: b.ItemID, UserID: other.ID, Answers: fullAnswers, NoteRequired: true}
	if _, _, err := f.db.UpdateLabels(ctx, edit); !errors.Is(err, store.ErrNoteUnopened) {
		t.Fatalf("edit of an unopened item: %v, want ErrNoteUnopened", err)
	}
}
