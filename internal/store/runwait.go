package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// runChannel is the notification channel on which a judge run's changes
// are announced, its payload the run's id.
const runChannel = "attune_judge_run"

// NotifyRun tells whoever listens (RunListener, in this process or
// another) that a judge run changed: its status, its progress. A
// notification is a hint to look again, never the change itself.
func (db *DB) NotifyRun(ctx context.Context, runID int64) error {
	if _, err := db.pool.Exec(ctx, `SELECT pg_notify('`+runChannel+`', $1)`, strconv.FormatInt(runID, 10)); err != nil {
		return fmt.Errorf("store: notify run %d: %w", runID, err)
	}
	return nil
}

// RunListener is a session listening for NotifyRun. It holds a connection
// of the session pool (LISTEN lasts as long as its session) until Close.
// One goroutine at a time may use it.
type RunListener struct {
	conn *pgxpool.Conn
}

// ListenRuns starts listening for judge runs' changes. The caller must
// Close the listener.
func (db *DB) ListenRuns(ctx context.Context) (*RunListener, error) {
	conn, err := db.SessionPool().Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: listen for runs: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+runChannel); err != nil {
		conn.Release()
		return nil, fmt.Errorf("store: listen for runs: %w", err)
	}
	return &RunListener{conn: conn}, nil
}

// Wait returns once any run's change is notified, or with ctx's error (or
// the connection's) when none came first. Notifications that arrived
// since the last Wait are returned at once, one per call.
func (l *RunListener) Wait(ctx context.Context) error {
	_, err := l.conn.Conn().WaitForNotification(ctx)
	return err
}

// Close stops listening and gives the session back to the pool. It runs
// even when ctx has ended: a session handed back still listening would
// wake with every run's notifications for its next user.
func (l *RunListener) Close(ctx context.Context) {
	l.conn.Exec(context.WithoutCancel(ctx), `UNLISTEN `+runChannel)
	l.conn.Release()
}

// QueueDriver is the job queue's driver, on the session pool: the queue
// listens and elects its leader on sessions of its own.
func (db *DB) QueueDriver() *riverpgxv5.Driver {
	return riverpgxv5.New(db.SessionPool())
}
