package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// runningJob puts a job in the running state, taken by owner, the way the
// job queue leaves it while a worker works it.
func runningJob(t *testing.T, db *store.DB, queue, owner string, attempt int, attemptedAgo time.Duration) int64 {
	t.Helper()
	var id int64
	err := db.Pool().QueryRow(context.Background(), `
		INSERT INTO river_job (kind, args, queue, state, attempt, max_attempts, attempted_at, attempted_by, priority)
		VALUES ('judge_item', '{}', $1, 'running', $2, 25, now() - $3 * interval '1 second', ARRAY['earlier-worker', $4], 1)
		RETURNING id`, queue, attempt, attemptedAgo.Seconds(), owner).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type jobState struct {
	state     string
	errors    int
	finalized bool
}

func stateOf(t *testing.T, db *store.DB, id int64) jobState {
	t.Helper()
	var s jobState
	err := db.Pool().QueryRow(context.Background(), `
		SELECT state::text, coalesce(cardinality(errors), 0), finalized_at IS NOT NULL FROM river_job WHERE id = $1`, id).Scan(&s.state, &s.errors, &s.finalized)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRequeueJobsOfDeadWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	other := dbtest.New(t) // another database on the same server

	live, dead, gone, elsewhere := store.NewWorker(), store.NewWorker(), store.NewWorker(), store.NewWorker()
	lock, err := db.LockWorker(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	// A worker that held its lock and died: the lock went with its session.
	goneLock, err := db.LockWorker(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	goneLock.Close(ctx)
	// The same key locked in another database says nothing about this one.
	otherLock, err := other.LockWorker(ctx, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	defer otherLock.Close(ctx)

	jobs := map[string]int64{
		"live":             runningJob(t, db, "judge", live.ClientID(), 1, time.Hour*5),
		"dead":             runningJob(t, db, "judge", dead.ClientID(), 1, 0),
		"gone":             runningJob(t, db, "judge", gone.ClientID(), 3, time.Second),
		"elsewhere":        runningJob(t, db, "judge", elsewhere.ClientID(), 1, 0),
		"spent":            runningJob(t, db, "judge", dead.ClientID(), 25, 0),
		"other queue":      runningJob(t, db, "default", dead.ClientID(), 1, 0),
		"legacy, recent":   runningJob(t, db, "judge", "somehost_2026_01_01T00_00_00", 1, time.Minute),
		"legacy, 2 h old":  runningJob(t, db, "judge", "somehost_2026_01_01T00_00_00", 1, 2*time.Hour),
		"prefix, no lock?": runningJob(t, db, "judge", "attune-judge-x", 1, 0),
	}
	n, err := db.RequeueJobsOfDeadWorkers(ctx, "judge")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jobState{
		"live":             {"running", 0, false},
		"dead":             {"available", 1, false},
		"gone":             {"available", 1, false},
		"elsewhere":        {"available", 1, false},
		"spent":            {"discarded", 1, true},
		"other queue":      {"running", 0, false},
		"legacy, recent":   {"running", 0, false},
		"legacy, 2 h old":  {"available", 1, false},
		"prefix, no lock?": {"available", 1, false},
	}
	for name, id := range jobs {
		if got := stateOf(t, db, id); got != want[name] {
			t.Errorf("%s: %+v, want %+v", name, got, want[name])
		}
	}
	if n != 6 {
		t.Errorf("requeued %d jobs, want 6", n)
	}
	var msg string
	if err := db.Pool().QueryRow(ctx, `SELECT errors[1] ->> 'error' FROM river_job WHERE id = $1`, jobs["dead"]).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, dead.ClientID()) || !strings.Contains(msg, "died") {
		t.Errorf("the requeued job's error says %q", msg)
	}
	// Looking again moves nothing more.
	if n, err := db.RequeueJobsOfDeadWorkers(ctx, "judge"); err != nil || n != 0 {
		t.Fatalf("second look: %d, %v", n, err)
	}
}

func TestWorkerLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	w := store.NewWorker()
	lock, err := db.LockWorker(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	if second, err := db.LockWorker(ctx, w); err == nil || !strings.Contains(err.Error(), "another live process") {
		second.Close(ctx)
		t.Fatalf("a second process took a held worker key: %v", err)
	}
	if err := lock.Check(ctx); err != nil {
		t.Fatalf("check of a held lock: %v", err)
	}

	// The server ends the lock's session (as it does for a client it finds
	// dead): the holder learns that it lost the lock, then takes it again.
	job := runningJob(t, db, "judge", w.ClientID(), 1, 0)
	// The failed second lock's session may still be ending, listed and
	// gone by the time it is terminated (false, with a warning): the one
	// that must end is the lock's, which the checks below tell.
	var ended bool
	err = db.Pool().QueryRow(ctx, `
		SELECT coalesce(bool_or(pg_terminate_backend(pid, 5000)), false) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'attune worker %'`).Scan(&ended)
	if err != nil || !ended {
		t.Fatalf("terminate the lock's session: %v, %v", ended, err)
	}
	if n, err := db.RequeueJobsOfDeadWorkers(ctx, "judge"); err != nil || n != 1 {
		t.Fatalf("with its lock gone, the worker's job is taken for dead: %d, %v", n, err)
	}
	if err := lock.Check(ctx); err == nil {
		t.Fatal("check after the session ended says the lock was held throughout")
	}
	if err := lock.Check(ctx); err != nil {
		t.Fatalf("check once the lock is taken again: %v", err)
	}
	runningJob(t, db, "judge", w.ClientID(), 1, 0)
	if n, err := db.RequeueJobsOfDeadWorkers(ctx, "judge"); err != nil || n != 0 {
		t.Fatalf("with its lock taken again, the worker's job is left: %d, %v", n, err)
	}
	if s := stateOf(t, db, job); s.state != "available" {
		t.Fatalf("the job of the lost lock is %s", s.state)
	}
}

func TestPoolSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := dbtest.NewURL(t)
	db, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Pool().Config().MaxConns; got != store.DefaultMaxConns {
		t.Errorf("default pool: %d connections, want %d", got, store.DefaultMaxConns)
	}
	set, err := store.Open(ctx, u+"&pool_max_conns=7")
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if got := set.Pool().Config().MaxConns; got != 7 {
		t.Errorf("pool_max_conns=7: %d connections", got)
	}
}

func TestEnsureDatabaseWithPoolSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The pool's settings are not the server's: the single connections
	// EnsureDatabase opens must leave them out.
	u := dbtest.MissingURL(t) + "&pool_max_conns=3&pool_max_conn_lifetime=1h"
	created, err := store.EnsureDatabase(ctx, u)
	if err != nil || !created {
		t.Fatalf("EnsureDatabase(missing, with pool settings) = %v, %v", created, err)
	}
	created, err = store.EnsureDatabase(ctx, u)
	if err != nil || created {
		t.Fatalf("EnsureDatabase(existing, with pool settings) = %v, %v", created, err)
	}
}

// TestWorkerLockFreeOnClose: a closed lock is free at once, so the same
// worker (a Runner stopped and started again) takes it straight back.
func TestWorkerLockFreeOnClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	w := store.NewWorker()
	for i := range 50 {
		lock, err := db.LockWorker(ctx, w)
		if err != nil {
			t.Fatalf("take %d, right after the last close: %v", i, err)
		}
		if err := lock.Close(ctx); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
}
