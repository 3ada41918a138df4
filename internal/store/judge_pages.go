package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// CallTotals sum judge calls: how many were made, how many failed for good
// or were re-asks, their tokens (InputTokens counts cached ones too;
// CachedTokens is the cached part) and their cost in US dollars.
type CallTotals struct {
	Calls        int
	Failed       int
	Reasks       int
	InputTokens  int64
	CachedTokens int64
	OutputTokens int64
	CostUSD      float64
}

// callSums is the select list that fills CallTotals, over judge_calls c.
const callSums = `count(c.id) AS calls, count(c.id) FILTER (WHERE NOT c.ok) AS failed, count(c.id) FILTER (WHERE c.reask) AS reasks,
	coalesce(sum(c.input_tokens), 0) AS input_tokens, coalesce(sum(c.cached_tokens), 0) AS cached_tokens,
	coalesce(sum(c.output_tokens), 0) AS output_tokens, coalesce(sum(c.cost_usd), 0)::float8 AS cost_usd`

func (t *CallTotals) dest() []any {
	return []any{&t.Calls, &t.Failed, &t.Reasks, &t.InputTokens, &t.CachedTokens, &t.OutputTokens, &t.CostUSD}
}

// RubricItemTotals are a run's calls for one rubric item, and its ERROR
// labels.
type RubricItemTotals struct {
	Key string
	CallTotals
	Errors int
}

// RunTotalsByRubricItem sums a run's calls per rubric item, with the ERROR
// labels the run wrote for each, ordered by key. It reads every call of
// the run once (by the run's index).
func (db *DB) RunTotalsByRubricItem(ctx context.Context, runID int64) ([]RubricItemTotals, error) {
	rows, err := db.pool.Query(ctx, `
		WITH calls AS (
			SELECT c.rubric_item_key AS key, `+callSums+`
			FROM judge_calls c WHERE c.run_id = $1 GROUP BY c.rubric_item_key),
		errs AS (
			SELECT l.rubric_item_key AS key, count(*) AS errors
			FROM judge_label_details d JOIN labels l ON l.id = d.label_id
			WHERE d.run_id = $1 AND l.value = 'ERROR' GROUP BY l.rubric_item_key)
		SELECT coalesce(calls.key, errs.key), coalesce(calls.calls, 0), coalesce(calls.failed, 0), coalesce(calls.reasks, 0),
		       coalesce(calls.input_tokens, 0), coalesce(calls.cached_tokens, 0), coalesce(calls.output_tokens, 0),
		       coalesce(calls.cost_usd, 0), coalesce(errs.errors, 0)
		FROM calls FULL JOIN errs ON errs.key = calls.key
		ORDER BY 1`, runID)
	if err != nil {
		return nil, mapErr(err, "run totals", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RubricItemTotals, error) {
		var t RubricItemTotals
		err := r.Scan(append(append([]any{&t.Key}, t.dest()...), &t.Errors)...)
		return t, err
	})
	return out, mapErr(err, "run totals", "")
}

// JudgeTotals are one judge's calls over all its runs.
type JudgeTotals struct {
	Runs int
	CallTotals
}

// TotalsByJudge sums every judge's calls over all its runs, by judge id;
// a judge that never ran is absent. It reads the whole call table, so it
// belongs on pages that are opened now and then, not polled.
func (db *DB) TotalsByJudge(ctx context.Context) (map[int64]JudgeTotals, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT r.judge_id, count(DISTINCT r.id), `+callSums+`
		FROM judge_runs r LEFT JOIN judge_calls c ON c.run_id = r.id
		GROUP BY r.judge_id`)
	if err != nil {
		return nil, mapErr(err, "judge totals", "")
	}
	defer rows.Close()
	out := map[int64]JudgeTotals{}
	for rows.Next() {
		var id int64
		var t JudgeTotals
		if err := rows.Scan(append([]any{&id, &t.Runs}, t.dest()...)...); err != nil {
			return nil, mapErr(err, "judge totals", "")
		}
		out[id] = t
	}
	return out, mapErr(rows.Err(), "judge totals", "")
}

// RunItem is one item of a run's scope as the run's answers list shows
// it: the judge's values by rubric item key (none before it answered),
// its ERROR labels, and the run's calls for the item.
type RunItem struct {
	ItemID   int64
	SourceID string
	Answered bool
	Values   map[string]string
	Errors   int
	Calls    int
	CostUSD  float64
}

// RunItemFilter pages a run's items for the pages' numbered pages (the
// API pages by keyset: RunItemPage). ErrorsOnly keeps the items where the
// judge answered ERROR on some rubric item.
type RunItemFilter struct {
	ErrorsOnly    bool
	Offset, Limit int
}

// ListRunItems returns a page of the items in a run's scope (the project's
// first ItemsTotal items by id), by id, and how many items the filter
// matches in all.
func (db *DB) ListRunItems(ctx context.Context, run *attune.JudgeRun, f RunItemFilter) ([]RunItem, int, error) {
	const scope = `(SELECT id, source_id FROM items WHERE project_id = $1 ORDER BY id LIMIT $2) i`
	const hasError = `EXISTS (SELECT 1 FROM labels l WHERE l.item_id = i.id AND l.rater_id = $3 AND l.value = 'ERROR')`
	total := run.ItemsTotal
	var rows pgx.Rows
	var err error
	if f.ErrorsOnly {
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+scope+` WHERE `+hasError,
			run.ProjectID, run.ItemsTotal, run.RaterID).Scan(&total); err != nil {
			return nil, 0, mapErr(err, "run items", "")
		}
		rows, err = db.pool.Query(ctx, `SELECT i.id, i.source_id FROM `+scope+` WHERE `+hasError+` ORDER BY i.id LIMIT $4 OFFSET $5`,
			run.ProjectID, run.ItemsTotal, run.RaterID, f.Limit, f.Offset)
	} else {
		rows, err = db.pool.Query(ctx, `SELECT i.id, i.source_id FROM `+scope+` ORDER BY i.id LIMIT $3 OFFSET $4`,
			run.ProjectID, run.ItemsTotal, f.Limit, f.Offset)
	}
	if err != nil {
		return nil, 0, mapErr(err, "run items", "")
	}
	items, err := collectRunItems(rows)
	if err != nil {
		return nil, 0, err
	}
	return items, total, db.runItemDetails(ctx, run, items)
}

// RunItemPage is one page of the items of a run's scope (the project's
// first ItemsTotal items by id; with errorsOnly, those the judge answered
// ERROR on some rubric item), by id: at most limit (1 to MaxSearchPage)
// after the page whose cursor is cursor ("" for the first), the next
// page's cursor ("" on the last), and how many items the filter matches
// in all. It pages by keyset on the item's id: the first page finds the
// scope's last item and the cursors carry it, so that a page reads only
// its own items however deep it is. A cursor belongs to its run and
// filter.
func (db *DB) RunItemPage(ctx context.Context, run *attune.JudgeRun, errorsOnly bool, cursor string, limit int) ([]RunItem, string, int, error) {
	if err := checkPageLimit(limit); err != nil {
		return nil, "", 0, err
	}
	list := fmt.Sprintf("run %d items", run.ID)
	if errorsOnly {
		list += " with errors"
	}
	after, err := afterRow(cursor, list, 1)
	if err != nil {
		return nil, "", 0, err
	}
	var end int64
	if after[1] == nil {
		if err := db.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM (SELECT id FROM items WHERE project_id = $1 ORDER BY id LIMIT $2) s`,
			run.ProjectID, run.ItemsTotal).Scan(&end); err != nil {
			return nil, "", 0, mapErr(err, "run items", "")
		}
	} else if end, err = strconv.ParseInt(after[0].(string), 10, 64); err != nil || end <= 0 {
		return nil, "", 0, badCursor()
	}
	const page = `SELECT i.id, i.source_id FROM items i WHERE i.project_id = $1 AND i.id <= $2 AND ($3::bigint IS NULL OR i.id > $3)`
	const pageErrors = ` AND EXISTS (SELECT 1 FROM labels l WHERE l.item_id = i.id AND l.rater_id = $5 AND l.value = 'ERROR')`
	total := run.ItemsTotal
	var rows pgx.Rows
	if errorsOnly {
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM items i WHERE i.project_id = $1 AND i.id <= $2
			AND EXISTS (SELECT 1 FROM labels l WHERE l.item_id = i.id AND l.rater_id = $3 AND l.value = 'ERROR')`,
			run.ProjectID, end, run.RaterID).Scan(&total); err != nil {
			return nil, "", 0, mapErr(err, "run items", "")
		}
		rows, err = db.pool.Query(ctx, page+pageErrors+` ORDER BY i.id LIMIT $4`, run.ProjectID, end, after[1], limit+1, run.RaterID)
	} else {
		rows, err = db.pool.Query(ctx, page+` ORDER BY i.id LIMIT $4`, run.ProjectID, end, after[1], limit+1)
	}
	if err != nil {
		return nil, "", 0, mapErr(err, "run items", "")
	}
	items, err := collectRunItems(rows)
	if err != nil {
		return nil, "", 0, err
	}
	items, next := keysetPage(items, limit, func(it RunItem) string {
		return nextRowCursor(list, it.ItemID, strconv.FormatInt(end, 10))
	})
	return items, next, total, db.runItemDetails(ctx, run, items)
}

func collectRunItems(rows pgx.Rows) ([]RunItem, error) {
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunItem, error) {
		it := RunItem{Values: map[string]string{}}
		return it, r.Scan(&it.ItemID, &it.SourceID)
	})
	return items, mapErr(err, "run items", "")
}

// runItemDetails fills in the judge's answers and the run's calls of the
// items.
func (db *DB) runItemDetails(ctx context.Context, run *attune.JudgeRun, items []RunItem) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]int64, len(items))
	at := make(map[int64]*RunItem, len(items))
	for i := range items {
		ids[i] = items[i].ItemID
		at[ids[i]] = &items[i]
	}
	lrows, err := db.pool.Query(ctx, `SELECT l.item_id, l.rubric_item_key, l.value FROM labels l
		WHERE l.rater_id = $1 AND l.item_id = ANY($2)`, run.RaterID, ids)
	if err != nil {
		return mapErr(err, "run items", "")
	}
	var id int64
	var key, value string
	_, err = pgx.ForEachRow(lrows, []any{&id, &key, &value}, func() error {
		it := at[id]
		it.Answered, it.Values[key] = true, value
		if value == "ERROR" {
			it.Errors++
		}
		return nil
	})
	if err != nil {
		return mapErr(err, "run items", "")
	}
	crows, err := db.pool.Query(ctx, `SELECT item_id, count(*), coalesce(sum(cost_usd), 0)::float8 FROM judge_calls
		WHERE run_id = $1 AND item_id = ANY($2) GROUP BY item_id`, run.ID, ids)
	if err != nil {
		return mapErr(err, "run items", "")
	}
	var calls int
	var cost float64
	_, err = pgx.ForEachRow(crows, []any{&id, &calls, &cost}, func() error {
		at[id].Calls, at[id].CostUSD = calls, cost
		return nil
	})
	return mapErr(err, "run items", "")
}

// JudgeAnswer is a judge's label for one rubric item with how it was
// reached (judge_label_details) and the run that wrote it.
type JudgeAnswer struct {
	RunID         int64
	Key           string
	Value         string
	Rationale     string
	Method        string
	PromptHash    string
	WeightedScore *float64
	Distribution  map[string]float64
	Samples       []string
	Spread        *float64
	Raw           string
	// Reason says why an ERROR is one; "" otherwise (see JudgeLabel).
	Reason string
}

// JudgeItemAnswers returns a judge rater's answers for an item (the rater
// of a run: the judge with one prompt version), by rubric item key; none
// when it has not answered the item.
func (db *DB) JudgeItemAnswers(ctx context.Context, raterID, itemID int64) ([]JudgeAnswer, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT d.run_id, l.rubric_item_key, l.value, l.rationale, d.method, d.prompt_hash, d.weighted_score, d.distribution,
		       d.samples, d.spread, d.raw, d.reason
		FROM labels l JOIN judge_label_details d ON d.label_id = l.id
		WHERE l.rater_id = $1 AND l.item_id = $2
		ORDER BY l.rubric_item_key`, raterID, itemID)
	if err != nil {
		return nil, mapErr(err, "judge answers", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (JudgeAnswer, error) {
		var a JudgeAnswer
		var dist, samples []byte
		if err := r.Scan(&a.RunID, &a.Key, &a.Value, &a.Rationale, &a.Method, &a.PromptHash, &a.WeightedScore, &dist,
			&samples, &a.Spread, &a.Raw, &a.Reason); err != nil {
			return a, err
		}
		if len(dist) > 0 {
			if err := json.Unmarshal(dist, &a.Distribution); err != nil {
				return a, fmt.Errorf("distribution: %w", err)
			}
		}
		if len(samples) > 0 {
			if err := json.Unmarshal(samples, &a.Samples); err != nil {
				return a, fmt.Errorf("samples: %w", err)
			}
		}
		return a, nil
	})
	return out, mapErr(err, "judge answers", "")
}

// CallRecord is one stored judge call as the answers page shows it.
type CallRecord struct {
	ID            int64
	RunID         int64
	RubricItemKey string
	Sample        int
	Reask         bool
	OK            bool
	Model         string
	PromptHash    string
	Raw           string
	Error         string
	InputTokens   int
	CachedTokens  int
	OutputTokens  int
	CostUSD       float64
	Latency       time.Duration
	At            time.Time
}

// JudgeItemCalls returns every call a judge made for an item, over all its
// runs, in the order they were recorded.
func (db *DB) JudgeItemCalls(ctx context.Context, judgeID, itemID int64) ([]CallRecord, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, run_id, rubric_item_key, sample, reask, ok, model, prompt_hash, raw, error,
		       input_tokens, cached_tokens, output_tokens, cost_usd::float8, latency_ms, created_at
		FROM judge_calls WHERE item_id = $1 AND judge_id = $2 ORDER BY id`, itemID, judgeID)
	if err != nil {
		return nil, mapErr(err, "judge calls", "")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CallRecord, error) {
		var c CallRecord
		var ms int64
		err := r.Scan(&c.ID, &c.RunID, &c.RubricItemKey, &c.Sample, &c.Reask, &c.OK, &c.Model, &c.PromptHash, &c.Raw, &c.Error,
			&c.InputTokens, &c.CachedTokens, &c.OutputTokens, &c.CostUSD, &ms, &c.At)
		c.Latency = time.Duration(ms) * time.Millisecond
		return c, err
	})
	return out, mapErr(err, "judge calls", "")
}

// RaterAnswers is one person's answer set for an item.
type RaterAnswers struct {
	RaterID   int64
	Name      string
	Answers   map[string]string // rubric item key → value
	Submitted time.Time
}

// HumanAnswerSets returns the people's answer sets for an item of a
// project, by rater name. It is for leads: annotators never see each
// other's answers.
func (db *DB) HumanAnswerSets(ctx context.Context, projectID, itemID int64) ([]RaterAnswers, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		SELECT r.id, r.name, s.updated_at, l.rubric_item_key, l.value
		FROM answer_sets s JOIN raters r ON r.id = s.rater_id JOIN labels l ON l.answer_set_id = s.id
		WHERE s.project_id = $1 AND s.item_id = $2 AND r.kind = 'human'
		ORDER BY r.name, r.id`, projectID, itemID)
	if err != nil {
		return nil, mapErr(err, "human answers", "")
	}
	var out []RaterAnswers
	var id int64
	var name, key, value string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &at, &key, &value}, func() error {
		if len(out) == 0 || out[len(out)-1].RaterID != id {
			out = append(out, RaterAnswers{RaterID: id, Name: name, Answers: map[string]string{}, Submitted: at})
		}
		out[len(out)-1].Answers[key] = value
		return nil
	})
	return out, mapErr(err, "human answers", "")
}

// ItemIDBySource returns the id of the project's item with the dataset's
// id sourceID, or attune.ErrNotFound.
func (db *DB) ItemIDBySource(ctx context.Context, projectID int64, sourceID string) (int64, error) {
	var id int64
	err := db.pool.QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`, projectID, sourceID).Scan(&id)
	return id, mapErr(err, "find item", "")
}
