package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A person's submit stores their answer set once (answers, notes and
// turns as JSON values on the set) and queues it in labels_pending; the
// label rows every read of a project's labels uses are written from it
// afterwards, by the settler within SettleBound or by the first such read
// that comes sooner (currentLabels). Migration 00055 says why.

// derivingWait is the longest a read waits for the locks that writing
// its project's queued labels takes.
const derivingWait = "2s"

// isLockTimeout reports whether err is PostgreSQL giving up a wait for a
// lock at lock_timeout.
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03" // lock_not_available
}

// deriveBatchSize is the most answer sets one statement turns into
// labels: a backlog is worked through in short statements.
const deriveBatchSize = 100

// deriveLabels writes the labels of up to limit of the project's queued
// answer sets and takes them off the queue, in the transaction tx, and
// returns how many it took. It waits for a deriving of the same sets under
// way elsewhere (whose commit takes them), never for a submit.
func deriveLabels(ctx context.Context, tx pgx.Tx, projectID int64, limit int) (int, error) {
	if err := fromSets(ctx, tx); err != nil {
		return 0, err
	}
	var n int
	err := tx.QueryRow(ctx, `
		WITH taken AS (
			DELETE FROM labels_pending WHERE project_id = $1 AND answer_set_id IN (
				SELECT answer_set_id FROM labels_pending WHERE project_id = $1 ORDER BY answer_set_id LIMIT $2 FOR UPDATE)
			RETURNING answer_set_id),
		written AS (`+deriveInsert+`)
		SELECT count(*) FROM taken`, projectID, limit).Scan(&n)
	if err != nil {
		return 0, err
	}
	return n, fromSetsDone(ctx, tx)
}

// fromSets tells the labels' copy trigger (00055) that the labels the
// transaction writes next are written from their sets' values, which it
// need not copy back; fromSetsDone ends that before anything else is
// written.
func fromSets(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT set_config('attune.labels_from_sets', 'on', true)`)
	return err
}

func fromSetsDone(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT set_config('attune.labels_from_sets', 'off', true)`)
	return err
}

// deriveItems writes the labels of the project's queued answer sets of
// the items: what the consensus rule reads of them, in its transaction.
func deriveItems(ctx context.Context, tx pgx.Tx, projectID int64, items []int64) error {
	if err := fromSets(ctx, tx); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
		WITH taken AS (
			DELETE FROM labels_pending WHERE project_id = $1 AND answer_set_id IN (
				SELECT p.answer_set_id FROM labels_pending p JOIN answer_sets s ON s.id = p.answer_set_id
				WHERE p.project_id = $1 AND s.item_id = ANY($2) ORDER BY p.answer_set_id FOR UPDATE OF p)
			RETURNING answer_set_id)
		`+deriveInsert, projectID, items)
	if err != nil {
		return err
	}
	return fromSetsDone(ctx, tx)
}

// deriveSet writes the labels of one answer set if it is still queued.
func deriveSet(ctx context.Context, tx pgx.Tx, projectID, answerSetID int64) error {
	if err := fromSets(ctx, tx); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
		WITH taken AS (
			DELETE FROM labels_pending WHERE project_id = $1 AND answer_set_id = $2
			RETURNING answer_set_id)
		`+deriveInsert, projectID, answerSetID)
	if err != nil {
		return err
	}
	return fromSetsDone(ctx, tx)
}

// deriveInsert writes a label per answer of the answer sets in taken,
// with its note and turns; labels already there stay as they are. The
// conflict is named: with none named, every unique index of labels is
// probed before each row goes in, and the one per rater, item and rubric
// item is the only one a label of a set can meet (the set is the rater's
// for the item; the identity never repeats).
const deriveInsert = `
	INSERT INTO labels (answer_set_id, project_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale, evidence)
	SELECT s.id, s.project_id, s.item_id, s.rater_id, s.rubric_version_id, a.key, a.value,
	       coalesce(s.rationales ->> a.key, ''),
	       coalesce(ARRAY(SELECT t.turn::int FROM json_array_elements_text(s.evidence -> a.key) WITH ORDINALITY AS t(turn, n) ORDER BY t.n), '{}')
	FROM taken JOIN answer_sets s ON s.id = taken.answer_set_id CROSS JOIN LATERAL json_each_text(s.answers) AS a
	ON CONFLICT (item_id, rater_id, rubric_item_key) DO NOTHING`

// currentLabels writes the labels of every answer set of the project
// still queued, so that a read after it sees every submit committed
// before it. With nothing queued, the usual case outside the second
// after a submit, it is one probe of an index. It returns how many sets
// it took.
func (db *DB) currentLabels(ctx context.Context, projectID int64) (int, error) {
	var queued bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM labels_pending WHERE project_id = $1)`, projectID).Scan(&queued); err != nil {
		return 0, mapErr(err, "derive labels", "")
	}
	total := 0
	for queued {
		var n int
		err := db.inTx(ctx, func(tx pgx.Tx) error {
			// A deriving elsewhere holds its sets for milliseconds; a
			// wait longer than derivingWait is for something else holding
			// the labels (a lead's long transaction, a migration), and the
			// read goes on without waiting for it, under its own limits.
			if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, derivingWait); err != nil {
				return err
			}
			var err error
			n, err = deriveLabels(ctx, tx, projectID, deriveBatchSize)
			return err
		})
		if isLockTimeout(err) {
			return total, nil
		}
		if err != nil {
			return total, mapErr(err, "derive labels", "")
		}
		total += n
		queued = n == deriveBatchSize
	}
	return total, nil
}

// WriteQueuedLabels writes the labels of every answer set still queued for
// them, in every project, as a read of each project's labels would first:
// for a caller that reads labels without the store (a test, a script).
func (db *DB) WriteQueuedLabels(ctx context.Context) error {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT project_id FROM labels_pending`)
	if err != nil {
		return mapErr(err, "derive labels", "")
	}
	projects, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return mapErr(err, "derive labels", "")
	}
	for _, p := range projects {
		if _, err := db.currentLabels(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
