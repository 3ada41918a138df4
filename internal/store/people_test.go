package store_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/store"
)

// failAll serves the annotator calibration items and fails every one,
// until the claim gives them nothing more; it returns the claim's refusal.
func (f *fixture) failAll(t *testing.T, u *attune.User) error {
	t.Helper()
	a, err := f.db.NextAssignment(context.Background(), f.project.ID, u.ID)
	for err == nil {
		if !a.Calibration {
			t.Fatalf("a real item before qualifying: %+v", a)
		}
		res := f.answer(t, a, u, false)
		a, err = res.Next, res.NextErr
	}
	return err
}

func (f *fixture) person(t *testing.T, u *attune.User) store.Person {
	t.Helper()
	p, err := f.db.FindPerson(context.Background(), f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRequalify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 2, items: 6, annotators: 2}, 3, calibration.Policy{Qualify: 2, PassPercent: 80})
	failing, fine := f.annotators[0], f.annotators[1]

	if p := f.person(t, failing); p.Qualification != calibration.QualificationInProgress || p.Attempt.Number != 1 || p.Attempt.Left != 3 {
		t.Fatalf("before any item: %+v", p)
	}
	err := f.failAll(t, failing)
	if !errors.Is(err, attune.ErrConflict) || !strings.Contains(err.Error(), calibration.NotQualified) {
		t.Fatalf("after failing every item: %v, want %q", err, calibration.NotQualified)
	}
	p := f.person(t, failing)
	if p.Qualification != calibration.QualificationFailed || p.Attempt != (calibration.Attempt{Number: 1, Answered: 3}) || p.Submitted != 0 {
		t.Fatalf("after failing: %+v", p)
	}
	if q, err := f.db.PeekQueue(ctx, f.project.ID, failing.ID); err != nil || q.Stopped == nil ||
		!strings.Contains(q.Stopped.Error(), calibration.NotQualified) {
		t.Fatalf("peek after failing: %+v, %v", q, err)
	}

	// The other annotator holds a real item; the lead re-qualifies them
	// too, which gives its slot back.
	a, err := f.db.NextAssignment(ctx, f.project.ID, fine.ID)
	for err == nil && a.Calibration {
		res := f.answer(t, a, fine, true)
		a, err = res.Next, res.NextErr
	}
	if err != nil {
		t.Fatal(err)
	}
	source := ""
	if err := f.db.Pool().QueryRow(ctx, `SELECT source_id FROM items WHERE id = $1`, a.ItemID).Scan(&source); err != nil {
		t.Fatal(err)
	}
	if _, holds, _ := f.counts(t, source); holds != 1 {
		t.Fatalf("held real item: %d holds", holds)
	}
	if n, err := f.db.Requalify(ctx, &f.lead.ID, f.project.ID, fine.ID, 1); err != nil || n != 2 {
		t.Fatalf("requalify the qualified one: %d, %v", n, err)
	}
	if _, holds, _ := f.counts(t, source); holds != 0 {
		t.Fatalf("after requalify, the real item keeps %d holds", holds)
	}
	// The real item they were handed was the first calibration item left
	// (calibration items are in the pool too): labelled for real once, it
	// is never served to them as a calibration item.
	if p := f.person(t, fine); p.Qualification != calibration.QualificationInProgress || p.Attempt != (calibration.Attempt{Number: 2, Left: 2}) {
		t.Fatalf("re-qualified person: %+v", p)
	}

	// A new attempt serves the same calibration items again; the old
	// answers stay, and only the new ones count.
	n, err := f.db.Requalify(ctx, &f.lead.ID, f.project.ID, failing.ID, 1)
	if err != nil || n != 2 {
		t.Fatalf("requalify: %d, %v", n, err)
	}
	a, err = f.db.NextAssignment(ctx, f.project.ID, failing.ID)
	if err != nil || !a.Calibration {
		t.Fatalf("first item of attempt 2: %+v, %v", a, err)
	}
	res := f.answer(t, a, failing, true)
	if !res.WasQualifying || res.Next == nil || !res.Next.Calibration {
		t.Fatalf("after one pass in attempt 2: %+v", res)
	}
	res = f.answer(t, res.Next, failing, true)
	if res.Next == nil || res.Next.Calibration {
		t.Fatalf("after qualifying in attempt 2: %+v, want a real item", res)
	}
	if p := f.person(t, failing); p.Qualification != calibration.QualificationPassed || p.Attempt.Number != 2 || p.Attempt.Passed != 2 {
		t.Fatalf("after qualifying: %+v", p)
	}
	if got := f.count(t, `SELECT count(*) FROM calibration_answers c JOIN raters r ON r.id = c.rater_id WHERE r.user_id = $1`, failing.ID); got != 5 {
		t.Fatalf("%d calibration answers kept, want 3 of attempt 1 and 2 of attempt 2", got)
	}
	// The record for the drift charts is the whole history.
	if p := f.person(t, failing); p.Calibration.N != 5 {
		t.Fatalf("calibration record of %d answers, want 5", p.Calibration.N)
	}
	audits := auditActions(t, f.db, "member.requalify")
	if len(audits) != 2 || !strings.Contains(audits[1], failing.Email) || !strings.Contains(audits[1], `"attempt": "2"`) {
		t.Fatalf("audit = %q", audits)
	}
	var actor *int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT actor_id FROM audit_events WHERE action = 'member.requalify' ORDER BY id LIMIT 1`).Scan(&actor); err != nil ||
		actor == nil || *actor != f.lead.ID {
		t.Fatalf("actor %v, %v", actor, err)
	}

	people, err := f.db.ListPeople(ctx, f.project.ID)
	if err != nil || len(people) != 2 {
		t.Fatalf("people = %+v, %v", people, err)
	}
	for _, p := range people {
		if p.UserID == f.lead.ID {
			t.Fatalf("a lead is listed: %+v", p)
		}
	}
}

func TestRequalifyRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 2, items: 3, annotators: 1}, 1, calibration.Policy{Qualify: 1, PassPercent: 80})
	u := f.annotators[0]
	stranger := newUser(t, f.db, "stranger@example.org", attune.RoleAnnotator)
	tests := []struct {
		name    string
		user    int64
		attempt int
		kind    error
		says    string
	}{
		{"stale attempt", u.ID, 2, attune.ErrConflict, "is on attempt 1, not 2"},
		{"attempt zero", u.ID, 0, attune.ErrInvalid, "counted from 1"},
		{"a lead", f.lead.ID, 1, attune.ErrInvalid, "not an annotator"},
		{"not a member", stranger.ID, 1, attune.ErrNotFound, "not a member"},
	}
	for _, tt := range tests {
		if _, err := f.db.Requalify(ctx, &f.lead.ID, f.project.ID, tt.user, tt.attempt); !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want %v saying %q", tt.name, err, tt.kind, tt.says)
		}
	}
	if p := f.person(t, u); p.Attempt.Number != 1 {
		t.Fatalf("a refusal changed the attempt: %+v", p)
	}
	if got := auditActions(t, f.db, "member.requalify"); len(got) != 0 {
		t.Fatalf("refusals audited: %q", got)
	}
	if _, err := f.db.FindPerson(ctx, f.project.ID, f.lead.ID); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("a lead as a person: %v", err)
	}
}

func TestRequalifyConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 2, items: 3, annotators: 1}, 1, calibration.Policy{Qualify: 1, PassPercent: 80})
	u := f.annotators[0]
	const leads = 2
	errs := make([]error, leads)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range leads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = f.db.Requalify(ctx, &f.lead.ID, f.project.ID, u.ID, 1)
		}()
	}
	close(start)
	wg.Wait()
	won, stale := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, attune.ErrConflict) && strings.Contains(err.Error(), "is on attempt 2, not 1"):
			stale++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 || stale != 1 {
		t.Fatalf("%d won, %d refused as stale: want exactly one of each", won, stale)
	}
	if p := f.person(t, u); p.Attempt.Number != 2 {
		t.Fatalf("attempt %d, want 2", p.Attempt.Number)
	}
	if got := auditActions(t, f.db, "member.requalify"); len(got) != 1 {
		t.Fatalf("audit = %q", got)
	}
}

// TestClaimAgreesWithQualification holds the claim to
// calibration.Policy.Qualification: a person is handed a real item exactly
// when they passed (or none is asked), a calibration item while in
// progress, and nothing, told why, when they failed.
func TestClaimAgreesWithQualification(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 3, items: 8, annotators: 3}, 3, calibration.Policy{Qualify: 2, PassPercent: 80})
	passes := [][]bool{{true, true}, {false, true, false}, {false, false, false}}
	check := func(u *attune.User, when string) {
		t.Helper()
		p := f.person(t, u)
		q, err := f.db.PeekQueue(ctx, f.project.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
		switch p.Qualification {
		case calibration.QualificationPassed, calibration.QualificationNotRequired:
			if err != nil || a.Calibration {
				t.Errorf("%s: %s, claim %+v, %v: want a real item", when, p.Qualification, a, err)
			}
		case calibration.QualificationInProgress:
			if err != nil || !a.Calibration {
				t.Errorf("%s: %s, claim %+v, %v: want a calibration item", when, p.Qualification, a, err)
			}
		case calibration.QualificationFailed:
			if err == nil || !strings.Contains(err.Error(), calibration.NotQualified) || q.Stopped == nil {
				t.Errorf("%s: %s, claim %+v, %v, peek %+v: want a refusal saying so", when, p.Qualification, a, err, q)
			}
		default:
			t.Errorf("%s: %s", when, p.Qualification)
		}
		if err == nil {
			if err := f.db.Skip(ctx, a.ID, u.ID, "", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, u := range f.annotators {
		for _, pass := range passes[i] {
			a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
			if err != nil || !a.Calibration {
				t.Fatalf("annotator %d: %+v, %v", i, a, err)
			}
			f.answer(t, a, u, pass)
		}
		check(u, "first attempt")
	}
	// A skipped calibration item counts as given: the third annotator
	// stays failed, the second, having skipped the last, too. A new
	// attempt puts each back in progress.
	for _, u := range f.annotators[1:] {
		p := f.person(t, u)
		if _, err := f.db.Requalify(ctx, &f.lead.ID, f.project.ID, u.ID, p.Attempt.Number); err != nil {
			t.Fatal(err)
		}
		check(u, "second attempt")
	}
	// Without qualification, everyone is handed real items.
	if err := f.db.SetCalibrationPolicy(ctx, &f.lead.ID, f.project.ID, calibration.Policy{PassPercent: 80}); err != nil {
		t.Fatal(err)
	}
	for _, u := range f.annotators {
		if p := f.person(t, u); p.Qualification != calibration.QualificationNotRequired {
			t.Fatalf("no qualification: %+v", p)
		}
		check(u, "no qualification")
	}
}

// TestRequalifyMigrationDown takes the attempts' migration down with a
// re-qualified person in the database: their current attempt is kept and
// the one-per-person-and-item rule holds again.
func TestRequalifyMigrationDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 2, items: 3, annotators: 1}, 2, calibration.Policy{Qualify: 2, PassPercent: 80})
	u := f.annotators[0]
	if err := f.failAll(t, u); err == nil {
		t.Fatal("failing every item was not refused")
	}
	if _, err := f.db.Requalify(ctx, &f.lead.ID, f.project.ID, u.ID, 1); err != nil {
		t.Fatal(err)
	}
	a, err := f.db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil || !a.Calibration {
		t.Fatalf("attempt 2: %+v, %v", a, err)
	}
	f.answer(t, a, u, true)
	// Down to just below 00043, through any later migration.
	for {
		st, err := f.db.MigrationState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Current < 43 {
			break
		}
		if err := f.db.MigrateDown(ctx, io.Discard); err != nil {
			t.Fatalf("down from %d: %v", st.Current, err)
		}
	}
	if got := f.count(t, `SELECT count(*) FROM calibration_answers`); got != 1 {
		t.Fatalf("%d calibration answers after down, want the current attempt's 1", got)
	}
	if got := f.count(t, `SELECT count(*) FROM information_schema.columns WHERE column_name = 'calibration_attempt'`); got != 0 {
		t.Fatalf("%d calibration_attempt columns remain", got)
	}
	if err := f.db.Migrate(ctx, io.Discard); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
