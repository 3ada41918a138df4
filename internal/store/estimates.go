package store

import (
	"context"
	"fmt"

	"github.com/attune/attune/internal/attune"

	"github.com/jackc/pgx/v5"
)

// EstimateRow is one item as a prediction-powered estimate reads it: the
// system the item names under the chosen meta key ("" when it names
// none), the judge's value and, when Labelled, the human value.
type EstimateRow struct {
	ItemID   int64
	System   string
	Judge    float64
	Human    float64
	Labelled bool
}

// EstimateRubricItem reads, for one rubric item of the project, every item
// the judge answered with a value: its system (items.meta ->> systemKey),
// the judge's value and the human value. A value is its number on a scale
// item, 1 for YES and 0 for NO; NA, ERROR and anything else are left out.
// The judge is a rater id or a judge's name (every rater of that judge, or
// of that name, counts, their values averaged). The human value is the
// mean of the people's values, so on YES/NO the share of YES; an item is
// labelled when at least one person gave a value. Rows come in item order.
// A judge with no raters answering in the project is attune.ErrNotFound,
// with a message naming it.
func (db *DB) EstimateRubricItem(ctx context.Context, projectID int64, judge, rubricItem, systemKey string) ([]EstimateRow, error) {
	raters, err := db.judgeRaters(ctx, projectID, judge)
	if err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		WITH v AS (
			SELECT l.item_id, r.kind,
			       CASE WHEN l.value = 'YES' THEN 1.0::float8
			            WHEN l.value = 'NO' THEN 0.0::float8
			            WHEN l.value ~ '^-?[0-9]+(\.[0-9]+)?$' THEN l.value::float8 END AS x
			FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE l.project_id = $1 AND l.rubric_item_key = $2
			  AND (r.kind = 'human' OR l.rater_id = ANY ($3::bigint[]))
		)
		SELECT i.id, coalesce(i.meta ->> $4, ''),
		       avg(v.x) FILTER (WHERE v.kind = 'judge'),
		       avg(v.x) FILTER (WHERE v.kind = 'human')
		FROM v JOIN items i ON i.id = v.item_id
		GROUP BY i.id
		HAVING avg(v.x) FILTER (WHERE v.kind = 'judge') IS NOT NULL
		ORDER BY i.id`, projectID, rubricItem, raters, systemKey)
	if err != nil {
		return nil, mapErr(err, "estimate: rubric item values", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (EstimateRow, error) {
		var e EstimateRow
		var human *float64
		err := r.Scan(&e.ItemID, &e.System, &e.Judge, &human)
		if human != nil {
			e.Human, e.Labelled = *human, true
		}
		return e, err
	})
	return out, mapErr(err, "estimate: rubric item values", "")
}

// EstimateJudges names every judge with answers in the project as
// EstimateRubricItem accepts it: the judge's name for attune's judges,
// the rater's name for judges whose labels were imported; sorted, each
// once.
func (db *DB) EstimateJudges(ctx context.Context, projectID int64) ([]string, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT DISTINCT coalesce(j.name, r.name)
		FROM (SELECT DISTINCT rater_id FROM answer_sets WHERE project_id = $1) s
		JOIN raters r ON r.id = s.rater_id AND r.kind = 'judge'
		LEFT JOIN judges j ON j.id = r.judge_id
		ORDER BY 1`, projectID)
	if err != nil {
		return nil, mapErr(err, "estimate judges", "")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, mapErr(err, "estimate judges", "")
}

// judgeRaters are the raters of a judge answering in the project: the
// judge named by a rater id, a rater's name or a judge's name. None is
// attune.ErrNotFound, with a message naming it.
func (db *DB) judgeRaters(ctx context.Context, projectID int64, judge string) ([]int64, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT r.id FROM raters r
		WHERE r.kind = 'judge'
		  AND (r.id::text = $2 OR r.name = $2 OR r.judge_id IN (SELECT id FROM judges WHERE name = $2))
		  AND EXISTS (SELECT 1 FROM answer_sets a WHERE a.project_id = $1 AND a.rater_id = r.id)
		ORDER BY r.id`, projectID, judge)
	if err != nil {
		return nil, mapErr(err, "judge raters", "")
	}
	raters, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, mapErr(err, "judge raters", "")
	}
	if len(raters) == 0 {
		return nil, attune.NotFound(fmt.Sprintf("no judge %q has answers in this project", judge))
	}
	return raters, nil
}
