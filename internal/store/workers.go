package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// A process that works queued jobs proves it is alive by holding a
// PostgreSQL advisory lock on a connection of its own. When the process
// dies the server ends its session, and the lock goes with it: at once for
// a killed process (the kernel closes its sockets), within the keepalive
// bound below for a host that vanished. Any other process may then queue
// the dead one's jobs again. Time alone cannot tell a dead worker from a
// slow one: a judge call may legitimately take minutes, and rescuing a job
// whose worker still runs it would pay for its calls twice.

// workerLockClass is the first key of every worker lock ("attj"), which
// keeps them apart from any other advisory lock on the database.
const workerLockClass int32 = 0x6174746a

// workerIDPrefix starts every worker's job-queue client id; the number
// after it is the worker's lock key.
const workerIDPrefix = "attune-judge-"

// legacyRescueAfter is how long a job taken by a client that holds no
// worker lock (one of an attune from before these locks) may run before it
// is taken for dead.
const legacyRescueAfter = time.Hour

// The server drops the session of a worker whose host is gone after about
// idle + interval×count seconds of silence, releasing its lock.
const (
	workerKeepaliveIdle     = 10
	workerKeepaliveInterval = 5
	workerKeepaliveCount    = 3
)

// Worker names one process's worker: the job queue records its ClientID on
// every job it takes, and LockWorker proves it alive.
type Worker struct {
	key int32
}

// NewWorker returns a worker with a fresh random key. Two live processes
// with one key cannot both lock it: LockWorker refuses the second.
func NewWorker() Worker {
	return Worker{key: rand.Int32N(math.MaxInt32) + 1}
}

// ClientID is the job-queue client id of the worker: its key, then the
// host name for people reading the queue.
func (w Worker) ClientID() string {
	id := workerIDPrefix + strconv.Itoa(int(w.key))
	if host, err := os.Hostname(); err == nil && host != "" {
		id += "@" + host
	}
	return id[:min(len(id), 100)] // the queue's limit
}

// WorkerLock is a worker's advisory lock, held on a connection outside the
// pool for as long as the process works jobs. Its methods are not safe for
// concurrent use.
type WorkerLock struct {
	cfg    *pgx.ConnConfig
	worker Worker
	conn   *pgx.Conn
}

// LockWorker takes w's lock on a connection of its own. It fails when
// another live process holds the same key; Close releases it.
func (db *DB) LockWorker(ctx context.Context, w Worker) (*WorkerLock, error) {
	cfg := db.SessionPool().Config().ConnConfig.Copy() // the lock is a session's
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "attune worker " + strconv.Itoa(int(w.key))
	cfg.RuntimeParams["tcp_keepalives_idle"] = strconv.Itoa(workerKeepaliveIdle)
	cfg.RuntimeParams["tcp_keepalives_interval"] = strconv.Itoa(workerKeepaliveInterval)
	cfg.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(workerKeepaliveCount)
	l := &WorkerLock{cfg: cfg, worker: w}
	if err := l.lock(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *WorkerLock) lock(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return fmt.Errorf("store: worker lock: connect: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, workerLockClass, l.worker.key).Scan(&ok); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("store: worker lock: %w", err)
	}
	if !ok {
		conn.Close(ctx)
		return fmt.Errorf("store: worker lock: key %d is held by another live process", l.worker.key)
	}
	l.conn = conn
	return nil
}

// Check reports whether the lock is still held, and takes it again on a
// new connection when its connection was lost. An error means the lock is
// not held now: other processes may already be queuing this worker's jobs
// again, so the caller must stop working the jobs it has.
func (l *WorkerLock) Check(ctx context.Context) error {
	if l.conn != nil {
		err := l.conn.Ping(ctx)
		if err == nil {
			return nil
		}
		l.conn.Close(context.WithoutCancel(ctx))
		l.conn = nil
		if relock := l.lock(ctx); relock != nil {
			return fmt.Errorf("store: worker lock lost (%v); %w", err, relock)
		}
		// The server may have dropped the session, and the lock with it,
		// before it was taken again.
		return fmt.Errorf("store: worker lock lost for a moment: %w", err)
	}
	return l.lock(ctx)
}

// Close releases the lock. Call it only once the worker's jobs are done.
func (l *WorkerLock) Close(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	// Unlocked first, on the connection that holds it: closing alone
	// leaves the lock held until the server has ended that backend, which
	// a Runner started again at once (or another process) can beat.
	_, uerr := l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, workerLockClass, l.worker.key)
	err := l.conn.Close(ctx)
	l.conn = nil
	return errors.Join(uerr, err)
}

// RequeueJobsOfDeadWorkers makes the running jobs of a queue whose worker
// holds no worker lock available again, and reports how many it moved. A
// job taken by a client that never holds a lock is taken for dead after an
// hour. A job that has used its attempts is discarded, as the queue's own
// rescuer does.
//
// One statement decides and moves, so a worker that starts, locks and takes
// a job while it runs is seen alive: the locks are read after the snapshot
// that shows the job running, and read again for a row another process
// changed meanwhile.
func (db *DB) RequeueJobsOfDeadWorkers(ctx context.Context, queue string) (int64, error) {
	tag, err := db.pool.Exec(ctx, `
		WITH dead AS (
			SELECT j.id, j.attempted_by[cardinality(j.attempted_by)] AS owner
			FROM river_job j
			WHERE j.queue = $1 AND j.state = 'running'
			  AND CASE WHEN j.attempted_by[cardinality(j.attempted_by)] LIKE $2 || '%'
			      THEN NOT EXISTS (
			          SELECT 1 FROM pg_locks l
			          WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
			            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			            AND l.classid::bigint = $3
			            AND l.objid::bigint = substring(j.attempted_by[cardinality(j.attempted_by)] FROM '^' || $2 || '([0-9]+)')::bigint)
			      ELSE j.attempted_at < now() - $4 * interval '1 second'
			      END
			FOR UPDATE OF j
		)
		UPDATE river_job j SET
			state = CASE WHEN j.attempt < j.max_attempts THEN 'available' ELSE 'discarded' END::river_job_state,
			scheduled_at = CASE WHEN j.attempt < j.max_attempts THEN now() ELSE j.scheduled_at END,
			finalized_at = CASE WHEN j.attempt < j.max_attempts THEN NULL ELSE now() END,
			errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt,
				'error', 'its worker ' || coalesce(dead.owner, '(none)') || ' died', 'trace', '')),
			metadata = j.metadata || jsonb_build_object('attune:requeued_from_dead_worker',
				coalesce((j.metadata ->> 'attune:requeued_from_dead_worker')::int, 0) + 1)
		FROM dead
		WHERE j.id = dead.id`,
		queue, workerIDPrefix, workerLockClass, legacyRescueAfter.Seconds())
	if err != nil {
		return 0, mapErr(err, "requeue jobs of dead workers", "")
	}
	return tag.RowsAffected(), nil
}
