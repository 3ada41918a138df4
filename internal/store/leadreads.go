package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrReadsBusy is returned by a lead's heavy read (the items search) when
// as many of them run as ReadLimits allows: the rest of the pool is kept
// for annotators' submissions. The caller answers "busy, try again".
var ErrReadsBusy = errors.New("store: every connection for searches is in use")

// ErrReadTimeout is returned by a lead's heavy read that ran longer than
// its statement timeout (ReadLimits) and was cancelled by PostgreSQL.
var ErrReadTimeout = errors.New("store: the read took longer than its time limit")

// DefaultSearchTimeout is the longest an items search may run unless
// SetReadLimits says otherwise.
const DefaultSearchTimeout = 5 * time.Second

// ReadLimits bound the heavy reads leads start, so that one lead's
// searches can neither run for ever nor take the connections annotators
// need.
type ReadLimits struct {
	// SearchTimeout is the statement_timeout of an items search; 0 keeps
	// DefaultSearchTimeout.
	SearchTimeout time.Duration
	// Slots is how many such reads may hold a connection at once; 0 is a
	// quarter of the pool (at least 1). A read that finds them all taken
	// fails at once with ErrReadsBusy rather than queueing for the pool.
	Slots int
}

// SetReadLimits sets the bounds of leads' heavy reads. Call it before the
// DB is used by more than one goroutine.
func (db *DB) SetReadLimits(l ReadLimits) {
	if l.SearchTimeout <= 0 {
		l.SearchTimeout = DefaultSearchTimeout
	}
	if l.Slots <= 0 {
		l.Slots = max(1, int(db.pool.Config().MaxConns)/4)
	}
	db.readLimits = l
	db.leadReads = make(chan struct{}, l.Slots)
}

// leadRead runs fn in a read-only transaction on one of the lead-read
// slots, with PostgreSQL cancelling any statement that runs longer than
// timeout. It fails with ErrReadsBusy when every slot is taken and with
// ErrReadTimeout when a statement ran out of time.
func (db *DB) leadRead(ctx context.Context, timeout time.Duration, fn func(tx pgx.Tx) error) error {
	select {
	case db.leadReads <- struct{}{}:
	default:
		return ErrReadsBusy
	}
	defer func() { <-db.leadReads }()
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// SET LOCAL takes no parameter; set_config(…, true) is the same
		// and does. The limit ends with the transaction.
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, fmt.Sprint(max(1, timeout.Milliseconds()))); err != nil {
			return err
		}
		return fn(tx)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil {
		return ErrReadTimeout
	}
	return err
}
