package judge_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
)

// A worker whose lock is lost must stop the calls it has under way: from
// then on another process may take its jobs, and two workers on one item
// would pay for its calls twice. It goes on once it holds the lock again.
func TestWorkerStopsItsCallsWhenItLosesItsLock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holding, dropped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			first := false
			if !strings.Contains(string(body), "Is the sky blue on a clear day") {
				once.Do(func() { first = true })
			}
			if first {
				// Held until the worker gives the call up; without that it
				// would wait out the two-minute call timeout.
				close(holding)
				<-r.Context().Done()
				close(dropped)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	f := newFixture(t, setup{rubric: "empathetic-dialogue@2", data: replies, wrap: hold,
		opts: judge.RunnerOptions{RescueInterval: 50 * time.Millisecond}})
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Queue(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.runner.Stop(context.Background())
	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatal("no call reached the provider")
	}
	// The server ends the session that holds the worker's lock, as it does
	// for a client it finds dead.
	var ended bool
	if err := f.db.Pool().QueryRow(ctx, `
		SELECT bool_and(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'attune worker %'`).Scan(&ended); err != nil || !ended {
		t.Fatalf("end the lock's session: %v, %v", ended, err)
	}
	select {
	case <-dropped:
	case <-ctx.Done():
		t.Fatal("the worker kept its call under way after losing its lock")
	}
	done, err := f.runner.Wait(ctx, run.ID)
	if err != nil || done.Status != attune.RunCompleted {
		t.Fatalf("once the lock is held again the run ends: %v (%v)", done, err)
	}
	if n := len(f.labels(t)); n != 3*len(f.def.Items) {
		t.Fatalf("%d labels, want %d", n, 3*len(f.def.Items))
	}
	if !strings.Contains(f.logs.String(), "judge worker lock lost") {
		t.Fatal("losing the lock was not logged")
	}
}

// TestStartCompletesARunLeftRunning: a run whose every item was answered
// and every job ended, but which was left running (its mark lost between
// the last answer and the mark, as a failover could before the two
// committed together), is completed by the next runner to start, without
// a call.
func TestStartCompletesARunLeftRunning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies})
	done := f.run(t, 0)
	if done.Status != attune.RunCompleted {
		t.Fatalf("the run ended %s", done.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var calls, unfinished int
	if err := f.db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM judge_calls WHERE run_id = $1),
		(SELECT count(*) FROM river_job WHERE queue = 'judge' AND state NOT IN ('completed', 'cancelled', 'discarded'))`, done.ID).Scan(&calls, &unfinished); err != nil {
		t.Fatal(err)
	}
	if unfinished != 0 {
		t.Fatalf("%d jobs left to work after the run", unfinished)
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE judge_runs SET status = 'running', finished_at = NULL WHERE id = $1`, done.ID); err != nil {
		t.Fatal(err)
	}
	r, err := judge.NewRunner(f.db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background())
	run, err := r.Wait(ctx, done.ID)
	if err != nil || run.Status != attune.RunCompleted || run.FinishedAt == nil {
		t.Fatalf("after a runner's start the run is %+v (%v), want completed", run, err)
	}
	var after int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1`, done.ID).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != calls {
		t.Fatalf("completing the run made %d calls", after-calls)
	}
}

// A wait whose listening session the database drops (a failover, an
// administrator's pg_terminate_backend) listens again rather than ending
// or spinning, and still returns the run once it ends.
func TestWaitListensAgainAfterItsSessionDrops(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{rubric: "empathetic-understanding@1", data: replies})
	done := f.run(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := f.db.Pool().Exec(ctx, `UPDATE judge_runs SET status = 'running', finished_at = NULL WHERE id = $1`, done.ID); err != nil {
		t.Fatal(err)
	}
	waiter, err := judge.NewRunner(f.db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		run *attune.JudgeRun
		err error
	}
	got := make(chan result, 1)
	go func() {
		run, err := waiter.Wait(ctx, done.ID)
		got <- result{run, err}
	}()
	listener := func() int {
		t.Helper()
		for {
			var pid int
			err := f.db.Pool().QueryRow(ctx, `SELECT pid FROM pg_stat_activity
				WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&pid)
			if err == nil {
				return pid
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
			select {
			case r := <-got:
				t.Fatalf("the wait ended before the run did: %+v (%v)", r.run, r.err)
			case <-ctx.Done():
				t.Fatal("no session of the wait listens for runs")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	first := listener()
	if _, err := f.db.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, first); err != nil {
		t.Fatal(err)
	}
	for {
		if again := listener(); again != first {
			break
		}
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE judge_runs SET status = 'completed', finished_at = now() WHERE id = $1`, done.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.db.NotifyRun(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.run.Status != attune.RunCompleted {
		t.Fatalf("the wait returned %+v (%v), want the completed run", r.run, r.err)
	}
}
