package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/experiment"
)

// JudgeVariantRater returns the rater a judge answers as with one of its
// prompt versions for the project's rubric: its own for version 0 or 1,
// the version's own rater for a later one. A judge, version or rater that
// does not exist (a version never run) is attune.ErrNotFound with a
// message naming it.
func (db *DB) JudgeVariantRater(ctx context.Context, projectID int64, judgeName string, version int) (int64, error) {
	var id int64
	var err error
	if version <= 1 {
		err = db.pool.QueryRow(ctx, `SELECT r.id FROM raters r JOIN judges j ON j.id = r.judge_id WHERE j.name = $1 AND r.prompt_id IS NULL`,
			judgeName).Scan(&id)
	} else {
		err = db.pool.QueryRow(ctx, `
			SELECT r.id FROM raters r JOIN judge_prompts p ON p.id = r.prompt_id JOIN judges j ON j.id = p.judge_id
			JOIN projects pr ON pr.rubric_version_id = p.rubric_version_id
			WHERE j.name = $1 AND p.version = $2 AND pr.id = $3`, judgeName, version, projectID).Scan(&id)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		if version <= 1 {
			return 0, attune.NotFound(fmt.Sprintf("no judge is named %q", judgeName))
		}
		return 0, attune.NotFound(fmt.Sprintf("judge %q has no prompt v%d that has run on this project's rubric", judgeName, version))
	}
	return id, mapErr(err, "judge variant", "")
}

// ExperimentItems reads the frozen set of an experiment on a project: the
// items with gold answers (adjudicated or automatic) and answer sets from
// at least two people, by id, each with its gold, every person's answers
// (people are named in humans, in the order of their index) and the
// answers of each variant rater (by index into variants; nil where it has
// not answered). usage sums each variant's calls on those items.
func (db *DB) ExperimentItems(ctx context.Context, projectID int64, variants []int64) (items []experiment.Item, humans []string, usage []experiment.Usage, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT i.id FROM items i
			WHERE i.project_id = $1 AND EXISTS (SELECT 1 FROM gold_labels g WHERE g.item_id = i.id)
			  AND (SELECT count(*) FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE s.item_id = i.id AND r.kind = 'human') >= 2
			ORDER BY i.id`, projectID)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		at := make(map[int64]int, len(ids))
		for i, id := range ids {
			at[id] = i
			items = append(items, experiment.Item{ID: id, Gold: map[string]string{}, Variants: make([]map[string]string, len(variants))})
		}
		var item int64
		var key, value string
		rows, err = tx.Query(ctx, `SELECT item_id, rubric_item_key, value FROM gold_labels WHERE item_id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&item, &key, &value}, func() error {
			items[at[item]].Gold[key] = value
			return nil
		}); err != nil {
			return err
		}
		var rater int64
		var name string
		human := map[int64]int{}
		var byHuman []map[int64]map[string]string // human → item → answers
		rows, err = tx.Query(ctx, `SELECT l.item_id, r.id, r.name, l.rubric_item_key, l.value FROM labels l JOIN raters r ON r.id = l.rater_id
			WHERE r.kind = 'human' AND l.item_id = ANY($1) ORDER BY r.id`, ids)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&item, &rater, &name, &key, &value}, func() error {
			h, ok := human[rater]
			if !ok {
				h = len(humans)
				human[rater] = h
				humans = append(humans, name)
				byHuman = append(byHuman, map[int64]map[string]string{})
			}
			if byHuman[h][item] == nil {
				byHuman[h][item] = map[string]string{}
			}
			byHuman[h][item][key] = value
			return nil
		}); err != nil {
			return err
		}
		for i := range items {
			items[i].Humans = make([]map[string]string, len(humans))
			for h := range humans {
				items[i].Humans[h] = byHuman[h][items[i].ID]
			}
		}
		variant := make(map[int64]int, len(variants))
		for v, id := range variants {
			variant[id] = v
		}
		rows, err = tx.Query(ctx, `SELECT item_id, rater_id, rubric_item_key, value FROM labels WHERE rater_id = ANY($1) AND item_id = ANY($2)`,
			variants, ids)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&item, &rater, &key, &value}, func() error {
			it, v := &items[at[item]], variant[rater]
			if it.Variants[v] == nil {
				it.Variants[v] = map[string]string{}
			}
			it.Variants[v][key] = value
			return nil
		}); err != nil {
			return err
		}
		usage = make([]experiment.Usage, len(variants))
		var cost, latency float64
		var n int
		rows, err = tx.Query(ctx, `
			SELECT r.rater_id, coalesce(sum(c.cost_usd), 0)::float8, coalesce(sum(c.latency_ms), 0)::float8, count(DISTINCT c.item_id)::int
			FROM judge_calls c JOIN judge_runs r ON r.id = c.run_id
			WHERE r.rater_id = ANY($1) AND c.item_id = ANY($2) GROUP BY r.rater_id`, variants, ids)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&rater, &cost, &latency, &n}, func() error {
			usage[variant[rater]] = experiment.Usage{CostUSD: cost, LatencyMS: latency, Items: n}
			return nil
		})
		return err
	})
	return items, humans, usage, mapErr(err, "experiment items", "")
}

// ExperimentInput gathers an experiment's data on a project, the one way
// the CLI and the web page both do: each variant's rater (see
// JudgeVariantRater; an unknown judge or version is attune.ErrNotFound
// naming it) and the frozen set of ExperimentItems. The input's
// Variants, Humans, Items and Usage are filled; the caller sets Def, Alt
// and Bootstrap. raters are the variants' rater ids, in their order.
func (db *DB) ExperimentInput(ctx context.Context, projectID int64, variants []experiment.Variant) (in experiment.Input, raters []int64, err error) {
	if len(variants) == 0 {
		return in, nil, attune.Invalid("judge", "choose at least one judge or prompt version")
	}
	for _, v := range variants {
		id, err := db.JudgeVariantRater(ctx, projectID, v.Judge, v.Version)
		if err != nil {
			return in, nil, err
		}
		if slices.Contains(raters, id) {
			return in, nil, attune.Invalid("judge", fmt.Sprintf("%s is chosen twice", v))
		}
		in.Variants = append(in.Variants, v.String())
		raters = append(raters, id)
	}
	in.Items, in.Humans, in.Usage, err = db.ExperimentItems(ctx, projectID, raters)
	return in, raters, err
}

// JudgeVariant is a judge's prompt version with answers in a project.
type JudgeVariant struct {
	experiment.Variant
	RaterID    int64
	AnswerSets int
}

// ListJudgeVariants returns every judge variant (a judge with one of its
// prompt versions) with at least one answer set in the project, by judge
// name and version.
func (db *DB) ListJudgeVariants(ctx context.Context, projectID int64) ([]JudgeVariant, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT j.name, coalesce(p.version, 1), r.id, s.n
		FROM (SELECT rater_id, count(*)::int AS n FROM answer_sets WHERE project_id = $1 GROUP BY rater_id) s
		JOIN raters r ON r.id = s.rater_id AND r.kind = 'judge'
		JOIN judges j ON j.id = r.judge_id
		LEFT JOIN judge_prompts p ON p.id = r.prompt_id
		ORDER BY j.name, 2`, projectID)
	if err != nil {
		return nil, mapErr(err, "list judge variants", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (JudgeVariant, error) {
		var v JudgeVariant
		err := r.Scan(&v.Judge, &v.Version, &v.RaterID, &v.AnswerSets)
		return v, err
	})
	return out, mapErr(err, "list judge variants", "")
}
