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
	return db.ReadEstimates(ctx, q, keys, nil)
}

// ReadEstimates is EstimateRubricItems and, when sets is not nil,
// StreamEstimateSets over the rubric items keys, in one read: sets is
// called, in item order, with every item the judge answered, before the
// rows are returned. An error of sets stops the read and is returned as
// it is. A report estimating every rubric item and the engine's outcome
// for a judge thus reads the project's labels once. With keys nil every
// rubric item is read, for sets alone: no rows are kept, and the map is
// nil.
func (db *DB) ReadEstimates(ctx context.Context, q EstimateRead, keys []string, sets func(*EstimateSets) error) (map[string][]EstimateRow, error) {
	raters, err := db.judgeRaters(ctx, q.ProjectID, q.Judge)
	if err != nil {
		return nil, err
	}
	var out map[string][]EstimateRow
	if keys != nil {
		out = make(map[string][]EstimateRow, len(keys))
		for _, k := range keys {
			out[k] = []EstimateRow{}
		}
	}
	// Each label comes as it is, in item order (and by rater within an
	// item: the judge's first, then the people's, then the gold), and is
	// averaged here as its item's rows go by: grouping the labels by item
	// and rubric item in PostgreSQL hashes or sorts them all (millions on
	// a large project), where an item's few rows are averaged in passing.
	// Without sets, values that are no number are of no use and stay in
	// the database.
	rows, err := db.pool.Query(ctx, `
		SELECT v.item_id, coalesce(i.meta ->> $4, ''), v.side, v.who, v.key, v.value, v.x
		FROM (
			SELECT l.item_id, CASE WHEN r.kind = 'judge' THEN 0 ELSE 1 END AS side, l.rater_id AS who,
			       l.rubric_item_key AS key, l.value, `+valueNumber("l.value")+` AS x
			FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE l.project_id = $1 AND ($2::text[] IS NULL OR l.rubric_item_key = ANY ($2::text[]))
			  AND ((r.kind = 'human' AND NOT $5) OR l.rater_id = ANY ($3::bigint[]))
			UNION ALL
			SELECT g.item_id, 2, 0, g.rubric_item_key, g.value, `+valueNumber("g.value")+`
			FROM gold_labels g
			WHERE $5 AND g.project_id = $1 AND ($2::text[] IS NULL OR g.rubric_item_key = ANY ($2::text[]))
		) v JOIN items i ON i.id = v.item_id
		WHERE $6 OR v.x IS NOT NULL
		ORDER BY v.item_id, v.side, v.who`, q.ProjectID, keys, raters, q.SystemKey, q.Gold, sets != nil)
	if err != nil {
		return nil, mapErr(err, "estimate: values", "")
	}
	defer rows.Close()
	// The sums of the item being read, by rubric item.
	type sums struct {
		judge, human   float64
		judges, humans int
	}
	var (
		item    int64
		system  string
		pending = map[string]*sums{}
		used    []string
		spare   []*sums
		cur     *EstimateSets
		set     map[string]string
	)
	// Systems are few and repeat on every row: each is kept once.
	systems := map[string]string{}
	flush := func() error {
		for _, k := range used {
			s := pending[k]
			if s.judges > 0 && out != nil {
				e := EstimateRow{ItemID: item, System: system, Judge: s.judge / float64(s.judges)}
				if s.humans > 0 {
					e.Human, e.Labelled = s.human/float64(s.humans), true
				}
				if _, ok := out[k]; ok {
					out[k] = append(out[k], e)
				}
			}
			delete(pending, k)
			*s = sums{}
			spare = append(spare, s)
		}
		used = used[:0]
		if cur != nil && len(cur.Judge) > 0 {
			return sets(cur)
		}
		return nil
	}
	var id, who, lastWho int64
	var side, lastSide int
	var sys, key, value string
	var x *float64
	for rows.Next() {
		if err := rows.Scan(&id, &sys, &side, &who, &key, &value, &x); err != nil {
			return nil, mapErr(err, "estimate: values", "")
		}
		if id != item {
			if err := flush(); err != nil {
				return nil, err
			}
			item = id
			if system = systems[sys]; system != sys {
				system = sys
				systems[sys] = sys
			}
			if sets != nil {
				cur, set = &EstimateSets{ItemID: id, System: system}, nil
			}
		}
		if sets != nil {
			if set == nil || side != lastSide || who != lastWho {
				set = map[string]string{}
				switch side {
				case 0:
					cur.Judge = append(cur.Judge, set)
				case 1:
					cur.People = append(cur.People, set)
				default:
					cur.Gold = set
				}
				lastSide, lastWho = side, who
			}
			set[key] = value
		}
		if x == nil {
			continue
		}
		s := pending[key]
		if s == nil {
			if n := len(spare); n > 0 {
				s, spare = spare[n-1], spare[:n-1]
			} else {
				s = &sums{}
			}
			pending[key] = s
			used = append(used, key)
		}
		if side == 0 {
			s.judge += *x
			s.judges++
		} else {
			s.human += *x
			s.humans++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "estimate: values", "")
	}
	if err := flush(); err != nil {
		return nil, err
	}
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
	_, err := db.ReadEstimates(ctx, q, nil, fn)
	return err
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
