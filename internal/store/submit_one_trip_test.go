package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// A submit-and-next goes to the server as one batch, COMMIT included, with
// the claim of the next item in it. A submission that stores nothing must
// commit nothing of that batch: the next item is not claimed for the
// person who sent it, and no count moves.
func TestRefusedSubmitClaimsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 4, annotators: 2})
	owner, other := f.annotators[0], f.annotators[1]
	a, err := f.db.NextAssignment(ctx, f.project.ID, owner.ID)
	if err != nil {
		t.Fatal(err)
	}
	held := func(u *attune.User) (n int) {
		t.Helper()
		if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM assignments a JOIN raters r ON r.id = a.rater_id WHERE r.user_id = $1`,
			u.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	counts := func() (done, holds int) {
		t.Helper()
		if err := f.db.Pool().QueryRow(ctx, `SELECT sum(done), sum(holds) FROM item_counts WHERE project_id = $1`,
			f.project.ID).Scan(&done, &holds); err != nil {
			t.Fatal(err)
		}
		return done, holds
	}

	cases := []struct {
		name string
		sub  store.Submission
		want error
	}{
		{"someone else's assignment", store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: other.ID}, attune.ErrNotFound},
		{"their own, named under another project", store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID + 1000, UserID: owner.ID}, attune.ErrNotFound},
		{"their own, with its content note required and not opened", store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: owner.ID,
			NoteRequired: true}, store.ErrNoteUnopened},
	}
	for _, c := range cases {
		beforeOwner, beforeOther := held(owner), held(other)
		doneBefore, holdsBefore := counts()
		c.sub.Answers, c.sub.ActiveMS, c.sub.ClaimNext = fullAnswers, 1000, true
		_, err := f.db.SubmitLabels(ctx, c.sub)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if n := held(other); n != beforeOther {
			t.Errorf("%s: the other annotator has %d assignments, had %d", c.name, n, beforeOther)
		}
		if n := held(owner); n != beforeOwner {
			t.Errorf("%s: the owner has %d assignments, had %d", c.name, n, beforeOwner)
		}
		if done, holds := counts(); done != doneBefore || holds != holdsBefore {
			t.Errorf("%s: counts moved from done %d, holds %d to %d, %d", c.name, doneBefore, holdsBefore, done, holds)
		}
	}
	var sets int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets WHERE project_id = $1`, f.project.ID).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if sets != 0 {
		t.Fatalf("%d answer sets stored by refused submissions", sets)
	}

	// The same assignment, sent right, stores its answers and claims the
	// next item in the same commit; sent again, it stores nothing more
	// and says what it stored.
	res, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: owner.ID,
		Answers: fullAnswers, ActiveMS: 1000, ClaimNext: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Next == nil || res.Next.ItemID == a.ItemID {
		t.Fatalf("submit-and-next: created %v, next %+v", res.Created, res.Next)
	}
	again, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: owner.ID,
		Answers: fullAnswers, ActiveMS: 1000, ClaimNext: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.AnswerSetID != res.AnswerSetID || again.Next == nil || again.Next.ID != res.Next.ID {
		t.Fatalf("sent again: created %v, set %d (first %d), next %+v (first %+v)", again.Created, again.AnswerSetID, res.AnswerSetID, again.Next, res.Next)
	}
	if done, holds := counts(); done != 1 || holds != 1 {
		t.Fatalf("after one submit-and-next: done %d, holds %d, want 1 and 1", done, holds)
	}
}
