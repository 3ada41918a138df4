package store

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/attune/attune/migrations"
)

// MigrationState is where the database stands against the migrations this
// binary carries.
type MigrationState struct {
	Current int64 // applied version in the database (0: none)
	Latest  int64 // newest version this binary knows
}

// Pending reports whether the binary has migrations the database lacks.
func (s MigrationState) Pending() bool { return s.Current < s.Latest }

// TooNew reports whether a newer binary migrated the database: this one
// must not touch it.
func (s MigrationState) TooNew() bool { return s.Current > s.Latest }

// ErrDatabaseTooNew is returned by Migrate when the database has migrations
// this binary does not know.
type ErrDatabaseTooNew struct{ State MigrationState }

func (e ErrDatabaseTooNew) Error() string {
	return fmt.Sprintf("the database is at schema version %d but this attune knows only up to %d: it was migrated by a newer attune; upgrade this binary", e.State.Current, e.State.Latest)
}

// migrator builds a goose provider over the pool. A PostgreSQL advisory
// lock serialises migrations, so replicas starting together take turns.
func (db *DB) migrator() (*goose.Provider, *sql.DB, error) {
	sqlDB := stdlib.OpenDBFromPool(db.SessionPool()) // the lock is a session's
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("store: migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, sqlDB, nil
}

// latestMigration is the newest schema version this binary carries, read
// once from the embedded file names (NNNNN_name.sql).
var latestMigration = sync.OnceValue(func() int64 {
	var latest int64
	entries, _ := fs.ReadDir(migrations.FS, ".")
	for _, e := range entries {
		digits, _, _ := strings.Cut(e.Name(), "_")
		if v, err := strconv.ParseInt(digits, 10, 64); err == nil && v > latest {
			latest = v
		}
	}
	return latest
})

// MigrationState reports the applied and the newest known schema version.
// It is one cheap query, fit for a readiness probe.
func (db *DB) MigrationState(ctx context.Context) (MigrationState, error) {
	// The version table is missing until the first migration; naming it in
	// a query that PostgreSQL plans would fail, so ask first.
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil {
		return MigrationState{}, fmt.Errorf("store: schema version: %w", err)
	}
	var current int64
	if exists {
		err := db.pool.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version`).Scan(&current)
		if err != nil {
			return MigrationState{}, fmt.Errorf("store: schema version: %w", err)
		}
	}
	return MigrationState{Current: current, Latest: latestMigration()}, nil
}

// Migrate applies every pending migration, writing one line per migration
// to log. It refuses, with ErrDatabaseTooNew, a database a newer binary has
// migrated.
func (db *DB) Migrate(ctx context.Context, log io.Writer) error {
	p, sqlDB, err := db.migrator()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	st, err := db.MigrationState(ctx)
	if err != nil {
		return err
	}
	if st.TooNew() {
		return ErrDatabaseTooNew{st}
	}
	results, err := p.Up(ctx)
	for _, r := range results {
		fmt.Fprintln(log, r)
	}
	if err != nil {
		return fmt.Errorf("store: migrate up: %w", err)
	}
	// The job queue keeps its own tables and versions; they are migrated
	// with the schema so that one command readies the whole database.
	rm, err := rivermigrate.New(riverpgxv5.New(db.pool), nil)
	if err != nil {
		return fmt.Errorf("store: job queue migrations: %w", err)
	}
	res, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("store: job queue migrate up: %w", err)
	}
	for _, v := range res.Versions {
		fmt.Fprintf(log, "OK    up job queue %03d_%s (%s)\n", v.Version, v.Name, v.Duration.Round(time.Microsecond))
	}
	return nil
}

// MigrateDown rolls back the newest applied migration.
func (db *DB) MigrateDown(ctx context.Context, log io.Writer) error {
	p, sqlDB, err := db.migrator()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	r, err := p.Down(ctx)
	if r != nil {
		fmt.Fprintln(log, r)
	}
	if err != nil {
		return fmt.Errorf("store: migrate down: %w", err)
	}
	// Below the first migration nothing of attune remains: remove the job
	// queue's tables too.
	if st, err := db.MigrationState(ctx); err == nil && st.Current == 0 {
		rm, err := rivermigrate.New(riverpgxv5.New(db.pool), nil)
		if err != nil {
			return fmt.Errorf("store: job queue migrations: %w", err)
		}
		if _, err := rm.Migrate(ctx, rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{TargetVersion: -1}); err != nil {
			return fmt.Errorf("store: job queue migrate down: %w", err)
		}
		fmt.Fprintln(log, "OK    down job queue (all)")
	}
	return nil
}

// WriteMigrationStatus writes one line per known migration: applied or
// pending, and when.
func (db *DB) WriteMigrationStatus(ctx context.Context, w io.Writer) error {
	p, sqlDB, err := db.migrator()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	st, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("store: migration status: %w", err)
	}
	for _, s := range st {
		when := "pending"
		if s.State == goose.StateApplied {
			when = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(w, "%-6d %-40s %s\n", s.Source.Version, baseName(s.Source.Path), when)
	}
	return nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
