// Package store owns attune's PostgreSQL database: the connection pool,
// the migrations, every SQL statement (each beside the method that runs it)
// and the transactions. Nothing else in attune speaks SQL.
//
// Methods take a context first, map "no rows" to attune.ErrNotFound and
// unique violations to attune.ErrConflict, and wrap every other error with
// the operation's name.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/attune/attune/internal/attune"
)

// DB is the attune database.
type DB struct {
	pool *pgxpool.Pool
	// jobs queues jobs inside the store's own transactions (InsertTx), so
	// a job announcing a change is queued exactly when the change commits.
	// It works none: workers run elsewhere.
	jobs *river.Client[pgx.Tx]
	// settleHook, set by tests only, runs in a settling's transaction
	// before it commits.
	settleHook func(context.Context, pgx.Tx) error
	// settleBatch, set by tests only, replaces settleBatchSize, so that a
	// small backlog is worked through in several transactions.
	settleBatch int
	// rubrics holds parsed rubric versions by id: versions never change
	// (a trigger refuses it), and parsing one is too slow to repeat on
	// every submission that settles an item or every page.
	rubrics sync.Map
	// session, when attune reaches PostgreSQL through a pooler, is a
	// pool straight to it for the work that needs a session (pools.go).
	session *pgxpool.Pool
	// readLimits and leadReads bound leads' heavy reads (leadreads.go).
	readLimits ReadLimits
	leadReads  *readSlots
	// replica, when set, takes leads' heavy reads while it keeps up
	// (replica.go).
	replica *replica
}

// DefaultMaxConns is the size of the pool when the database URL does not
// set pool_max_conns. A serving process shares its pool between web
// requests and the judge queue, which keeps one connection listening for
// new jobs, elects its leader and records every item its workers answer
// (64 at once by default): pgx's own default (4 on a small machine) left
// the queue's leader election waiting behind 150 annotators. Several
// processes on one PostgreSQL share its max_connections (100 by default),
// so it stays well below that.
const DefaultMaxConns = 20

// Open connects a pool to the database at url and checks that it answers.
// The pool holds DefaultMaxConns connections unless url sets
// pool_max_conns. Close the DB when done.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w", err)
	}
	if !setsParam(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", redact(url), err)
	}
	db, err := newDB(pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// newDB wraps a connected pool.
func newDB(pool *pgxpool.Pool) (*DB, error) {
	jobs, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("store: job queue: %w", err)
	}
	db := &DB{pool: pool, jobs: jobs}
	db.SetReadLimits(ReadLimits{})
	return db, nil
}

// setsParam reports whether a connection string, URL or key=value form,
// sets the parameter.
func setsParam(conn, name string) bool {
	cfg, err := pgx.ParseConfig(conn) // keeps what it does not know as runtime parameters
	if err != nil {
		return false
	}
	_, ok := cfg.RuntimeParams[name]
	return ok
}

// Close closes every connection of the pool, waiting for those in use.
func (db *DB) Close() {
	db.pool.Close()
	db.closeSession()
	if db.replica != nil {
		db.replica.db.Close()
	}
}

// Pool returns the underlying pool, for the session store and the job
// queue, which speak to PostgreSQL through their own libraries.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// EnsureDatabase creates the database named in url when it does not exist,
// connecting to the server's maintenance database to do so. It reports
// whether it created it. Several replicas may race here: losing the race is
// not an error. The pool's own settings in url (pool_max_conns…) are left
// out of these single connections: the server would refuse them as unknown
// parameters.
func EnsureDatabase(ctx context.Context, dbURL string) (created bool, err error) {
	// pgxpool's parser takes out its own settings and leaves the rest, in
	// either form of connection string.
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return false, fmt.Errorf("store: parse database URL: %w", err)
	}
	cfg := pcfg.ConnConfig
	name := cfg.Database
	if name == "" {
		return false, nil // the server's default database always exists
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err == nil {
		conn.Close(ctx)
		return false, nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return false, fmt.Errorf("store: connect to %s: %w", redact(dbURL), err)
	}
	maint := cfg.Copy()
	maint.Database = "postgres"
	conn, err = pgx.ConnectConfig(ctx, maint)
	if err != nil {
		return false, fmt.Errorf("store: connect to the maintenance database of %s to create database %q: %w", redact(dbURL), name, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: another replica won
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: create database %q: %w", name, err)
	}
	return true, nil
}

// redact hides a password in a connection URL so that it can be logged.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(unparsable database URL)"
	}
	return u.Redacted()
}

// inTx runs fn in a transaction, committing when fn returns nil.
func (db *DB) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.pool, fn)
}

// inBatchTx runs fn in a transaction whose BEGIN is the first query of b,
// so that it travels with the transaction's first statements: one round
// trip fewer than inTx. fn reads the rest of b's results from br and closes
// it before it uses tx; the transaction commits when fn returns nil.
func (db *DB) inBatchTx(ctx context.Context, b *pgx.Batch, fn func(tx pgx.Tx, br pgx.BatchResults) error) error {
	br := db.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }() // after a commit, it does nothing
	_, err := br.Exec()                     // BEGIN
	if err == nil {
		err = fn(tx, br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// mapErr turns database errors into attune's error kinds. what names the
// operation for the wrapped message; conflict is the message shown to the
// user on a unique violation.
func mapErr(err error, what, conflict string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return attune.NotFound(what + ": not found")
	}
	// A rule's verdict (a bad field, a refused change) goes back as it
	// is: its message is for the person who asked.
	var v *attune.ValidationError
	if errors.As(err, &v) || errors.Is(err, attune.ErrForbidden) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && conflict != "" { // unique_violation
		return attune.Conflict(conflict)
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

// isDeadlock reports whether PostgreSQL ended a statement to break a
// deadlock.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01" // deadlock_detected
}
