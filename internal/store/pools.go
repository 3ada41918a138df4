package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Behind a connection pooler in transaction mode (PgBouncer's
// pool_mode = transaction), each transaction may run on another server
// session. What attune keeps on a session — the job queue's LISTEN and
// leader election, the worker locks, the migration lock, a waiter's
// LISTEN — then needs a connection straight to PostgreSQL: the session
// pool. Everything else, every statement and transaction of the web
// requests and the workers, goes through the pooler.

// DefaultSessionMaxConns is the size of the session pool when the direct
// URL does not set pool_max_conns: the job queue's listener, its
// producers' fetches and completions, and a waiter or two.
const DefaultSessionMaxConns = 6

// ErrPooler is returned by CheckSessions when DATABASE_URL leads to a
// connection pooler and no direct connection was given.
var ErrPooler = errors.New("DATABASE_URL leads to a connection pooler (PgBouncer), where attune's job queue, worker locks and LISTEN lose their sessions: " +
	"set ATTUNE_DIRECT_DATABASE_URL to a connection straight to PostgreSQL (or to the pooler in session mode)")

// OpenPooled connects the pool to url, a pooler in transaction (or
// session) mode, and the session pool to directURL, a connection straight
// to PostgreSQL. The pool sends no named prepared statements, which a
// pooler in transaction mode cannot keep (PgBouncer before 1.21), unless
// url chooses a default_query_exec_mode itself; one that prepares named
// statements (cache_statement) is refused.
func OpenPooled(ctx context.Context, url, directURL string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w", err)
	}
	if !setsParam(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if !strings.Contains(url, "default_query_exec_mode") {
		// Described once per statement, on the unnamed statement, so that
		// parameters are encoded by their real types (exec guesses them
		// from Go's, and sends []byte to a json column as bytea).
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	} else if cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		return nil, errors.New("store: DATABASE_URL sets default_query_exec_mode=cache_statement, whose named prepared statements a pooler in transaction mode loses: leave it out (attune then uses cache_describe)")
	}
	dcfg, err := pgxpool.ParseConfig(directURL)
	if err != nil {
		return nil, fmt.Errorf("store: parse ATTUNE_DIRECT_DATABASE_URL: %w", err)
	}
	if !setsParam(directURL, "pool_max_conns") {
		dcfg.MaxConns = DefaultSessionMaxConns
	}
	pool, err := connect(ctx, cfg, url)
	if err != nil {
		return nil, err
	}
	session, err := connect(ctx, dcfg, directURL)
	if err != nil {
		pool.Close()
		return nil, err
	}
	db, err := newDB(pool)
	if err != nil {
		pool.Close()
		session.Close()
		return nil, err
	}
	db.session = session
	return db, nil
}

func connect(ctx context.Context, cfg *pgxpool.Config, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", redact(url), err)
	}
	return pool, nil
}

// SessionPool returns the pool for work that needs a session of its own
// (LISTEN, session advisory locks, the job queue's client): the direct
// pool of OpenPooled, else the pool.
func (db *DB) SessionPool() *pgxpool.Pool {
	if db.session != nil {
		return db.session
	}
	return db.pool
}

// closeSession closes the session pool of OpenPooled, if any.
func (db *DB) closeSession() {
	if db.session != nil {
		db.session.Close()
	}
}

// probeParam is a startup parameter PostgreSQL accepts (a placeholder
// for an extension's setting) and PgBouncer refuses as unsupported.
const probeParam = "attune.pooler_probe"

// CheckSessions returns ErrPooler when url leads to PgBouncer rather than
// to PostgreSQL itself: a server that takes an unknown extension's
// setting at connection is PostgreSQL, and PgBouncer refuses every startup
// parameter it does not know.
func CheckSessions(ctx context.Context, url string) error {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("store: parse database URL: %w", err)
	}
	cfg := pcfg.ConnConfig.Copy()
	cfg.RuntimeParams[probeParam] = "1"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.Contains(pgErr.Message, "unsupported startup parameter") {
		return ErrPooler
	}
	// Any other failure is for the real connection to report.
	return nil
}

// RequeueStrandedJobs makes available again the running jobs of queue
// last taken by the worker clientID, except those in working (the ones
// its process runs now), and reports how many it moved. A worker calls it
// when it holds its lock again after losing it: jobs it finished while
// the database was away may never have been recorded as finished.
func (db *DB) RequeueStrandedJobs(ctx context.Context, queue, clientID string, working []int64) (int64, error) {
	tag, err := db.pool.Exec(ctx, `
		UPDATE river_job j SET state = 'available', scheduled_at = now(),
			metadata = j.metadata || jsonb_build_object('attune:requeued_stranded',
				coalesce((j.metadata ->> 'attune:requeued_stranded')::int, 0) + 1)
		WHERE j.queue = $1 AND j.state = 'running' AND j.attempted_by[cardinality(j.attempted_by)] = $2
		  AND NOT j.id = ANY($3::bigint[])`, queue, clientID, working)
	if err != nil {
		return 0, mapErr(err, "requeue stranded jobs", "")
	}
	return tag.RowsAffected(), nil
}
