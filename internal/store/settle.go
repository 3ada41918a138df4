package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// A submit that gives an item its overlap of labels does not apply the
// consensus rule itself: it queues the item (settle_queue, in the submit's
// own transaction), and a Settler settles it after the commit, with the
// project's full-overlap check and the webhooks both announce. The
// annotator waits for their own answers only, and a submit holds no lock
// but those of its own assignment and its item's counters.
//
// Exactly once: a settling deletes the rows it took in the transaction
// that writes their gold and queues their announcements, so a settler
// killed mid-way (the process, or only its connection) leaves every row
// it took for the next one, and a row settled is gone. Settling an item
// twice (two rows of one item: submits after a lead lowered the overlap)
// decides nothing twice: the rule writes only gold that changes, and
// announces only that.

// SettleInterval is how long a Settler waits between looks at the queue
// when it finds it empty.
const SettleInterval = 200 * time.Millisecond

// SettleBound is how long after its commit a submit's item is settled
// (gold or a place in the queue of disagreements, and the project's full
// overlap announced) while a Settler runs on the database: one interval
// of waiting and the settling itself, which takes milliseconds for the
// items of a second of submits (TestSettledWithinBound).
const SettleBound = time.Second

// SettledChannel is the PostgreSQL notification channel on which every
// settling that took queue rows says, as it commits, the project's id.
const SettledChannel = "attune_settled"

// settleBatchSize is the most queue rows one transaction takes from a
// project: a backlog (a settler stopped for a while) is worked through in
// short transactions.
const settleBatchSize = 200

// SettleQueued writes the labels of the answer sets submits queued and
// settles the items they queued when it starts, project by project, and
// returns how many queue rows it took (of both queues). It waits for a
// settler working on the same project elsewhere, never for a submit. Any
// number may run at once, in any number of processes.
func (db *DB) SettleQueued(ctx context.Context) (int, error) {
	rows, err := db.pool.Query(ctx, `SELECT project_id FROM settle_queue UNION SELECT project_id FROM labels_pending ORDER BY 1`)
	if err != nil {
		return 0, mapErr(err, "settle queued", "")
	}
	projects, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, mapErr(err, "settle queued", "")
	}
	// A project that fails to settle keeps its rows for the next look and
	// holds up no other project.
	total := 0
	var errs []error
	for _, p := range projects {
		// The answer sets' labels first, which the rule reads and which
		// every lead's read waits for otherwise (pending.go).
		n, err := db.currentLabels(ctx, p)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("project %d: %w", p, err))
			continue
		}
		for {
			n, more, err := db.settleProject(ctx, p)
			for attempt := 1; isDeadlock(err) && attempt < submitAttempts; attempt++ {
				n, more, err = db.settleProject(ctx, p)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("project %d: %w", p, err))
				break
			}
			total += n
			if !more {
				break
			}
		}
	}
	return total, mapErr(errors.Join(errs...), "settle queued", "")
}

// settleProject takes up to settleBatchSize of the project's queue rows and
// settles their items, in one transaction; more says rows remain.
//
// The full overlap is announced once per time the project reaches it:
// settlings of one project take turns (an advisory lock), and the rows
// taken and the project's label counts are read in one statement, from
// one snapshot. A snapshot in which every item has its overlap shows the
// submit that gave the last item its last label, and with it that
// submit's row: the first settling to see it takes it, and announces; a
// later one sees no completing row left. A settling that leaves rows
// behind announces nothing and hands its completing row on to them.
func (db *DB) settleProject(ctx context.Context, projectID int64) (n int, more bool, err error) {
	batch := settleBatchSize
	if db.settleBatch > 0 {
		batch = db.settleBatch
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('attune.settle'), $1::int)`, projectID); err != nil {
			return err
		}
		var ids []int64
		var completed, exists bool
		var short, items int
		err := tx.QueryRow(ctx, `
			WITH taken AS (
				DELETE FROM settle_queue WHERE id IN (
					SELECT id FROM settle_queue WHERE project_id = $1 ORDER BY id LIMIT $2)
				RETURNING item_id, completed),
			counts AS (`+overlapCountsSQL+`)
			SELECT (SELECT count(*) FROM taken), coalesce((SELECT array_agg(DISTINCT item_id) FROM taken), '{}'),
			       coalesce((SELECT bool_or(completed) FROM taken), false),
			       (SELECT count(*) FROM settle_queue WHERE project_id = $1) > (SELECT count(*) FROM taken),
			       EXISTS (SELECT 1 FROM projects WHERE id = $1), counts.* FROM counts`,
			projectID, batch).Scan(&n, &ids, &completed, &more, &exists, &short, &items)
		if err != nil || !exists { // a deleted project's rows go with it
			return err
		}
		// Sent at the commit, to any process listening: what a test in
		// another process than the settler's waits on.
		if n > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, SettledChannel, strconv.FormatInt(projectID, 10)); err != nil {
				return err
			}
		}
		settled, err := db.settle(ctx, tx, projectID, ids)
		if err != nil {
			return err
		}
		if err := db.announceSettled(ctx, tx, projectID, settled); err != nil {
			return err
		}
		if db.settleHook != nil { // tests: a settler that dies here
			if err := db.settleHook(ctx, tx); err != nil {
				return err
			}
		}
		switch {
		case !completed:
			return nil
		case more:
			_, err := tx.Exec(ctx, `UPDATE settle_queue SET completed = true
				WHERE id = (SELECT min(id) FROM settle_queue WHERE project_id = $1)`, projectID)
			return err
		default:
			return db.announceFullOverlap(ctx, tx, projectID, 0, short, items)
		}
	})
	return n, more, err
}

// Settler settles queued items as submits queue them, every
// SettleInterval, until the context given to Run ends. A serving process
// runs one.
type Settler struct {
	db       *DB
	log      *slog.Logger
	interval time.Duration
	passes   chan int
}

// NewSettler returns a Settler over db that logs its failures to log.
func (db *DB) NewSettler(log *slog.Logger) *Settler {
	return &Settler{db: db, log: log, interval: SettleInterval, passes: make(chan int, 64)}
}

// Settled receives, after each look at the queue that settled something,
// how many queue rows it took: the signal a test waits on. Nobody need
// read it; a look is not held up when it is full.
func (s *Settler) Settled() <-chan int { return s.passes }

// Run settles until ctx ends. A failed settling is logged and tried again
// at the next look: its rows stayed in the queue.
func (s *Settler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		n, err := s.db.SettleQueued(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "settling labelled items", "err", err)
		}
		if n > 0 {
			select {
			case s.passes <- n:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
