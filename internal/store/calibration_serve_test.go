package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

var calibrationGold = likert("4", "4", "3", "5", "4")

// calibrated is a likert project whose first n items have gold and form
// its calibration set, under the given rules.
func calibrated(t *testing.T, o projectOpts, n int, pol calibration.Policy) *fixture {
	t.Helper()
	o.rubric = "empathetic-dialogue@2"
	f := newProject(t, dbtest.New(t), o)
	for i := range n {
		source := fmt.Sprintf("item-%03d", i)
		f.goldItems(t, calibrationGold, source)
		if _, err := f.db.AddCalibration(context.Background(), &f.lead.ID, f.project.ID, source, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.db.SetCalibrationPolicy(context.Background(), &f.lead.ID, f.project.ID, pol); err != nil {
		t.Fatal(err)
	}
	return f
}

// answer submits an assignment: graded against the gold when it is a
// calibration item (passing or not), else as a real label. It claims the
// next item with it.
func (f *fixture) answer(t *testing.T, a *attune.Assignment, u *attune.User, pass bool) store.SubmitResult {
	t.Helper()
	s := store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: u.ID, Answers: calibrationGold, ClaimNext: true}
	if a.Calibration {
		s.Graded = &store.GradedAnswers{Gold: calibrationGold, Matched: 5, Compared: 5, Passed: pass}
		if !pass {
			s.Answers = likert("1", "1", "1", "1", "1")
			s.Graded.Matched = 0
		}
	}
	res, err := f.db.SubmitLabels(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// submitLikert submits a real assignment of a likert project, claiming
// nothing.
func (f *fixture) submitLikert(t *testing.T, a *attune.Assignment, u *attune.User) {
	t.Helper()
	if _, err := f.db.SubmitLabels(context.Background(), store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: calibrationGold}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) counts(t *testing.T, source string) (done, holds, answerSets int) {
	t.Helper()
	if err := f.db.Pool().QueryRow(context.Background(), `SELECT c.done, c.holds, (SELECT count(*) FROM answer_sets s WHERE s.item_id = c.item_id)
		FROM item_counts c JOIN items i ON i.id = c.item_id WHERE i.project_id = $1 AND i.source_id = $2`, f.project.ID, source).
		Scan(&done, &holds, &answerSets); err != nil {
		t.Fatal(err)
	}
	return done, holds, answerSets
}

func TestQualificationServesOnlyCalibration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 2, items: 6, annotators: 2}, 3, calibration.Policy{Qualify: 2, PassPercent: 80})
	ann, failing := f.annotators[0], f.annotators[1]

	a, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil || !a.Calibration {
		t.Fatalf("first item %+v, %v: want a calibration item", a, err)
	}
	res := f.answer(t, a, ann, true)
	if !res.Created || !res.Calibration || !res.WasQualifying || res.Next == nil || !res.Next.Calibration {
		t.Fatalf("after one pass: %+v", res)
	}
	res = f.answer(t, res.Next, ann, true)
	if !res.WasQualifying || res.Next == nil || res.Next.Calibration {
		t.Fatalf("after qualifying: %+v, want feedback on this one and a real item next", res)
	}
	// The real item takes its slot; the calibration items took none and
	// have no answer set.
	for i := range 3 {
		source := fmt.Sprintf("item-%03d", i)
		done, holds, sets := f.counts(t, source)
		if done != 0 || sets != 0 || (holds != 0 && res.Next.ItemID != f.itemID(t, source)) {
			t.Errorf("%s: done %d holds %d answer sets %d", source, done, holds, sets)
		}
	}
	// A second submission of the same answers is a retry, not a second
	// answer.
	again, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: ann.ID, Answers: calibrationGold,
		Graded: &store.GradedAnswers{Gold: calibrationGold, Matched: 5, Compared: 5, Passed: true}})
	if err != nil || again.Created || again.Stored == nil || again.Stored.Answers["safety"] != "5" {
		t.Fatalf("retry: %+v, %v", again, err)
	}

	// Someone who fails every calibration item is never given a real one.
	a, err = f.db.NextAssignment(ctx, f.project.ID, failing.ID)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if !a.Calibration {
			t.Fatalf("a real item before qualifying: %+v", a)
		}
		res = f.answer(t, a, failing, false)
		a = res.Next
	}
	if res.Next != nil || !errors.Is(res.NextErr, attune.ErrConflict) || !strings.Contains(res.NextErr.Error(), calibration.NotQualified) {
		t.Fatalf("after failing all: %+v", res)
	}
	q, err := f.db.PeekQueue(ctx, f.project.ID, failing.ID)
	if err != nil || q.Stopped == nil || q.Open {
		t.Fatalf("peek: %+v, %v", q, err)
	}
	// A calibration answer is never stored without its grade.
	var n int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM calibration_answers`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("%d calibration answers, want 5", n)
	}
}

// TestCalibrationDueMatchesPolicy holds the claim's choice to
// calibration.Policy.Due over a table of standings.
func TestCalibrationDueMatchesPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		pol  calibration.Policy
		real int // real items submitted before the claim, none calibrated
	}{
		{calibration.Policy{PassPercent: 80}, 3},
		{calibration.Policy{Every: 2, PassPercent: 80}, 0},
		{calibration.Policy{Every: 2, PassPercent: 80}, 1},
		{calibration.Policy{Every: 4, PassPercent: 80}, 2},
		{calibration.Policy{Every: 4, PassPercent: 80}, 3},
		{calibration.Policy{Qualify: 1, PassPercent: 80}, 0},
	}
	f := calibrated(t, projectOpts{overlap: 1, items: 12, annotators: len(tests)}, 2, calibration.Policy{PassPercent: 80})
	for i, tt := range tests {
		u := f.annotators[i]
		if err := f.db.SetCalibrationPolicy(ctx, nil, f.project.ID, calibration.Policy{PassPercent: 80}); err != nil {
			t.Fatal(err)
		}
		for range tt.real {
			a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
			if err != nil || a.Calibration {
				t.Fatalf("%d: %+v %v", i, a, err)
			}
			f.submitLikert(t, a, u) // claiming nothing under these rules
		}
		if err := f.db.SetCalibrationPolicy(ctx, nil, f.project.ID, tt.pol); err != nil {
			t.Fatal(err)
		}
		a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := tt.pol.Due(calibration.Standing{RealSince: tt.real}); a.Calibration != want {
			t.Errorf("%+v after %d real: calibration %v, want %v", tt.pol, tt.real, a.Calibration, want)
		}
		f.db.Skip(ctx, a.ID, u.ID, "", "")
	}
}

func TestPausedQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 1, items: 3, annotators: 1}, 0, calibration.Policy{PassPercent: 80})
	u := f.annotators[0]
	if err := f.db.SetQueuePaused(ctx, &f.lead.ID, f.project.ID, u.ID, true, "accuracy fell"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.NextAssignment(ctx, f.project.ID, u.ID); !errors.Is(err, attune.ErrConflict) || !strings.Contains(err.Error(), "paused your work in this project (accuracy fell)") {
		t.Fatalf("paused: %v", err)
	}
	q, err := f.db.PeekQueue(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if q.Stopped == nil {
		t.Fatalf("peek while paused: %+v", q)
	}
	if err := f.db.SetQueuePaused(ctx, &f.lead.ID, f.project.ID, u.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.NextAssignment(ctx, f.project.ID, u.ID); err != nil {
		t.Fatalf("resumed: %v", err)
	}
	if err := f.db.SetQueuePaused(ctx, &f.lead.ID, f.project.ID, f.lead.ID, true, ""); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("pausing a non-annotator: %v", err)
	}
}

// TestCalibrationUnderConcurrency has many annotators claim and submit at
// once, with calibration items mixed in: every item still ends with
// exactly the overlap's answer sets (fewer only when every annotator met
// it, some as calibration), nobody is given a calibration item
// twice, and calibration answers leave the counters alone.
func TestCalibrationUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const annotators, items, calibItems, overlap = 10, 30, 6, 3
	f := calibrated(t, projectOpts{overlap: overlap, items: items, annotators: annotators}, calibItems,
		calibration.Policy{Qualify: 1, Every: 3, PassPercent: 80})
	var wg sync.WaitGroup
	errs := make(chan error, annotators)
	for _, u := range f.annotators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
			for err == nil {
				s := store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: u.ID, Answers: calibrationGold, ClaimNext: true}
				if a.Calibration {
					s.Graded = &store.GradedAnswers{Gold: calibrationGold, Matched: 5, Compared: 5, Passed: true}
				}
				res, serr := f.db.SubmitLabels(ctx, s)
				if serr != nil {
					errs <- serr
					return
				}
				a, err = res.Next, res.NextErr
				if a == nil && err == nil {
					err = attune.ErrNoWork
				}
			}
			if !errors.Is(err, attune.ErrNoWork) && !errors.Is(err, attune.ErrConflict) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A calibration item is a real item too, and whoever was served it
	// for calibration may not label it for real: when enough annotators
	// met it as calibration first, fewer than the overlap are left to
	// label it. Such an item must then have been offered to everyone.
	rows, err := f.db.Pool().Query(ctx, `SELECT i.source_id, c.done, c.holds,
			(SELECT count(*) FROM answer_sets s WHERE s.item_id = i.id),
			(SELECT count(DISTINCT a.rater_id) FROM assignments a WHERE a.item_id = i.id)
		FROM items i JOIN item_counts c ON c.item_id = i.id WHERE i.project_id = $1`, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var source string
		var done, holds, sets, met int
		if err := rows.Scan(&source, &done, &holds, &sets, &met); err != nil {
			t.Fatal(err)
		}
		if done != sets || holds != 0 || done > overlap || (done < overlap && met < annotators) {
			t.Errorf("%s: done %d, answer sets %d, holds %d, met by %d of %d annotators; want %d labels, or fewer only when everyone met it",
				source, done, sets, holds, met, annotators, overlap)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var served, twice, answers int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*), count(*) - count(DISTINCT (item_id, rater_id)) FROM assignments WHERE calibration`).Scan(&served, &twice); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM calibration_answers`).Scan(&answers); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calibration items served, %d answered", served, answers)
	if twice != 0 || served < annotators || answers != served {
		t.Errorf("calibration: %d served, %d twice to the same person, %d answered", served, twice, answers)
	}
}
