package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultReplicaMaxLag is how far behind the primary the replica may be
// before heavy reads go back to the primary, unless OpenReplica is told
// otherwise.
const DefaultReplicaMaxLag = 30 * time.Second

// replicaCheckTime bounds the two small queries that find whether the
// replica keeps up: a replica that takes longer to answer counts as down.
const replicaCheckTime = 2 * time.Second

// caughtUpSlack is how many bytes of WAL the replica may lack and still be
// up to date. The primary's write position can sit just past a page
// header the replica's replay position never counts; every transaction
// writes a record larger than the longest header (40 bytes).
const caughtUpSlack = 40

// replica is the streaming standby that leads' heavy reads go to.
type replica struct {
	db     *DB // the replica's pool, with its own lead-read slots
	maxLag time.Duration
}

// OpenReplica sets the read replica (a hot standby of this DB's primary,
// at url) that HeavyReads sends leads' reports, exports and searches to
// while it is at most maxLag behind (0 keeps DefaultReplicaMaxLag). It
// needs the URL to parse, not the replica to answer: a replica that is
// down is found at each heavy read, which then reads the primary. Call it
// before the DB is used by more than one goroutine; Close closes it.
func (db *DB) OpenReplica(ctx context.Context, url string, maxLag time.Duration) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("store: parse replica URL: %w", err)
	}
	if !setsParam(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store: replica at %s: %w", redact(url), err)
	}
	rdb, err := newDB(pool)
	if err != nil {
		pool.Close()
		return err
	}
	if maxLag <= 0 {
		maxLag = DefaultReplicaMaxLag
	}
	if db.replica != nil {
		db.replica.db.Close()
	}
	db.replica = &replica{db: rdb, maxLag: maxLag}
	rdb.SetReadLimits(db.readLimits)
	return nil
}

// Why heavy reads go to the primary though a replica is set
// (ReadSource.Fallback).
const (
	// FallbackDown: the replica did not answer, or answered with an error.
	FallbackDown = "down"
	// FallbackLagging: the replica is further behind than the bound, or
	// how far behind it is cannot be told.
	FallbackLagging = "lagging"
	// FallbackNotStandby: the replica is not in recovery (it was
	// promoted), so what it holds may differ from the primary's.
	FallbackNotStandby = "not a standby"
)

// ReadSource says where a lead's heavy read reads, for its page to tell.
// The zero value is the primary with no replica set.
type ReadSource struct {
	// Configured is true when a replica is set.
	Configured bool
	// Replica is true when the read goes to the replica.
	Replica bool
	// UpToDate is true when the replica had replayed all the primary had
	// written when HeavyReads asked.
	UpToDate bool
	// Behind bounds how far the replica is behind when it is not up to
	// date: its newest replayed change was committed this long ago (by
	// the replica's clock). 0 when unknown or up to date.
	Behind time.Duration
	// MaxLag is the bound beyond which the primary is read.
	MaxLag time.Duration
	// Fallback says why the primary is read though a replica is set:
	// FallbackDown, FallbackLagging or FallbackNotStandby; "" otherwise.
	Fallback string
}

// HeavyReads returns the database that a lead's heavy reads (reports,
// exports, the items search) should use, and where that is. Without a
// replica it is db itself. With one, it is the replica when the replica
// answers, is a standby and is up to date or at most MaxLag behind; else
// it is db, the primary, with the reason in ReadSource.Fallback: heavy
// reads on the primary still go through its lead-read slots, so falling
// back never takes the connections annotators need. Whether the replica
// is up to date is found by comparing its replay position with the
// primary's WAL position, not by the age of its last replayed commit,
// which grows on a primary nobody writes to.
func (db *DB) HeavyReads(ctx context.Context) (*DB, ReadSource) {
	r := db.replica
	if r == nil {
		return db, ReadSource{}
	}
	src := ReadSource{Configured: true, MaxLag: r.maxLag}
	ctx, cancel := context.WithTimeout(ctx, replicaCheckTime)
	defer cancel()
	// The primary's position first: all that was committed before the
	// read was asked for is at or before it.
	var written string
	if err := db.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&written); err != nil {
		// The primary itself fails; the read will say so there.
		src.Fallback = FallbackDown
		return db, src
	}
	var standby, caughtUp bool
	var behind *float64
	err := r.db.pool.QueryRow(ctx, `
		SELECT pg_is_in_recovery(),
		       coalesce($1::pg_lsn - pg_last_wal_replay_lsn() <= $2, false),
		       extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8`, written, caughtUpSlack).Scan(&standby, &caughtUp, &behind)
	switch {
	case err != nil:
		src.Fallback = FallbackDown
	case !standby:
		src.Fallback = FallbackNotStandby
	case caughtUp:
		src.Replica, src.UpToDate = true, true
	case behind == nil:
		src.Fallback = FallbackLagging // nothing replayed since it started
	default:
		src.Behind = max(0, time.Duration(*behind*float64(time.Second)))
		if src.Behind > r.maxLag {
			src.Fallback = FallbackLagging
		} else {
			src.Replica = true
		}
	}
	if src.Replica {
		return r.db, src
	}
	return db, src
}
