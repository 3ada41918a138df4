package store

import (
	"context"
	"fmt"
	"strings"

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

// EstimateRead names what an estimate reads: the project, the judge (a
// rater id, a rater's name or a judge's name), the meta key naming an
// item's system, and whose value is the human one: the people's (the
// mean of their answers) or, with Gold, the item's gold answer.
type EstimateRead struct {
	ProjectID  int64
	Judge      string
	RubricItem string // EstimateRubricItem only; EstimateRubricItems is given its keys
	SystemKey  string
	Gold       bool
}

// EstimateRubricItem reads, for one rubric item of the project, every item
// the judge answered with a value: its system (items.meta ->> systemKey),
// the judge's value and the human value, as EstimateRubricItems reads
// them for many rubric items at once. A rubric item nobody answered gives
// no rows, and no error.
func (db *DB) EstimateRubricItem(ctx context.Context, q EstimateRead) ([]EstimateRow, error) {
	byKey, err := db.EstimateRubricItems(ctx, q, []string{q.RubricItem})
	if err != nil {
		return nil, err
	}
	return byKey[q.RubricItem], nil
}

// EstimateRubricItems reads, for each of the rubric items keys of the
// project (q.RubricItem is not read), every item the judge answered with
// a value: its system (items.meta ->> q.SystemKey), the judge's value and
// the human value. A value is its number on a scale item, 1 for YES and 0
// for NO; NA, ERROR and anything else are left out. The judge is a rater
// id or a judge's name (every rater of that judge, or of that name,
// counts, their values averaged). The human value is the mean of the
// people's values, so on YES/NO the share of YES; an item is labelled
// when at least one person gave a value. With Gold the human value is the
// item's gold answer instead, and an item without a gold value is
// unlabelled. Every key asked for is in the map, with its rows in item
// order (none, not nil, for a key nobody answered). A judge with no
// raters answering in the project is attune.ErrNotFound, with a message
// naming it.
//
// It is one pass over the project's labels for every key, so that a
// report of every rubric item reads the labels once, not once per item.
func (db *DB) EstimateRubricItems(ctx context.Context, q EstimateRead, keys []string) (map[string][]EstimateRow, error) {
	if _, err := db.currentLabels(ctx, q.ProjectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	raters, err := db.judgeRaters(ctx, q.ProjectID, q.Judge)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]EstimateRow, len(keys))
	for _, k := range keys {
		out[k] = []EstimateRow{}
	}
	// Each value comes as it is, in item and rubric item order, and is
	// averaged here as its item's rows go by: grouping the labels by item
	// and rubric item in PostgreSQL hashes or sorts them into groups all
	// at once (millions on a large project), where an item's few rows are
	// averaged in passing.
	rows, err := db.pool.Query(ctx, `
		SELECT v.item_id, coalesce(i.meta ->> $4, ''), v.key, v.judge, v.x
		FROM (
			SELECT l.item_id, l.rubric_item_key AS key, r.kind = 'judge' AS judge, `+valueNumber("l.value")+` AS x
			FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE l.project_id = $1 AND l.rubric_item_key = ANY ($2::text[])
			  AND ((r.kind = 'human' AND NOT $5) OR l.rater_id = ANY ($3::bigint[]))
			UNION ALL
			SELECT g.item_id, g.rubric_item_key, false, `+valueNumber("g.value")+`
			FROM gold_labels g
			WHERE $5 AND g.project_id = $1 AND g.rubric_item_key = ANY ($2::text[])
		) v JOIN items i ON i.id = v.item_id
		WHERE v.x IS NOT NULL
		ORDER BY v.item_id, v.key`, q.ProjectID, keys, raters, q.SystemKey, q.Gold)
	if err != nil {
		return nil, mapErr(err, "estimate: rubric item values", "")
	}
	defer rows.Close()
	// The item and rubric item being summed, and their sums.
	var (
		cur            EstimateRow
		curKey         string
		judge, human   float64
		judges, humans int
	)
	flush := func() {
		if judges > 0 {
			e := cur
			e.Judge = judge / float64(judges)
			if humans > 0 {
				e.Human, e.Labelled = human/float64(humans), true
			}
			out[curKey] = append(out[curKey], e)
		}
		judge, human, judges, humans = 0, 0, 0, 0
	}
	// Systems are few and repeat on every row: each is kept once.
	systems := map[string]string{}
	var id int64
	var sys, key string
	var byJudge bool
	var x float64
	for rows.Next() {
		if err := rows.Scan(&id, &sys, &key, &byJudge, &x); err != nil {
			return nil, mapErr(err, "estimate: rubric item values", "")
		}
		if id != cur.ItemID || key != curKey {
			flush()
			if id != cur.ItemID {
				if _, ok := systems[sys]; !ok {
					systems[sys] = sys
				}
				cur = EstimateRow{ItemID: id, System: systems[sys]}
			}
			curKey = key
		}
		if byJudge {
			judge += x
			judges++
		} else {
			human += x
			humans++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "estimate: rubric item values", "")
	}
	flush()
	return out, nil
}

// valueNumber is the SQL of a label's value as a number: a scale's
// number, 1 for YES, 0 for NO, NULL for anything else (NA, ERROR).
func valueNumber(col string) string {
	return `CASE WHEN ` + col + ` = 'YES' THEN 1.0::float8
	            WHEN ` + col + ` = 'NO' THEN 0.0::float8
	            WHEN ` + col + ` ~ '^-?[0-9]+(\.[0-9]+)?$' THEN ` + col + `::float8 END`
}

// EstimateSets is one item as an estimate of the engine's outputs reads
// it: its system, the answer sets of the judge's raters, those of the
// people (left out with Gold) and, with Gold, its gold answers (nil when
// it has none). An answer set maps rubric item keys to values.
type EstimateSets struct {
	ItemID int64
	System string
	Judge  []map[string]string
	People []map[string]string
	Gold   map[string]string
}

// StreamEstimateSets calls fn, in item order, with every item of the
// project the judge answered, as EstimateSets; the judge is named as for
// EstimateRubricItem (attune.ErrNotFound when no rater of it answered).
// It holds one item at a time. An error of fn stops the stream and is
// returned as it is.
func (db *DB) StreamEstimateSets(ctx context.Context, q EstimateRead, fn func(*EstimateSets) error) error {
	if _, err := db.currentLabels(ctx, q.ProjectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return err
	}
	raters, err := db.judgeRaters(ctx, q.ProjectID, q.Judge)
	if err != nil {
		return err
	}
	// Each answer set (and each item's gold) is one row, its labels
	// written key US value, separated by RS, as the report reads them;
	// rows come item by item, the judge's first for an item, so an item
	// the judge did not answer can be passed over as it streams.
	rows, err := db.pool.Query(ctx, `
		WITH s AS (
			SELECT l.item_id, CASE WHEN r.kind = 'judge' THEN 0 ELSE 1 END AS side, l.rater_id AS who,
			       string_agg(l.rubric_item_key || chr(31) || l.value, chr(30)) AS labels
			FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE l.project_id = $1
			  AND ((r.kind = 'human' AND NOT $4) OR l.rater_id = ANY ($2::bigint[]))
			GROUP BY l.item_id, l.rater_id, r.kind
			UNION ALL
			SELECT g.item_id, 2, 0, string_agg(g.rubric_item_key || chr(31) || g.value, chr(30))
			FROM gold_labels g
			WHERE $4 AND g.project_id = $1
			GROUP BY g.item_id
		)
		SELECT s.item_id, coalesce(i.meta ->> $3, ''), s.side, s.labels
		FROM s JOIN items i ON i.id = s.item_id
		ORDER BY s.item_id, s.side, s.who`, q.ProjectID, raters, q.SystemKey, q.Gold)
	if err != nil {
		return mapErr(err, "estimate: answer sets", "")
	}
	defer rows.Close()
	var cur *EstimateSets
	flush := func() error {
		if cur == nil || len(cur.Judge) == 0 {
			return nil
		}
		return fn(cur)
	}
	for rows.Next() {
		var id int64
		var system, labels string
		var side int
		if err := rows.Scan(&id, &system, &side, &labels); err != nil {
			return mapErr(err, "estimate: answer sets", "")
		}
		if cur == nil || cur.ItemID != id {
			if err := flush(); err != nil {
				return err
			}
			cur = &EstimateSets{ItemID: id, System: system}
		}
		set := map[string]string{}
		for pair := range strings.SplitSeq(labels, "\x1e") {
			k, v, _ := strings.Cut(pair, "\x1f")
			set[k] = v
		}
		switch side {
		case 0:
			cur.Judge = append(cur.Judge, set)
		case 1:
			cur.People = append(cur.People, set)
		default:
			cur.Gold = set
		}
	}
	if err := rows.Err(); err != nil {
		return mapErr(err, "estimate: answer sets", "")
	}
	return flush()
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
