package store

import (
	"context"

	"github.com/attune/attune/internal/attune"
)

// SentinelItem is a calibration item a judge run asks as its sentinel,
// with the gold of that moment.
type SentinelItem struct {
	ItemID int64
	Gold   map[string]string
}

// SentinelItems returns the project's calibration items (by id) that the
// run has not asked as sentinels yet, each with its gold now.
func (db *DB) SentinelItems(ctx context.Context, run *attune.JudgeRun) ([]SentinelItem, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT k.item_id, coalesce((SELECT jsonb_object_agg(g.rubric_item_key, g.value) FROM gold_labels g WHERE g.item_id = k.item_id), '{}')
		FROM calibration_items k
		WHERE k.project_id = $1 AND NOT EXISTS (SELECT 1 FROM judge_sentinels s WHERE s.run_id = $2 AND s.item_id = k.item_id)
		ORDER BY k.item_id`, run.ProjectID, run.ID)
	if err != nil {
		return nil, mapErr(err, "sentinel items", "")
	}
	defer rows.Close()
	var out []SentinelItem
	for rows.Next() {
		var s SentinelItem
		if err := rows.Scan(&s.ItemID, &s.Gold); err != nil {
			return nil, mapErr(err, "sentinel items", "")
		}
		out = append(out, s)
	}
	return out, mapErr(rows.Err(), "sentinel items", "")
}

// CountSentinelItems is how many calibration items a run of a judge over
// the project asks besides its items, for the estimate.
func (db *DB) CountSentinelItems(ctx context.Context, projectID int64) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM calibration_items WHERE project_id = $1`, projectID).Scan(&n)
	return n, mapErr(err, "count sentinel items", "")
}

// WriteSentinel keeps a run's answers to one calibration item beside its
// gold. A second write for the same run and item (a job retried after
// its worker died) keeps the first.
func (db *DB) WriteSentinel(ctx context.Context, run *attune.JudgeRun, itemID int64, answers, gold map[string]string) error {
	_, err := db.pool.Exec(ctx, `
		INSERT INTO judge_sentinels (run_id, item_id, project_id, rater_id, answers, gold)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id, item_id) DO NOTHING`,
		run.ID, itemID, run.ProjectID, run.RaterID, nonNil(answers), nonNil(gold))
	return mapErr(err, "write sentinel", "")
}
