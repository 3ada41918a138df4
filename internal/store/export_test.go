package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenPool wraps a pool the test configured itself (with a tracer, say)
// as a DB.
func OpenPool(pool *pgxpool.Pool) (*DB, error) { return newDB(pool) }

// ExportLabelsQuery is the query ExportLabels runs, for a benchmark that
// compares it with COPY of the same SELECT.
const ExportLabelsQuery = exportLabelsQuery

// RecordStreamsSQL are the dataset export's queries, for a test of their
// plans under RecordPlanSettings.
var RecordStreamsSQL = []string{recordItemsSQL, recordGoldItemsSQL, recordGoldSQL, recordAnswersSQL}

const RecordPlanSettings = recordPlanSettings

// SetSettleHook has every settling of db run hook in its transaction just
// before it commits (nil: nothing), for a test of a settler that dies
// there.
func SetSettleHook(db *DB, hook func(context.Context, pgx.Tx) error) { db.settleHook = hook }

// SetSettleBatch makes a settling take at most n queue rows of a project
// per transaction (0: the default).
func SetSettleBatch(db *DB, n int) { db.settleBatch = n }

// WriteQueuedLabels writes the labels of every answer set still queued for
// them (pending.go), as a read of each project's labels would first.
func WriteQueuedLabels(ctx context.Context, db *DB) error {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT project_id FROM labels_pending`)
	if err != nil {
		return err
	}
	projects, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, p := range projects {
		if _, err := db.currentLabels(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// DeriveLabels is deriveLabels, for a test that kills the transaction
// writing labels before it commits.
func DeriveLabels(ctx context.Context, tx pgx.Tx, projectID int64, limit int) (int, error) {
	return deriveLabels(ctx, tx, projectID, limit)
}
