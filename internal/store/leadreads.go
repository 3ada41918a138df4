package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrReadsBusy is returned by a lead's heavy read (an items search, a
// report, an export) when the lead-read slots it needs are all taken
// (ReadLimits): the rest of the pool is kept for annotators' submissions.
// The caller answers "busy, try again".
var ErrReadsBusy = errors.New("store: every connection for heavy reads is in use")

// ErrReadTimeout is returned, inside a *ReadTimeoutError, by a lead's
// heavy read whose statement ran longer than its timeout (ReadLimits) and
// was cancelled by PostgreSQL.
var ErrReadTimeout = errors.New("store: the read took longer than its time limit")

// ReadTimeoutError is a heavy read that ran out of time. errors.Is(err,
// ErrReadTimeout) holds for it.
type ReadTimeoutError struct {
	Read  ReadKind      // which read
	Limit time.Duration // the statement timeout it had
}

func (e *ReadTimeoutError) Error() string {
	return fmt.Sprintf("store: the %s read took longer than its time limit (%v)", e.Read, e.Limit)
}

// Is makes a ReadTimeoutError match ErrReadTimeout.
func (e *ReadTimeoutError) Is(target error) bool { return target == ErrReadTimeout }

// ReadKind names a kind of heavy read, each with its own timeout.
type ReadKind string

// The heavy reads leads start.
const (
	ReadSearch ReadKind = "search"
	ReadReport ReadKind = "report"
	ReadExport ReadKind = "export"
)

// The timeouts of the heavy reads unless SetReadLimits says otherwise. A
// report over six million labels takes a few seconds; an export's timeout
// bounds each batch of rows it fetches (exportBatch), never the download.
const (
	DefaultSearchTimeout = 5 * time.Second
	DefaultReportTimeout = 30 * time.Second
	DefaultExportTimeout = 60 * time.Second
)

// ReadLimits bound the heavy reads leads start, so that one lead's
// searches, reports and exports can neither run for ever nor take the
// connections annotators need.
type ReadLimits struct {
	// SearchTimeout is the statement_timeout of an items search; 0 keeps
	// DefaultSearchTimeout.
	SearchTimeout time.Duration
	// ReportTimeout is the statement_timeout of each part of a report's
	// read of the labels; 0 keeps DefaultReportTimeout.
	ReportTimeout time.Duration
	// ExportTimeout is the statement_timeout of each statement of an
	// export: the declaration of its cursors and each fetch of a batch of
	// rows. A slow download waits between fetches and is never cut by it.
	// 0 keeps DefaultExportTimeout.
	ExportTimeout time.Duration
	// Slots is how many connections such reads may hold at once; 0 is a
	// quarter of the pool (at least 1). A search, an export of one table
	// and each part of a report take one; the dataset export takes three
	// (all of them when there are fewer). A read that finds too few free
	// fails with ErrReadsBusy rather than queueing for the pool: a search
	// at once, a report or an export after waiting up to SlotWait for
	// slots to be given back (waiting holds no connection).
	Slots int
	// SlotWait is how long a report or an export waits for free slots; 0
	// keeps DefaultSlotWait, a negative one waits not at all.
	SlotWait time.Duration
}

// DefaultSlotWait is how long a report or an export waits for lead-read
// slots unless SetReadLimits says otherwise: long enough for a few leads'
// downloads started together to take turns.
const DefaultSlotWait = 15 * time.Second

func (l ReadLimits) timeout(k ReadKind) time.Duration {
	switch k {
	case ReadReport:
		return l.ReportTimeout
	case ReadExport:
		return l.ExportTimeout
	}
	return l.SearchTimeout
}

// readSlots counts the lead-read slots in use.
type readSlots struct {
	mu        sync.Mutex
	used, cap int
	// given is closed, and replaced, whenever slots are given back.
	given chan struct{}
}

func newReadSlots(n int) *readSlots { return &readSlots{cap: n, given: make(chan struct{})} }

// take takes between least and most slots, as many as are free, and
// returns how many, waiting up to wait for enough to be free; 0 when
// fewer than least are free by then (or ctx ends). least and most are cut
// to the number of slots there are.
func (s *readSlots) take(ctx context.Context, least, most int, wait time.Duration) int {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		s.mu.Lock()
		least, most := min(least, s.cap), min(most, s.cap)
		n := min(most, s.cap-s.used)
		given := s.given
		if n >= least && n >= 1 {
			s.used += n
			s.mu.Unlock()
			return n
		}
		s.mu.Unlock()
		if timeout == nil {
			return 0
		}
		select {
		case <-given:
		case <-timeout:
			return 0
		case <-ctx.Done():
			return 0
		}
	}
}

func (s *readSlots) give(n int) {
	s.mu.Lock()
	s.used -= n
	close(s.given)
	s.given = make(chan struct{})
	s.mu.Unlock()
}

// SetReadLimits sets the bounds of leads' heavy reads, on the primary and
// on the replica (each gets Slots of its own). Call it before the DB is
// used by more than one goroutine.
func (db *DB) SetReadLimits(l ReadLimits) {
	if l.SearchTimeout <= 0 {
		l.SearchTimeout = DefaultSearchTimeout
	}
	if l.ReportTimeout <= 0 {
		l.ReportTimeout = DefaultReportTimeout
	}
	if l.ExportTimeout <= 0 {
		l.ExportTimeout = DefaultExportTimeout
	}
	if l.SlotWait == 0 {
		l.SlotWait = DefaultSlotWait
	}
	db.readLimits = l
	slots := l.Slots
	if slots <= 0 {
		slots = max(1, int(db.pool.Config().MaxConns)/4)
	}
	db.leadReads = newReadSlots(slots)
	if db.replica != nil {
		db.replica.db.SetReadLimits(l)
	}
}

// takeReads takes lead-read slots for a read of kind as readSlots.take
// does (a search waits for none, the rest up to SlotWait), failing with
// ErrReadsBusy when there are too few; release gives them back.
func (db *DB) takeReads(ctx context.Context, kind ReadKind, least, most int) (n int, release func(), err error) {
	wait := db.readLimits.SlotWait
	if kind == ReadSearch {
		wait = 0
	}
	n = db.leadReads.take(ctx, least, most, wait)
	if n == 0 {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		return 0, nil, ErrReadsBusy
	}
	return n, func() { db.leadReads.give(n) }, nil
}

// leadRead runs fn in a read-only transaction on one lead-read slot (see
// readTx). It fails with ErrReadsBusy when every slot is taken.
func (db *DB) leadRead(ctx context.Context, kind ReadKind, fn func(tx pgx.Tx) error) error {
	_, release, err := db.takeReads(ctx, kind, 1, 1)
	if err != nil {
		return err
	}
	defer release()
	return db.readTx(ctx, db.pool, kind, fn)
}

// beginner is the pool or one of its connections.
type beginner interface {
	BeginTx(ctx context.Context, o pgx.TxOptions) (pgx.Tx, error)
}

// readTx runs fn in a read-only repeatable-read transaction begun on b,
// with PostgreSQL cancelling any statement that runs longer than kind's
// timeout. A statement cancelled so is returned as a *ReadTimeoutError;
// any other error as it is.
func (db *DB) readTx(ctx context.Context, b beginner, kind ReadKind, fn func(tx pgx.Tx) error) error {
	limit := db.readLimits.timeout(kind)
	return db.timedOut(ctx, kind, pgx.BeginTxFunc(ctx, b, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := setReadTimeout(ctx, tx, limit); err != nil {
			return err
		}
		return fn(tx)
	}))
}

// setReadTimeout sets the statement timeout of the transaction's
// statements. SET LOCAL takes no parameter; set_config(…, true) is the
// same and does. The limit ends with the transaction.
func setReadTimeout(ctx context.Context, tx pgx.Tx, limit time.Duration) error {
	_, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, fmt.Sprint(max(1, limit.Milliseconds())))
	return err
}

// timedOut turns PostgreSQL's cancellation of a statement at its timeout
// into a *ReadTimeoutError; a cancellation the caller asked for (ctx)
// stays what it is.
func (db *DB) timedOut(ctx context.Context, kind ReadKind, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil {
		return &ReadTimeoutError{Read: kind, Limit: db.readLimits.timeout(kind)}
	}
	return err
}
