package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

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
// (people are named in Humans, in the order of their index, and their
// rater ids are humanRaters in the same order) and the answers of each
// variant rater (by index into variants; nil where it has not answered).
// Usage sums each variant's calls on those items. It fills the input's
// Items, Humans and Usage.
func (db *DB) ExperimentItems(ctx context.Context, projectID int64, variants []int64) (in experiment.Input, humanRaters []int64, err error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return in, nil, err
	}
	var items []experiment.Item
	var humans []string
	var usage []experiment.Usage
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		// Answers are held by rubric item key, a map per answer set sized
		// for the rubric at once.
		var keys int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM rubric_items k JOIN projects p ON p.rubric_version_id = k.rubric_version_id WHERE p.id = $1`,
			projectID).Scan(&keys); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT i.id FROM items i WHERE i.project_id = $1 AND `+frozenItem("i.id")+` ORDER BY i.id`, projectID)
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
			items = append(items, experiment.Item{ID: id, Gold: make(map[string]string, keys), Variants: make([]map[string]string, len(variants))})
		}
		var item int64
		// Keys and values are read in place and interned: the same dozen
		// keys and handful of answers recur in every one of the labels.
		var key, value pgtype.DriverBytes
		words := map[string]string{}
		word := func(b []byte) string {
			if s, ok := words[string(b)]; ok {
				return s
			}
			s := string(b)
			words[s] = s
			return s
		}
		rows, err = tx.Query(ctx, `SELECT item_id, rubric_item_key, value FROM gold_labels WHERE project_id = $2 AND item_id = ANY($1)`, ids, projectID)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&item, &key, &value}, func() error {
			items[at[item]].Gold[word(key)] = word(value)
			return nil
		}); err != nil {
			return err
		}
		// The people's and the variants' answers in one pass over the
		// items' labels: reading them apart costs two. The project's
		// labels index holds all four columns, so the pass reads no table
		// row.
		variant := make(map[int64]int, len(variants))
		for v, id := range variants {
			variant[id] = v
		}
		var rater int64
		byHuman := map[int64]map[int64]map[string]string{} // rater → item → answers
		rows, err = tx.Query(ctx, `SELECT l.item_id, l.rater_id, l.rubric_item_key, l.value FROM labels l
			WHERE l.project_id = $3 AND l.item_id = ANY($1)
			  AND (l.rater_id = ANY($2) OR l.rater_id IN (SELECT id FROM raters WHERE kind = 'human'))`, ids, variants, projectID)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&item, &rater, &key, &value}, func() error {
			var answers map[string]string
			if v, ok := variant[rater]; ok {
				it := &items[at[item]]
				if it.Variants[v] == nil {
					it.Variants[v] = make(map[string]string, keys)
				}
				answers = it.Variants[v]
			} else {
				if byHuman[rater] == nil {
					byHuman[rater] = map[int64]map[string]string{}
				}
				if byHuman[rater][item] == nil {
					byHuman[rater][item] = make(map[string]string, keys)
				}
				answers = byHuman[rater][item]
			}
			answers[word(key)] = word(value)
			return nil
		}); err != nil {
			return err
		}
		// People in the order of their rater ids.
		for id := range byHuman {
			humanRaters = append(humanRaters, id)
		}
		slices.Sort(humanRaters)
		rows, err = tx.Query(ctx, `SELECT name FROM raters WHERE id = ANY($1) ORDER BY id`, humanRaters)
		if err != nil {
			return err
		}
		if humans, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if len(humans) != len(humanRaters) {
			return fmt.Errorf("%d people's names for %d people", len(humans), len(humanRaters))
		}
		for i := range items {
			items[i].Humans = make([]map[string]string, len(humans))
			for h, id := range humanRaters {
				items[i].Humans[h] = byHuman[id][items[i].ID]
			}
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
	if err != nil {
		return in, nil, mapErr(err, "experiment items", "")
	}
	in.Items, in.Humans, in.Usage = items, humans, usage
	return in, humanRaters, nil
}

// ExperimentInput gathers an experiment's data on a project, the one way
// the CLI and the web page both do: each variant's rater (see
// JudgeVariantRater; an unknown judge or version is attune.ErrNotFound
// naming it) and the frozen set of ExperimentItems. The input's
// Variants, Humans, Items and Usage are filled; the caller sets Def, Alt
// and Bootstrap. raters are the variants' and the people's rater ids, in
// their order, which the items behind each figure are listed by.
func (db *DB) ExperimentInput(ctx context.Context, projectID int64, variants []experiment.Variant) (in experiment.Input, raters ExperimentRaters, err error) {
	if len(variants) == 0 {
		return in, raters, attune.Invalid("judge", "choose at least one judge or prompt version")
	}
	var names []string
	for _, v := range variants {
		id, err := db.JudgeVariantRater(ctx, projectID, v.Judge, v.Version)
		if err != nil {
			return in, raters, err
		}
		if slices.Contains(raters.Variants, id) {
			return in, raters, attune.Invalid("judge", fmt.Sprintf("%s is chosen twice", v))
		}
		names = append(names, v.String())
		raters.Variants = append(raters.Variants, id)
	}
	in, raters.Humans, err = db.ExperimentItems(ctx, projectID, raters.Variants)
	in.Variants = names
	return in, raters, err
}

// ExperimentRaters are the rater ids of an experiment's variants and
// people, in the order of its input's Variants and Humans.
type ExperimentRaters struct {
	Variants, Humans []int64
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
