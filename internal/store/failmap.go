package store

import (
	"context"
	"encoding/json"

	"github.com/attune/attune/internal/attune"

	"github.com/jackc/pgx/v5"
)

// FailureRow is one item as the failure map reads it for one rubric item:
// what the item is (its turns, messages, the lead's mark and the system it
// names under the chosen meta key) and the answers given to it, people's
// and the judge's, in rater order. ERROR, the judge's failure to answer,
// is left out.
type FailureRow struct {
	ItemID    int64
	Turns     int
	System    string
	Sensitive bool
	Messages  []attune.Message
	People    []string
	Judge     []string
}

// FailureRows reads every item of the project the judge answered on the
// rubric item, with the people's answers to it. The judge is named as
// EstimateRubricItem names it. Rows come in item order.
func (db *DB) FailureRows(ctx context.Context, projectID int64, judge, rubricItem, systemKey string) ([]FailureRow, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	raters, err := db.judgeRaters(ctx, projectID, judge)
	if err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		WITH v AS (
			SELECT l.item_id, r.kind, l.rater_id, l.value
			FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE l.project_id = $1 AND l.rubric_item_key = $2 AND l.value <> 'ERROR'
			  AND (r.kind = 'human' OR l.rater_id = ANY ($3::bigint[]))
		), a AS (
			SELECT item_id,
			       coalesce(array_agg(value ORDER BY rater_id) FILTER (WHERE kind = 'human'), '{}') AS people,
			       array_agg(value ORDER BY rater_id) FILTER (WHERE kind = 'judge') AS judge
			FROM v GROUP BY item_id
			HAVING count(*) FILTER (WHERE kind = 'judge') > 0
		)
		SELECT i.id, i.turns, coalesce(i.meta ->> $4, ''), i.sensitive, i.messages, a.people, a.judge
		FROM a JOIN items i ON i.id = a.item_id
		ORDER BY i.id`, projectID, rubricItem, raters, systemKey)
	if err != nil {
		return nil, mapErr(err, "failure map rows", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FailureRow, error) {
		var f FailureRow
		var messages []byte
		if err := r.Scan(&f.ItemID, &f.Turns, &f.System, &f.Sensitive, &messages, &f.People, &f.Judge); err != nil {
			return f, err
		}
		return f, json.Unmarshal(messages, &f.Messages)
	})
	return out, mapErr(err, "failure map rows", "")
}

// TrustRow is one item the judge answered on a rubric item, as trust
// calibration reads it: the judge's answer with what it recorded of its
// certainty (the distribution from log-probabilities, its samples), and
// the people's answers (none on an item only the judge labelled).
type TrustRow struct {
	ItemID       int64
	Judge        string
	Distribution map[string]float64
	Samples      []string
	People       []string
}

// TrustRows reads the judge's answers on the rubric item, one per item
// (its earliest rater's when it has several), with the people's. ERROR
// answers are left out. Rows come in item order.
func (db *DB) TrustRows(ctx context.Context, projectID int64, judge, rubricItem string) ([]TrustRow, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	raters, err := db.judgeRaters(ctx, projectID, judge)
	if err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		WITH h AS (
			SELECT l.item_id, array_agg(l.value ORDER BY l.rater_id) AS people
			FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE l.project_id = $1 AND l.rubric_item_key = $2 AND r.kind = 'human'
			GROUP BY l.item_id
		)
		SELECT DISTINCT ON (l.item_id) l.item_id, l.value, d.distribution, d.samples, coalesce(h.people, '{}')
		FROM labels l
		LEFT JOIN judge_label_details d ON d.label_id = l.id
		LEFT JOIN h ON h.item_id = l.item_id
		WHERE l.project_id = $1 AND l.rubric_item_key = $2 AND l.rater_id = ANY ($3::bigint[]) AND l.value <> 'ERROR'
		ORDER BY l.item_id, l.rater_id`, projectID, rubricItem, raters)
	if err != nil {
		return nil, mapErr(err, "trust rows", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TrustRow, error) {
		var t TrustRow
		var dist, samples []byte
		if err := r.Scan(&t.ItemID, &t.Judge, &dist, &samples, &t.People); err != nil {
			return t, err
		}
		if dist != nil {
			if err := json.Unmarshal(dist, &t.Distribution); err != nil {
				return t, err
			}
		}
		if samples != nil {
			if err := json.Unmarshal(samples, &t.Samples); err != nil {
				return t, err
			}
		}
		return t, nil
	})
	return out, mapErr(err, "trust rows", "")
}
