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

// DeriveLabels is deriveLabels, for a test that kills the transaction
// writing labels before it commits.
func DeriveLabels(ctx context.Context, tx pgx.Tx, projectID int64, limit int) (int, error) {
	return deriveLabels(ctx, tx, projectID, limit)
}

// ParseAnswers reads an answer set's JSON as the estimates read it.
func ParseAnswers(b []byte) (map[string]string, error) {
	pairs, err := parseAnswers(b, nil)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, p := range pairs {
		m[string(p.key)] = string(p.value)
	}
	return m, nil
}
