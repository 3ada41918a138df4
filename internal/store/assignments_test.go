package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// projectOpts configures newProject; zero values take defaults.
type projectOpts struct {
	rubric     string // key@version, default coaching-conversation@2.0
	overlap    int    // default 2
	items      int    // default 5
	annotators int    // default 3
	lease      time.Duration
}

type fixture struct {
	db         *store.DB
	project    *attune.Project
	lead       *attune.User
	annotators []*attune.User
}

func testItem(i int, text string) store.ImportItem {
	msgs, _ := json.Marshal([]attune.Message{{Role: "user", Content: "I feel low " + text}, {Role: "assistant", Content: "That sounds hard."}})
	return store.ImportItem{Line: i + 1, SourceID: fmt.Sprintf("item-%03d", i), Kind: "reply", Messages: msgs, Meta: []byte(`{}`),
		Turns: 1, SHA256: fmt.Sprintf("%064x", len(text)*1000+i)}
}

func newProject(t testing.TB, db *store.DB, o projectOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	if o.rubric == "" {
		o.rubric = "coaching-conversation@2.0"
	}
	if o.overlap == 0 {
		o.overlap = 2
	}
	if o.items == 0 {
		o.items = 5
	}
	if o.annotators == 0 {
		o.annotators = 3
	}
	if o.lease == 0 {
		o.lease = time.Hour
	}
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, lead: newUser(t, db, "lead@example.org", attune.RoleLead)}
	key, version, _ := strings.Cut(o.rubric, "@")
	var rvID int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM rubric_versions WHERE key = $1 AND version = $2`, key, version).Scan(&rvID); err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "p-" + t.Name(), RubricVersionID: rvID, Overlap: o.overlap, Lease: o.lease})
	if err != nil {
		t.Fatal(err)
	}
	f.project = p
	_, err = db.ImportItems(ctx, p.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		var batch []store.ImportItem
		for i := range o.items {
			batch = append(batch, testItem(i, "x"))
		}
		return emit(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.annotators {
		u := newUser(t, db, fmt.Sprintf("ann%02d@example.org", i), attune.RoleAnnotator)
		if err := db.AddMember(ctx, &f.lead.ID, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
		f.annotators = append(f.annotators, u)
	}
	return f
}

var fullAnswers = map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
	"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}

func (f *fixture) submit(t *testing.T, a *attune.Assignment, u *attune.User) store.SubmitResult {
	t.Helper()
	res, err := f.db.SubmitLabels(context.Background(), store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: fullAnswers, ActiveMS: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestAssignmentPrefersItemsNearCompletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 3})
	a0, b0, c0 := f.annotators[0], f.annotators[1], f.annotators[2]

	first, err := f.db.NextAssignment(ctx, f.project.ID, a0.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Asking again resumes the same item.
	again, err := f.db.NextAssignment(ctx, f.project.ID, a0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID {
		t.Fatalf("second ask gave assignment %d, want the held %d", again.ID, first.ID)
	}
	f.submit(t, first, a0)
	// The next annotator gets the item already labelled once.
	b, err := f.db.NextAssignment(ctx, f.project.ID, b0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.ItemID != first.ItemID {
		t.Fatalf("b got item %d, want the half-done item %d", b.ItemID, first.ItemID)
	}
	// The item is now held by k annotators (one done, one holding): c gets another.
	c, err := f.db.NextAssignment(ctx, f.project.ID, c0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.ItemID == first.ItemID {
		t.Fatal("an item was handed to more annotators than the overlap")
	}
	// a never gets the item it labelled again.
	next, err := f.db.NextAssignment(ctx, f.project.ID, a0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if next.ItemID == first.ItemID {
		t.Fatal("an annotator was given an item twice")
	}
}

func TestSubmitIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{})
	u := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	r1 := f.submit(t, a, u)
	r2 := f.submit(t, a, u)
	if !r1.Created || r2.Created || r1.AnswerSetID != r2.AnswerSetID {
		t.Fatalf("double submit: %+v then %+v", r1, r2)
	}
	// The labels are written from the set after the commit, once.
	if err := f.db.WriteQueuedLabels(ctx); err != nil {
		t.Fatal(err)
	}
	var sets, labels, done int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets`).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels`).Scan(&labels); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT done FROM item_counts WHERE item_id = $1`, a.ItemID).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if sets != 1 || labels != 12 || done != 1 {
		t.Fatalf("after a double submit: %d answer sets, %d labels, done=%d; want 1, 12, 1", sets, labels, done)
	}
	// Someone else cannot submit your assignment.
	_, err = f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: f.annotators[1].ID, Answers: fullAnswers})
	if !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("submit of another's assignment: %v", err)
	}
}

func TestExpiredLeaseReturnsItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 1, annotators: 2})
	a0, b0 := f.annotators[0], f.annotators[1]
	held, err := f.db.NextAssignment(ctx, f.project.ID, a0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.NextAssignment(ctx, f.project.ID, b0.ID); !errors.Is(err, attune.ErrNoWork) {
		t.Fatalf("the only item is held: got %v, want ErrNoWork", err)
	}
	// The lease runs out (moved into the past rather than waited for).
	f.db.Pool().Exec(ctx, `UPDATE assignments SET assigned_at = now() - interval '2 hours', lease_expires_at = now() - interval '1 second' WHERE id = $1`, held.ID)
	b, err := f.db.NextAssignment(ctx, f.project.ID, b0.ID)
	if err != nil || b.ItemID != held.ItemID {
		t.Fatalf("after the lease lapsed, b got %+v, %v", b, err)
	}
	// a's late submission is refused: the slot went to b.
	_, err = f.db.SubmitLabels(ctx, store.Submission{AssignmentID: held.ID, UserID: a0.ID, Answers: fullAnswers})
	if !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("late submit: %v, want a conflict", err)
	}
	f.submit(t, b, b0)
	var done, holds int
	if err := f.db.Pool().QueryRow(ctx, `SELECT done, holds FROM item_counts WHERE item_id = $1`, held.ItemID).Scan(&done, &holds); err != nil {
		t.Fatal(err)
	}
	if done != 1 || holds != 0 {
		t.Fatalf("done=%d holds=%d, want 1, 0", done, holds)
	}
}

func TestSkipAndPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 1})
	u := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.Skip(ctx, a.ID, u.ID, "distressing", "too much today"); err != nil {
		t.Fatal(err)
	}
	b, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.ItemID == a.ItemID {
		t.Fatal("a skipped item came back to the same annotator")
	}
	if err := f.db.SetProjectStatus(ctx, f.lead.ID, f.project.ID, attune.ProjectPaused); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.NextAssignment(ctx, f.project.ID, u.ID); !errors.Is(err, attune.ErrConflict) || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("paused project: %v", err)
	}
	// Non-members get no work and learn nothing.
	out := newUser(t, f.db, "outsider@example.org", attune.RoleAnnotator)
	if _, err := f.db.NextAssignment(ctx, f.project.ID, out.ID); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("non-member: %v", err)
	}
}

// TestConcurrentAnnotators runs many annotators at once against two pools
// (as two replicas would): every item ends with exactly k labels and
// nobody labels an item twice.
func TestConcurrentAnnotators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	db1, _ := store.Open(ctx, url)
	defer db1.Close()
	db2, _ := store.Open(ctx, url)
	defer db2.Close()
	const items, overlap, annotators = 40, 3, 20
	f := newProject(t, db1, projectOpts{overlap: overlap, items: items, annotators: annotators})

	var wg sync.WaitGroup
	errs := make(chan error, annotators)
	for i, u := range f.annotators {
		db := []*store.DB{db1, db2}[i%2]
		wg.Go(func() {
			for {
				a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
				if errors.Is(err, attune.ErrNoWork) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: fullAnswers}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var wrong, total int
	if err := db1.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE n <> $2), coalesce(sum(n), 0) FROM (
		SELECT i.id, count(s.id) AS n FROM items i LEFT JOIN answer_sets s ON s.item_id = i.id WHERE i.project_id = $1 GROUP BY i.id) x`,
		f.project.ID, overlap).Scan(&wrong, &total); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || total != items*overlap {
		t.Fatalf("%d items without exactly %d labels; %d answer sets in all, want %d", wrong, overlap, total, items*overlap)
	}
	pr, err := db1.Progress(ctx, f.project.ID)
	if err != nil || pr.Complete != items || pr.Active != 0 {
		t.Fatalf("progress = %+v, %v", pr, err)
	}
}

// TestNoWorkStoredAfterRemoval: an annotator removed from the project (or
// made one of its leads) after taking an assignment can no longer submit,
// skip, edit or draft through it; nothing is stored or counted.
func TestNoWorkStoredAfterRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 2})
	for i, leave := range []func(u *attune.User) error{
		func(u *attune.User) error { return f.db.RemoveMember(ctx, &f.lead.ID, f.project.ID, u.ID) },
		func(u *attune.User) error {
			// Only an account that leads projects can lead this one.
			if _, err := f.db.SetUserRole(ctx, nil, u.ID, attune.RoleLead); err != nil {
				return err
			}
			return f.db.AddMember(ctx, &f.lead.ID, f.project.ID, u.ID, attune.MemberLead)
		},
	} {
		u := f.annotators[i]
		labelled, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.submit(t, labelled, u)
		held, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := leave(u); err != nil {
			t.Fatal(err)
		}
		_, err = f.db.SubmitLabels(ctx, store.Submission{AssignmentID: held.ID, UserID: u.ID, Answers: fullAnswers})
		if !errors.Is(err, attune.ErrForbidden) {
			t.Errorf("annotator %d: submit after leaving: %v, want forbidden", i, err)
		}
		if err := f.db.Skip(ctx, held.ID, u.ID, "broken", ""); !errors.Is(err, attune.ErrForbidden) {
			t.Errorf("annotator %d: skip after leaving: %v, want forbidden", i, err)
		}
		_, _, err = f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: f.project.ID, ItemID: labelled.ItemID, UserID: u.ID, Answers: fullAnswers})
		if !errors.Is(err, attune.ErrForbidden) {
			t.Errorf("annotator %d: edit after leaving: %v, want forbidden", i, err)
		}
		saved, err := f.db.SaveDraft(ctx, f.project.ID, held.ItemID, u.ID, store.Draft{Answers: fullAnswers})
		if err != nil || saved {
			t.Errorf("annotator %d: draft after leaving: saved=%v, %v; want dropped", i, saved, err)
		}
		var sets, revision, done int
		var state string
		if err := f.db.Pool().QueryRow(ctx, `SELECT count(*), max(revision) FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE r.user_id = $1`,
			u.ID).Scan(&sets, &revision); err != nil {
			t.Fatal(err)
		}
		if err := f.db.Pool().QueryRow(ctx, `SELECT done FROM item_counts WHERE item_id = $1`, held.ItemID).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if err := f.db.Pool().QueryRow(ctx, `SELECT state FROM assignments WHERE id = $1`, held.ID).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if sets != 1 || revision != 1 || done != 0 || state == "submitted" || state == "skipped" {
			t.Errorf("annotator %d after leaving: %d answer sets at revision %d, held item done=%d, assignment %s; want 1 at 1, 0, not finished",
				i, sets, revision, done, state)
		}
	}
}

// TestSubmitIsSentAgainAfterADeadlock makes PostgreSQL end a submission
// to break a deadlock, as it may when many annotators finish a project's
// last items at once: another transaction holds the item's counts, the
// submission (holding its assignment) waits for them, and the other then
// waits for the assignment. The submission is the one ended (the other
// waits much longer before it looks for a deadlock); it must be stored
// on its next attempt, once.
func TestSubmitIsSentAgainAfterADeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 2})
	u := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, `SET LOCAL deadlock_timeout = '60s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `UPDATE item_counts SET holds = holds WHERE item_id = $1`, a.ItemID); err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		res store.SubmitResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: fullAnswers, ActiveMS: 1000})
		done <- outcome{res, err}
	}()
	// Wait until the submission waits for the item's counts.
	for waiting := false; !waiting; {
		if err := f.db.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
			WHERE NOT l.granted AND s.datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case o := <-done:
			t.Fatalf("the submission ended without waiting: %+v", o)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Now wait for its assignment: a deadlock, which PostgreSQL breaks by
	// ending the submission's transaction, so this lock is granted.
	if _, err := other.Exec(ctx, `SELECT 1 FROM assignments WHERE id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatalf("the other transaction was ended instead: %v", err)
	}
	if err := other.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("a submission ended by a deadlock was not sent again: %v", o.err)
	}
	if !o.res.Created {
		t.Fatalf("the submission stored nothing: %+v", o.res)
	}
	if err := f.db.WriteQueuedLabels(ctx); err != nil {
		t.Fatal(err)
	}
	var sets, labels, counted int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets WHERE item_id = $1`, a.ItemID).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels WHERE item_id = $1`, a.ItemID).Scan(&labels); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT done FROM item_counts WHERE item_id = $1`, a.ItemID).Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if sets != 1 || labels != len(fullAnswers) || counted != 1 {
		t.Fatalf("after the deadlock: %d answer sets, %d labels, done=%d; want 1, %d, 1", sets, labels, counted, len(fullAnswers))
	}
}

// TestSubmitStoresBeforeWaitingForTheNextItem holds the only other open
// item locked, as another claimer would: the submission must be stored
// (visible to everyone) before its claim waits for that item, so that
// the wait holds no lock another submission could need, and the claim
// must then get the item once it is free.
func TestSubmitStoresBeforeWaitingForTheNextItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 1})
	u := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	var other int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND id <> $2`, f.project.ID, a.ItemID).Scan(&other); err != nil {
		t.Fatal(err)
	}
	locker, err := f.db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Rollback(ctx)
	if _, err := locker.Exec(ctx, `SELECT 1 FROM item_counts WHERE item_id = $1 FOR NO KEY UPDATE`, other); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res store.SubmitResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: fullAnswers, ActiveMS: 1000, ClaimNext: true, ProjectID: f.project.ID})
		done <- outcome{res, err}
	}()
	for waiting := false; !waiting; {
		if err := f.db.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
			WHERE NOT l.granted AND s.datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case o := <-done:
			t.Fatalf("the submission ended without waiting for the locked item: %+v", o)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var stored int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets WHERE item_id = $1`, a.ItemID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 1 {
		t.Errorf("while its claim waits, the submission has stored %d answer sets, want 1 (committed)", stored)
	}
	if err := locker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.res.Created || o.res.Next == nil || o.res.Next.ItemID != other {
		t.Fatalf("after the wait: %+v (next %+v), want the submission stored and item %d next", o.res, o.res.Next, other)
	}
}
