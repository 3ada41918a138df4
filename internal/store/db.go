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
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/attune/attune/internal/attune"
)

// DB is the attune database.
type DB struct {
	pool *pgxpool.Pool
}

// Open connects a pool to the database at url and checks that it answers.
// Close the DB when done.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", redact(url), err)
	}
	return &DB{pool: pool}, nil
}

// Close closes every connection of the pool, waiting for those in use.
func (db *DB) Close() { db.pool.Close() }

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
// not an error.
func EnsureDatabase(ctx context.Context, dbURL string) (created bool, err error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return false, fmt.Errorf("store: parse database URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return false, nil // the server's default database always exists
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err == nil {
		conn.Close(ctx)
		return false, nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return false, fmt.Errorf("store: connect to %s: %w", redact(dbURL), err)
	}
	maint := *u
	maint.Path = "/postgres"
	conn, err = pgx.Connect(ctx, maint.String())
	if err != nil {
		return false, fmt.Errorf("store: connect to %s to create database %q: %w", redact(maint.String()), name, err)
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
