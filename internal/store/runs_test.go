package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestPauseRunOverBudget: a run is paused for its budget only as it stands
// now and only by work of its current start. A job of the start before a
// resume, still holding the old budget, leaves the resumed run running.
func TestPauseRunOverBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{})
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "budgeted", Provider: "openai", Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	tiny := 0.01
	run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID, BudgetUSD: &tiny})
	if err != nil {
		t.Fatal(err)
	}
	reason := func(spent, budget float64) string { return fmt.Sprintf("spent %.2f of %.2f", spent, budget) }
	start := func() int {
		t.Helper()
		if ok, err := db.SetRunStatus(ctx, run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunRunning, "", nil); err != nil || !ok {
			t.Fatalf("start: %v %v", ok, err)
		}
		r, err := db.FindRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r.Generation
	}
	pause := func(gen int, want bool) {
		t.Helper()
		paused, err := db.PauseRunOverBudget(ctx, run.ID, gen, reason)
		if err != nil || paused != want {
			t.Fatalf("generation %d: paused %v (%v), want %v", gen, paused, err, want)
		}
	}

	first := start()
	pause(first, false) // nothing spent yet
	if _, _, err := db.AddRunSpend(ctx, run.ID, 0.02); err != nil {
		t.Fatal(err)
	}
	pause(first, true)
	r, err := db.FindRun(ctx, run.ID)
	if err != nil || r.Status != attune.RunPaused || r.Reason != "spent 0.02 of 0.01" {
		t.Fatalf("after the pause: %+v (%v)", r, err)
	}

	plenty := 10.0
	if err := db.SetRunBudget(ctx, run.ID, &plenty); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.SetRunStatus(ctx, run.ID, []attune.RunStatus{attune.RunPaused}, attune.RunQueued, "", nil); err != nil || !ok {
		t.Fatalf("resume: %v %v", ok, err)
	}
	second := start()
	pause(first, false)  // a job of the first start
	pause(second, false) // under the raised budget
	if _, _, err := db.AddRunSpend(ctx, run.ID, 10); err != nil {
		t.Fatal(err)
	}
	pause(first, false) // over budget, but not the first start's to pause
	if r, err := db.FindRun(ctx, run.ID); err != nil || r.Status != attune.RunRunning {
		t.Fatalf("a job of the earlier start paused the run: %+v (%v)", r, err)
	}
	pause(second, true)
}
