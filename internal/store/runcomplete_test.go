package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// startedRun makes a judge and a run over the fixture's project and starts
// it as the runner does (running, its count set from what is left).
func startedRun(t *testing.T, f *fixture, name string) *attune.JudgeRun {
	t.Helper()
	ctx := context.Background()
	j, err := f.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: name, Provider: "openai", Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.db.SetRunStatus(ctx, run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunRunning, "", nil); err != nil || !ok {
		t.Fatalf("start: %v %v", ok, err)
	}
	if run, err = f.db.FindRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.StartRunItems(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

func judgeLabels() []store.JudgeLabel {
	return []store.JudgeLabel{{Key: "understanding", Value: "3", Method: "structured", PromptHash: "h"}}
}

func runStatus(t *testing.T, db *store.DB, id int64) attune.RunStatus {
	t.Helper()
	r, err := db.FindRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// TestWriteJudgeAnswersCompletesTheRunWithItsLastItem: the answers of a
// run's last item and the run's mark commit in one transaction, so no
// crash or failover can leave a run with every item answered but running;
// the mark goes by the answers stored, not by the count alone.
func TestWriteJudgeAnswersCompletesTheRunWithItsLastItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{rubric: "empathetic-understanding@1", items: 3})
	ids, err := db.ItemIDs(ctx, f.project.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := startedRun(t, f, "whole")
	for i, id := range ids {
		written, completed, err := db.WriteJudgeAnswers(ctx, run, id, judgeLabels(), 10)
		if err != nil || !written {
			t.Fatalf("item %d: written %v (%v)", i, written, err)
		}
		last := i == len(ids)-1
		if completed != last {
			t.Fatalf("item %d of %d: completed = %v", i+1, len(ids), completed)
		}
		if want := map[bool]attune.RunStatus{false: attune.RunRunning, true: attune.RunCompleted}[last]; runStatus(t, db, run.ID) != want {
			t.Fatalf("after item %d of %d the run is %s, want %s", i+1, len(ids), runStatus(t, db, run.ID), want)
		}
	}
	done, err := db.FindRun(ctx, run.ID)
	if err != nil || done.FinishedAt == nil {
		t.Fatalf("the completed run has no end: %+v (%v)", done, err)
	}
	// A job run again finds its item answered and stores nothing.
	if written, completed, err := db.WriteJudgeAnswers(ctx, run, ids[2], judgeLabels(), 10); err != nil || written || completed {
		t.Fatalf("the last item again: written %v, completed %v (%v)", written, completed, err)
	}

	// A count that has run ahead (it reaches the total with an item still
	// unanswered) does not complete the run.
	ahead := startedRun(t, f, "ahead")
	if _, err := db.Pool().Exec(ctx, `UPDATE judge_runs SET items_done = items_total - 1 WHERE id = $1`, ahead.ID); err != nil {
		t.Fatal(err)
	}
	if written, completed, err := db.WriteJudgeAnswers(ctx, ahead, ids[0], judgeLabels(), 10); err != nil || !written || completed {
		t.Fatalf("with two items left: written %v, completed %v (%v)", written, completed, err)
	}
	if s := runStatus(t, db, ahead.ID); s != attune.RunRunning {
		t.Fatalf("a run with items left is %s", s)
	}
}

// TestCompleteFinishedRuns: a run left running with every item answered
// (its mark lost, or made by a release that marked runs apart from the
// answers) is completed once none of its jobs may still work, and only
// then; a run with an item left is not.
func TestCompleteFinishedRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{rubric: "empathetic-understanding@1", items: 2})
	ids, err := db.ItemIDs(ctx, f.project.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	stuck := startedRun(t, f, "stuck")
	for _, id := range ids {
		if _, _, err := db.WriteJudgeAnswers(ctx, stuck, id, judgeLabels(), 10); err != nil {
			t.Fatal(err)
		}
	}
	// As the failover left it: every answer stored, the run running.
	if _, err := db.Pool().Exec(ctx, `UPDATE judge_runs SET status = 'running', finished_at = NULL WHERE id = $1`, stuck.ID); err != nil {
		t.Fatal(err)
	}
	partial := startedRun(t, f, "partial")
	if _, _, err := db.WriteJudgeAnswers(ctx, partial, ids[0], judgeLabels(), 10); err != nil {
		t.Fatal(err)
	}
	var jobID int64
	if err := db.Pool().QueryRow(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state)
		VALUES ($1, 'judge_item', 25, 'judge', 'retryable') RETURNING id`, fmt.Sprintf(`{"run_id": %d}`, stuck.ID)).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	// A job of the same run in another queue does not hold it.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state)
		VALUES ($1, 'webhook', 25, 'webhook', 'available')`, fmt.Sprintf(`{"run_id": %d}`, stuck.ID)); err != nil {
		t.Fatal(err)
	}

	done, err := db.CompleteFinishedRuns(ctx, "judge")
	if err != nil || len(done) != 0 {
		t.Fatalf("with a job still to retry: completed %v (%v), want none", done, err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, jobID); err != nil {
		t.Fatal(err)
	}
	done, err = db.CompleteFinishedRuns(ctx, "judge")
	if err != nil || len(done) != 1 || done[0] != stuck.ID {
		t.Fatalf("with every job ended: completed %v (%v), want run %d alone", done, err, stuck.ID)
	}
	if s := runStatus(t, db, stuck.ID); s != attune.RunCompleted {
		t.Fatalf("the run is %s, want completed", s)
	}
	if s := runStatus(t, db, partial.ID); s != attune.RunRunning {
		t.Fatalf("the run with an item left is %s, want running", s)
	}
	if done, err = db.CompleteFinishedRuns(ctx, "judge"); err != nil || len(done) != 0 {
		t.Fatalf("again: completed %v (%v), want none", done, err)
	}
}
