package store_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestOneActiveRunMigration: migration 00044 upgrades a database that
// already holds two active runs of one judge and prompt version on a
// project (made while nothing stopped them) by cancelling all but the
// oldest, with the reason; then the database refuses a second active run,
// and a resume that would make one. Down drops the rule and keeps the runs.
func TestOneActiveRunMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{items: 2})
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "twice", Provider: "openai", Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	// Down to the migration before 00044, however many came after it.
	downTo := func(version int64) {
		t.Helper()
		for {
			st, err := db.MigrationState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Current <= version {
				if st.Current != version {
					t.Fatalf("migrated down to %d, want %d", st.Current, version)
				}
				return
			}
			if err := db.MigrateDown(ctx, io.Discard); err != nil {
				t.Fatalf("down from %d: %v", st.Current, err)
			}
		}
	}
	downTo(43)
	// The runs are written as the schema of then holds them: today's
	// CreateRun reads columns added since.
	var runs [3]*attune.JudgeRun
	for i := range runs {
		runs[i] = &attune.JudgeRun{}
		if err := db.Pool().QueryRow(ctx, `
			INSERT INTO judge_runs (judge_id, project_id, settings, rater_id)
			SELECT j.id, $2, j.settings, r.id FROM judges j JOIN raters r ON r.judge_id = j.id AND r.prompt_id IS NULL WHERE j.id = $1
			RETURNING id`, j.ID, f.project.ID).Scan(&runs[i].ID); err != nil {
			t.Fatalf("run %d without the rule: %v", i, err)
		}
		time.Sleep(time.Millisecond) // created_at orders them
	}
	if ok, err := db.SetRunStatus(ctx, runs[1].ID, []attune.RunStatus{attune.RunQueued}, attune.RunRunning, "", nil); err != nil || !ok {
		t.Fatalf("start run 1: %v %v", ok, err)
	}
	if err := db.Migrate(ctx, io.Discard); err != nil {
		t.Fatalf("up over duplicate active runs: %v", err)
	}
	want := []attune.RunStatus{attune.RunQueued, attune.RunCancelled, attune.RunCancelled}
	for i, r := range runs {
		got, err := db.FindRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want[i] {
			t.Errorf("run %d is %s, want %s (the oldest active run is kept)", i, got.Status, want[i])
		}
		if want[i] == attune.RunCancelled && (got.Reason == "" || got.FinishedAt == nil) {
			t.Errorf("run %d cancelled without a reason or an end: %+v", i, got)
		}
	}
	_, err = db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if !errors.Is(err, attune.ErrConflict) || attune.PublicMessage(err) != store.MsgRunActive {
		t.Fatalf("a second active run: %v, want the conflict %q", err, store.MsgRunActive)
	}
	// A paused run queued again beside an active one is refused too.
	if ok, err := db.SetRunStatus(ctx, runs[0].ID, []attune.RunStatus{attune.RunQueued}, attune.RunPaused, "paused", nil); err != nil || !ok {
		t.Fatalf("pause: %v %v", ok, err)
	}
	other, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatalf("a run beside a paused one: %v", err)
	}
	if _, err := db.SetRunStatus(ctx, runs[0].ID, []attune.RunStatus{attune.RunPaused}, attune.RunQueued, "", nil); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("resume beside run %d: %v, want a conflict", other.ID, err)
	}
	// Down drops the rule and keeps every run.
	downTo(43)
	if _, err := db.SetRunStatus(ctx, runs[0].ID, []attune.RunStatus{attune.RunPaused}, attune.RunQueued, "", nil); err != nil {
		t.Fatalf("resume without the rule: %v", err)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_runs WHERE judge_id = $1`, j.ID).Scan(&n); err != nil || n != 4 {
		t.Fatalf("%d runs after down (%v), want 4", n, err)
	}
	if err := db.Migrate(ctx, io.Discard); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
