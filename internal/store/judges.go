package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// NewJudge is what CreateJudge and UpdateJudge need. Settings left zero
// take their defaults (attune.JudgeSettings.WithDefaults).
type NewJudge struct {
	Name      string
	Provider  string
	BaseURL   string
	Model     string
	APIKeyEnv string
	Settings  attune.JudgeSettings
	// KeyConfirmed says, on an update, that the person confirmed the key
	// variable for the judge's new endpoint (see attune.Judge.CheckChange).
	KeyConfirmed bool
}

func (nj NewJudge) judge() *attune.Judge {
	return &attune.Judge{Name: nj.Name, Provider: nj.Provider, BaseURL: nj.BaseURL, Model: nj.Model, APIKeyEnv: nj.APIKeyEnv,
		Settings: nj.Settings.WithDefaults()}
}

const judgeColumns = `j.id, j.name, j.provider, j.base_url, j.model, j.api_key_env, j.settings, r.id, j.created_by, coalesce(ou.email, ''), j.created_at`

// judgeFrom joins a judge to its rater and its owner.
const judgeFrom = ` FROM judges j JOIN raters r ON r.judge_id = j.id AND r.prompt_id IS NULL LEFT JOIN users ou ON ou.id = j.created_by`

func scanJudge(row pgx.Row) (*attune.Judge, error) {
	var j attune.Judge
	var settings []byte
	if err := row.Scan(&j.ID, &j.Name, &j.Provider, &j.BaseURL, &j.Model, &j.APIKeyEnv, &settings, &j.RaterID, &j.CreatedBy, &j.OwnerEmail, &j.CreatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(settings, &j.Settings); err != nil {
		return nil, fmt.Errorf("judge %d settings: %w", j.ID, err)
	}
	return &j, nil
}

// CreateJudge stores a judge and its rater, owned by actorID (nil: the
// command line). The judge is checked by attune.Judge.Validate under the
// admin's policy first: a bad one is an *attune.ValidationError and
// nothing is stored. A name in use is an attune.ErrConflict.
func (db *DB) CreateJudge(ctx context.Context, actorID *int64, policy attune.JudgePolicy, nj NewJudge) (*attune.Judge, error) {
	next := nj.judge()
	settings, err := json.Marshal(next.Settings)
	if err != nil {
		return nil, err
	}
	var j *attune.Judge
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if err := next.Validate(policy); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO judges (name, provider, base_url, model, api_key_env, settings, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
			next.Name, next.Provider, next.BaseURL, next.Model, next.APIKeyEnv, settings, actorID).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO raters (kind, judge_id, name) VALUES ('judge', $1, $2)`, id, nj.Name); err != nil {
			return err
		}
		if j, err = scanJudge(tx.QueryRow(ctx, `SELECT `+judgeColumns+judgeFrom+` WHERE j.id = $1`, id)); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "judge.create", Subject: nj.Name,
			Details: map[string]string{"provider": nj.Provider, "model": nj.Model, "base_url": nj.BaseURL}})
	})
	if err != nil {
		return nil, mapErr(err, "create judge", fmt.Sprintf("a judge named %q already exists", nj.Name))
	}
	return j, nil
}

// lockJudgeFor locks judge id's row for the rest of tx and reads the
// acting account's current role, so that a rule about who may change the
// judge is decided on both as they stand; actorID nil (the command line)
// gives a nil actor.
func lockJudgeFor(ctx context.Context, tx pgx.Tx, id int64, actorID *int64) (*attune.Judge, *attune.User, error) {
	j, err := scanJudge(tx.QueryRow(ctx, `SELECT `+judgeColumns+judgeFrom+` WHERE j.id = $1 FOR UPDATE OF j`, id))
	if err != nil {
		return nil, nil, err
	}
	if actorID == nil {
		return j, nil, nil
	}
	actor := &attune.User{ID: *actorID}
	if err := tx.QueryRow(ctx, `SELECT role FROM users WHERE id = $1`, *actorID).Scan(&actor.Role); err != nil {
		return nil, nil, err
	}
	return j, actor, nil
}

// UpdateJudge changes a judge, as actorID (nil: the command line). The
// judge is checked by attune.Judge.Validate under the admin's policy, and
// the change by attune.Judge.CheckChange against the judge as stored
// (locked for the check): only its owner or an admin may change its
// connection (attune.ErrForbidden), and a key must be confirmed for a new
// endpoint. Runs already made keep the settings they were started with.
func (db *DB) UpdateJudge(ctx context.Context, actorID *int64, policy attune.JudgePolicy, id int64, nj NewJudge) error {
	next := nj.judge()
	settings, err := json.Marshal(next.Settings)
	if err != nil {
		return err
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if err := next.Validate(policy); err != nil {
			return err
		}
		old, actor, err := lockJudgeFor(ctx, tx, id, actorID)
		if err != nil {
			return err
		}
		if err := old.CheckChange(actor, next, nj.KeyConfirmed); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE judges SET name = $2, provider = $3, base_url = $4, model = $5, api_key_env = $6, settings = $7, updated_at = now()
			WHERE id = $1`, id, next.Name, next.Provider, next.BaseURL, next.Model, next.APIKeyEnv, settings)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		if _, err := tx.Exec(ctx, `UPDATE raters r SET name = $2 || coalesce(' · prompt v' || p.version, '')
			FROM raters r2 LEFT JOIN judge_prompts p ON p.id = r2.prompt_id WHERE r.id = r2.id AND r.judge_id = $1`, id, nj.Name); err != nil {
			return err
		}
		details := map[string]string{"provider": nj.Provider, "model": nj.Model, "base_url": nj.BaseURL, "key_env": nj.APIKeyEnv}
		if old.Provider != nj.Provider || old.BaseURL != nj.BaseURL {
			details["previous_base_url"] = old.BaseURL
			details["key_confirmed"] = fmt.Sprint(nj.KeyConfirmed)
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "judge.update", Subject: nj.Name, Details: details})
	})
	return mapErr(err, "update judge", fmt.Sprintf("a judge named %q already exists", nj.Name))
}

// ListJudges returns every judge, by name.
func (db *DB) ListJudges(ctx context.Context) ([]*attune.Judge, error) {
	return db.listJudges(ctx, make([]any, 2), nil)
}

// JudgePage is one page of the judges, by name: at most limit (1 to
// MaxSearchPage) after the page whose cursor is cursor ("" for the
// first), and the next page's cursor ("" on the last), by keyset.
func (db *DB) JudgePage(ctx context.Context, cursor string, limit int) ([]*attune.Judge, string, error) {
	return keysetList(cursor, "judges", 1, limit,
		func(after []any, n int) ([]*attune.Judge, error) { return db.listJudges(ctx, after, &n) },
		func(j *attune.Judge) (int64, []string) { return j.ID, []string{j.Name} })
}

// listJudges lists the judges by name after the row after (afterRow's
// arguments), at most limit (nil: all).
func (db *DB) listJudges(ctx context.Context, after []any, limit *int) ([]*attune.Judge, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+judgeColumns+judgeFrom+`
		WHERE $2::bigint IS NULL OR (j.name, j.id) > ($1, $2)
		ORDER BY j.name, j.id LIMIT $3`, append(after, limit)...)
	if err != nil {
		return nil, mapErr(err, "list judges", "")
	}
	js, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.Judge, error) { return scanJudge(r) })
	return js, mapErr(err, "list judges", "")
}

// FindJudge returns a judge by id.
func (db *DB) FindJudge(ctx context.Context, id int64) (*attune.Judge, error) {
	j, err := scanJudge(db.pool.QueryRow(ctx, `SELECT `+judgeColumns+judgeFrom+` WHERE j.id = $1`, id))
	return j, mapErr(err, "find judge", "")
}

// FindJudgeByName returns a judge by its exact name.
func (db *DB) FindJudgeByName(ctx context.Context, name string) (*attune.Judge, error) {
	j, err := scanJudge(db.pool.QueryRow(ctx, `SELECT `+judgeColumns+judgeFrom+` WHERE j.name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, attune.NotFound(fmt.Sprintf("no judge is named %q", name))
	}
	return j, mapErr(err, "find judge", "")
}

const runColumns = `r.id, r.judge_id, j.name, r.project_id, r.status, r.reason, r.item_limit, r.budget_usd::float8, r.estimate_usd::float8,
	r.spent_usd::float8, r.items_total, r.capabilities, r.settings, r.generation, r.created_at, r.started_at, r.finished_at,
	r.prompt_id, coalesce(jp.version, 0), r.rater_id, r.kind, coalesce(r.probe_k, 0)`

// runFrom joins a run to its judge and its prompt version.
const runFrom = ` FROM judge_runs r JOIN judges j ON j.id = r.judge_id LEFT JOIN judge_prompts jp ON jp.id = r.prompt_id`

func scanRun(row pgx.Row) (*attune.JudgeRun, error) {
	var r attune.JudgeRun
	var settings []byte
	err := row.Scan(&r.ID, &r.JudgeID, &r.JudgeName, &r.ProjectID, &r.Status, &r.Reason, &r.ItemLimit, &r.BudgetUSD, &r.EstimateUSD,
		&r.SpentUSD, &r.ItemsTotal, &r.Capabilities, &settings, &r.Generation, &r.CreatedAt, &r.StartedAt, &r.FinishedAt,
		&r.PromptID, &r.PromptVersion, &r.RaterID, &r.Kind, &r.ProbeK)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(settings, &r.Settings); err != nil {
		return nil, fmt.Errorf("run %d settings: %w", r.ID, err)
	}
	return &r, nil
}

// NewRun is what CreateRun needs.
type NewRun struct {
	JudgeID     int64
	ProjectID   int64
	ItemLimit   *int
	BudgetUSD   *float64
	EstimateUSD float64
	// PromptVersion is the judge's prompt version for the project's
	// rubric to ask with; 0 or 1 is the rubric's own prompts.
	PromptVersion int
}

// CreateRun stores a queued run of a judge over a project (its first
// ItemLimit items by id, or all), with the judge's settings as they are
// now and the prompt version it asks with, recorded on the run. A later
// version answers as a rater of its own (see attune.JudgeRun.RaterID). A
// version the judge does not have is an *attune.ValidationError on the
// field "prompt"; a run of the judge with that version still queued or
// running on the project is an attune.ErrConflict (MsgRunActive), decided
// by the database so that two starts at once cannot both pass.
func (db *DB) CreateRun(ctx context.Context, actorID *int64, nr NewRun) (*attune.JudgeRun, error) {
	var run *attune.JudgeRun
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		promptID, raterID, err := runPrompt(ctx, tx, nr.JudgeID, nr.ProjectID, nr.PromptVersion)
		if err != nil {
			return err
		}
		var id int64
		err = tx.QueryRow(ctx, `
			INSERT INTO judge_runs (judge_id, project_id, item_limit, budget_usd, estimate_usd, settings, items_total, created_by, prompt_id, rater_id)
			SELECT j.id, $2, $3, $4, $5, j.settings,
			       least((SELECT count(*) FROM items WHERE project_id = $2), coalesce($3, 2147483647)), $6, $7, $8
			FROM judges j WHERE j.id = $1
			RETURNING id`, nr.JudgeID, nr.ProjectID, nr.ItemLimit, nr.BudgetUSD, nr.EstimateUSD, actorID, promptID, raterID).Scan(&id)
		if err != nil {
			return err
		}
		if run, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+runFrom+` WHERE r.id = $1`, id)); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "judge.run", ProjectID: &nr.ProjectID, Subject: run.JudgeName,
			Details: map[string]string{"run": fmt.Sprint(id), "items": fmt.Sprint(run.ItemsTotal), "estimate_usd": fmt.Sprintf("%.4f", nr.EstimateUSD),
				"prompt_version": fmt.Sprint(run.PromptVersion)}})
	})
	if err != nil {
		return nil, mapErr(err, "create run", MsgRunActive)
	}
	return run, nil
}

// MsgRunActive is the conflict CreateRun and SetRunStatus return when the
// run would be a second one queued or running of its judge and prompt
// version on its project, which the database refuses
// (judge_runs_one_active_idx).
const MsgRunActive = "another run of this judge with this prompt version is queued or running on this project; pause or cancel it, or wait for it to finish, first"

// FindRun returns a run.
func (db *DB) FindRun(ctx context.Context, id int64) (*attune.JudgeRun, error) {
	r, err := scanRun(db.pool.QueryRow(ctx, `SELECT `+runColumns+runFrom+` WHERE r.id = $1`, id))
	return r, mapErr(err, "find run", "")
}

// ListRuns returns a project's runs that label, newest first; probes are
// ListProbes'.
func (db *DB) ListRuns(ctx context.Context, projectID int64) ([]*attune.JudgeRun, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.project_id = $1 AND r.kind = 'label' ORDER BY r.created_at DESC, r.id DESC`, projectID)
	if err != nil {
		return nil, mapErr(err, "list runs", "")
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.JudgeRun, error) { return scanRun(r) })
	return rs, mapErr(err, "list runs", "")
}

// RunPage is one page of a project's runs, newest first: at most limit
// after the page whose Next is cursor ("" for the first), and the cursor
// of the page after it ("" on the last), by keyset.
func (db *DB) RunPage(ctx context.Context, projectID int64, cursor string, limit int) ([]*attune.JudgeRun, string, error) {
	if err := checkPageLimit(limit); err != nil {
		return nil, "", err
	}
	at, afterID, err := timeCursor(cursor, "runs")
	if err != nil {
		return nil, "", err
	}
	rows, err := db.pool.Query(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.project_id = $1 AND r.kind = 'label' AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3))
		ORDER BY r.created_at DESC, r.id DESC LIMIT $4`, projectID, at, afterID, limit+1)
	if err != nil {
		return nil, "", mapErr(err, "list runs", "")
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.JudgeRun, error) { return scanRun(r) })
	if err != nil {
		return nil, "", mapErr(err, "list runs", "")
	}
	var next string
	if len(rs) > limit {
		rs = rs[:limit]
		last := rs[limit-1]
		next = nextTimeCursor("runs", last.CreatedAt, last.ID)
	}
	return rs, next, nil
}

// SetRunStatus moves a run to status `to` if it is in one of `from`, with
// the reason; it reports whether it moved. Starting a run records the
// capabilities probed and bumps its generation, so that work queued for an
// earlier start can tell it is stale. Queuing a paused run again while
// another of its judge and prompt version is active on the project is an
// attune.ErrConflict (MsgRunActive).
func (db *DB) SetRunStatus(ctx context.Context, id int64, from []attune.RunStatus, to attune.RunStatus, reason string, capabilities []byte) (bool, error) {
	fromS := make([]string, len(from))
	for i, f := range from {
		fromS[i] = string(f)
	}
	moved := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var projectID int64
		err := tx.QueryRow(ctx, `
			UPDATE judge_runs SET status = $3, reason = $4,
			       capabilities = coalesce($5, capabilities),
			       generation = generation + CASE WHEN $3 = 'running' THEN 1 ELSE 0 END,
			       started_at = CASE WHEN $3 = 'running' THEN coalesce(started_at, now()) ELSE started_at END,
			       finished_at = CASE WHEN $3 IN ('completed', 'cancelled') THEN now() ELSE NULL END
			WHERE id = $1 AND status = ANY($2)
			RETURNING project_id`, id, fromS, to, reason, capabilities).Scan(&projectID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		moved = true
		return db.announceRun(ctx, tx, projectID, id, to, reason)
	})
	if err != nil {
		return false, mapErr(err, "set run status", MsgRunActive)
	}
	return moved, nil
}

// announceRun tells the project's webhooks that a run paused or ended.
func (db *DB) announceRun(ctx context.Context, tx pgx.Tx, projectID, runID int64, status attune.RunStatus, reason string) error {
	event := attune.EventRunFinished
	switch status {
	case attune.RunPaused:
		event = attune.EventRunPaused
	case attune.RunCompleted, attune.RunCancelled:
	default:
		return nil
	}
	return db.announce(ctx, tx, projectID, event, map[string]any{"run_id": runID, "status": status, "reason": reason})
}

// PauseRunOverBudget pauses a run that has spent its budget, but only while
// it is running the given generation: work of an earlier start that ends
// after the run was resumed under a raised budget must not pause the new
// start on the old budget. Budget and spend are read as they stand, under
// the row's lock, and reason words the pause from them. It reports whether
// it paused the run.
func (db *DB) PauseRunOverBudget(ctx context.Context, id int64, generation int, reason func(spent, budget float64) string) (bool, error) {
	paused := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var spent float64
		var budget *float64
		var projectID int64
		err := tx.QueryRow(ctx, `
			SELECT spent_usd::float8, budget_usd::float8, project_id FROM judge_runs
			WHERE id = $1 AND status = $2 AND generation = $3 FOR UPDATE`, id, attune.RunRunning, generation).Scan(&spent, &budget, &projectID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // paused, cancelled or started again meanwhile
		}
		if err != nil || budget == nil || spent < *budget {
			return err
		}
		why := reason(spent, *budget)
		if _, err = tx.Exec(ctx, `UPDATE judge_runs SET status = $2, reason = $3 WHERE id = $1`, id, attune.RunPaused, why); err != nil {
			return err
		}
		paused = true
		return db.announceRun(ctx, tx, projectID, id, attune.RunPaused, why)
	})
	return paused, mapErr(err, "pause run", "")
}

// RunItemsTodo returns the items of a run that have no answers from its
// judge yet, by id.
func (db *DB) RunItemsTodo(ctx context.Context, run *attune.JudgeRun) ([]int64, error) {
	return runItemsTodo(ctx, db.pool, run)
}

// runItemsTodo is RunItemsTodo on q: the pool, or a transaction.
func runItemsTodo(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, run *attune.JudgeRun) ([]int64, error) {
	rows, err := q.Query(ctx, `
		SELECT i.id FROM (SELECT id FROM items WHERE project_id = $1 ORDER BY id LIMIT $2) i
		WHERE NOT EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.rater_id = $3)
		ORDER BY i.id`, run.ProjectID, run.ItemsTotal, run.RaterID)
	if err != nil {
		return nil, mapErr(err, "run items", "")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, mapErr(err, "run items", "")
}

// RunItemsTodoBetween returns the items of a run with ids from first to
// last (both in the run's scope) that have no answers from its judge yet,
// by id: what a job given that stretch of the run still has to answer.
func (db *DB) RunItemsTodoBetween(ctx context.Context, run *attune.JudgeRun, first, last int64) ([]int64, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT i.id FROM items i
		WHERE i.project_id = $1 AND i.id BETWEEN $2 AND $3
		  AND NOT EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.rater_id = $4)
		ORDER BY i.id`, run.ProjectID, first, last, run.RaterID)
	if err != nil {
		return nil, mapErr(err, "run items between", "")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, mapErr(err, "run items between", "")
}

// JudgeCall is one provider call that came back, for the record and the
// cache.
type JudgeCall struct {
	RunID, JudgeID, ItemID int64
	RubricItemKey          string
	Sample                 int
	Reask                  bool
	CacheKey, PromptHash   string
	Model                  string
	OK                     bool   // a response came back; false: the call failed for good
	Raw                    string // the model's text, or the error
	Response               []byte // the full response as JSON, for reuse from the cache
	Error                  string
	InputTokens            int
	CachedTokens           int
	OutputTokens           int
	CostUSD                float64
	Latency                time.Duration
}

// CachedResponses returns the stored responses for the cache keys that
// have one: valid answers are never paid for twice.
func (db *DB) CachedResponses(ctx context.Context, keys []string) (map[string][]byte, error) {
	rows, err := db.pool.Query(ctx, `SELECT cache_key, response FROM judge_calls WHERE ok AND cache_key = ANY($1) AND response <> ''`, keys)
	if err != nil {
		return nil, mapErr(err, "cached calls", "")
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var resp []byte
		if err := rows.Scan(&k, &resp); err != nil {
			return nil, mapErr(err, "cached calls", "")
		}
		out[k] = resp
	}
	return out, mapErr(rows.Err(), "cached calls", "")
}

// RecordCall stores a call as soon as it returns, before its answer is
// used, so that a crash after a paid call does not pay for it again.
func (db *DB) RecordCall(ctx context.Context, c JudgeCall) error {
	_, err := db.pool.Exec(ctx, `
		INSERT INTO judge_calls (run_id, judge_id, item_id, rubric_item_key, sample, reask, cache_key, prompt_hash, model, ok, raw, response,
		                         error, input_tokens, cached_tokens, output_tokens, cost_usd, latency_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (cache_key) WHERE ok DO NOTHING`,
		c.RunID, c.JudgeID, c.ItemID, c.RubricItemKey, c.Sample, c.Reask, c.CacheKey, c.PromptHash, c.Model, c.OK, c.Raw, string(c.Response),
		c.Error, c.InputTokens, c.CachedTokens, c.OutputTokens, c.CostUSD, c.Latency.Milliseconds())
	return mapErr(err, "record call", "")
}

// RecordCalls stores calls as RecordCall does, in one statement and so
// one commit: a runner gathers the calls that come back while the last
// batch was being written, instead of paying a round trip and a commit
// for each.
func (db *DB) RecordCalls(ctx context.Context, calls []JudgeCall) error {
	if len(calls) == 0 {
		return nil
	}
	n := len(calls)
	var (
		runs, judges, items, samples, inTok, cachedTok, outTok, latency = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		keys, cacheKeys, hashes, models, raws, responses, errs          = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		reasks, oks                                                     = make([]bool, n), make([]bool, n)
		costs                                                           = make([]float64, n)
	)
	for i, c := range calls {
		runs[i], judges[i], items[i], keys[i], samples[i], reasks[i] = c.RunID, c.JudgeID, c.ItemID, c.RubricItemKey, int64(c.Sample), c.Reask
		cacheKeys[i], hashes[i], models[i], oks[i], raws[i], responses[i] = c.CacheKey, c.PromptHash, c.Model, c.OK, c.Raw, string(c.Response)
		errs[i], inTok[i], cachedTok[i], outTok[i], costs[i], latency[i] = c.Error, int64(c.InputTokens), int64(c.CachedTokens), int64(c.OutputTokens), c.CostUSD, c.Latency.Milliseconds()
	}
	_, err := db.pool.Exec(ctx, `
		INSERT INTO judge_calls (run_id, judge_id, item_id, rubric_item_key, sample, reask, cache_key, prompt_hash, model, ok, raw, response,
		                         error, input_tokens, cached_tokens, output_tokens, cost_usd, latency_ms)
		SELECT run_id, judge_id, item_id, rubric_item_key, sample::int, reask, cache_key, prompt_hash, model, ok, raw, response,
		       error, input_tokens::int, cached_tokens::int, output_tokens::int, cost_usd, latency_ms::int
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::boolean[], $7::text[], $8::text[], $9::text[],
		            $10::boolean[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::bigint[], $16::bigint[], $17::float8[], $18::bigint[])
		     AS c (run_id, judge_id, item_id, rubric_item_key, sample, reask, cache_key, prompt_hash, model, ok, raw, response,
		           error, input_tokens, cached_tokens, output_tokens, cost_usd, latency_ms)
		ON CONFLICT (cache_key) WHERE ok DO NOTHING`,
		runs, judges, items, keys, samples, reasks, cacheKeys, hashes, models, oks, raws, responses, errs, inTok, cachedTok, outTok, costs, latency)
	return mapErr(err, fmt.Sprintf("record %d calls", n), "")
}

// AddRunSpend adds a call's cost to the run and returns what the run has
// spent and its budget (nil: none).
func (db *DB) AddRunSpend(ctx context.Context, runID int64, usd float64) (spent float64, budget *float64, err error) {
	err = db.pool.QueryRow(ctx, `UPDATE judge_runs SET spent_usd = spent_usd + $2 WHERE id = $1 RETURNING spent_usd::float8, budget_usd::float8`,
		runID, usd).Scan(&spent, &budget)
	return spent, budget, mapErr(err, "run spend", "")
}

// Pace reserves the next start time for one request of the judge that
// uses about `tokens` tokens, under its requests-per-minute and
// tokens-per-minute limits (0: no limit). Reservations are spaced evenly
// and shared by every worker on every replica, so no window of a minute
// ever holds more than the limits allow. The caller waits until the
// returned time before sending.
func (db *DB) Pace(ctx context.Context, judgeID int64, rpm, tpm, tokens int) (time.Time, error) {
	var reqGap, tokGap time.Duration
	if rpm > 0 {
		reqGap = time.Minute / time.Duration(rpm)
	}
	if tpm > 0 {
		tokGap = time.Minute * time.Duration(tokens) / time.Duration(tpm)
	}
	var start time.Time
	err := db.pool.QueryRow(ctx, `
		INSERT INTO judge_pacing AS p (judge_id, next_request, next_token)
		VALUES ($1, clock_timestamp() + $2 * interval '1 microsecond', clock_timestamp() + $3 * interval '1 microsecond')
		ON CONFLICT (judge_id) DO UPDATE SET
		    next_request = greatest(p.next_request, p.next_token, clock_timestamp()) + $2 * interval '1 microsecond',
		    next_token   = greatest(p.next_request, p.next_token, clock_timestamp()) + $3 * interval '1 microsecond'
		RETURNING greatest(next_request - $2 * interval '1 microsecond', next_token - $3 * interval '1 microsecond')`,
		judgeID, reqGap.Microseconds(), tokGap.Microseconds()).Scan(&start)
	return start, mapErr(err, "pace", "")
}

// JudgeLabel is one answer a judge reached for one rubric item, with how.
type JudgeLabel struct {
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
	// Reason says why an ERROR is one (a failed call, an unreadable reply,
	// an answer the rubric forbids for the dialogue); "" otherwise.
	Reason string
	// Evidence is the turns (from 1) the judge named where a failing
	// answer fails, held to the rule on evidence before it is stored.
	Evidence []int
}

// WriteJudgeAnswers stores a judge's answers for an item as its answer set
// and counts the item done for the run, in one transaction whose commit
// waits as every commit does (for the disk, and for a synchronous standby
// where there is one): once it returns, the answers survive a failover. It
// reports false, storing nothing, when the judge has answered that item
// already (a job that ran twice). When the item was the run's last one to
// answer, the same transaction marks the run completed (and announces it),
// and completed says so: no crash or failover can come between the last
// answer and the mark.
func (db *DB) WriteJudgeAnswers(ctx context.Context, run *attune.JudgeRun, itemID int64, labels []JudgeLabel, activeMS int64) (written, completed bool, err error) {
	n := len(labels)
	keys, values, notes := make([]string, n), make([]string, n), make([]string, n)
	methods, hashes, raws := make([]string, n), make([]string, n), make([]string, n)
	reasons, turns := make([]string, n), make([]string, n)
	weighted, spreads := make([]*float64, n), make([]*float64, n)
	dists, samples := make([]*string, n), make([]*string, n)
	for i, l := range labels {
		keys[i], values[i], notes[i] = l.Key, l.Value, l.Rationale
		methods[i], hashes[i], raws[i], reasons[i] = l.Method, l.PromptHash, l.Raw, l.Reason
		turns[i] = turnsLiteral(l.Evidence)
		weighted[i], spreads[i] = l.WeightedScore, l.Spread
		if l.Distribution != nil {
			b, _ := json.Marshal(l.Distribution)
			s := string(b)
			dists[i] = &s
		}
		if l.Samples != nil {
			b, _ := json.Marshal(l.Samples)
			s := string(b)
			samples[i] = &s
		}
	}
	// BEGIN travels with the write, and the commit is the only other round
	// trip unless the item was the last. The run's row is updated only when
	// the set was new, and its lock is held to the commit, as StartRunItems
	// relies on; the lock passes from item to item, so a run writes one
	// item per commit's wait.
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`
		WITH s AS (
			INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, active_ms)
			SELECT p.id, $2, $3, p.rubric_version_id, $4 FROM projects p WHERE p.id = $1
			ON CONFLICT (item_id, rater_id) DO NOTHING
			RETURNING id, project_id, item_id, rater_id, rubric_version_id),
		l AS (
			INSERT INTO labels (answer_set_id, project_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale, evidence)
			SELECT s.id, s.project_id, s.item_id, s.rater_id, s.rubric_version_id, k, v, n, e::int[]
			FROM s, unnest($6::text[], $7::text[], $8::text[], $17::text[]) AS t(k, v, n, e)
			RETURNING id, rubric_item_key),
		d AS (
			INSERT INTO judge_label_details (label_id, run_id, method, prompt_hash, weighted_score, distribution, samples, spread, raw, reason)
			SELECT l.id, $5, d.method, d.hash, d.weighted, d.dist::jsonb, d.samples::jsonb, d.spread, d.raw, d.reason
			FROM l JOIN unnest($6::text[], $9::text[], $10::text[], $11::float8[], $12::text[], $13::text[], $14::float8[], $15::text[], $16::text[])
			     AS d(k, method, hash, weighted, dist, samples, spread, raw, reason) ON d.k = l.rubric_item_key),
		r AS (
			UPDATE judge_runs SET items_done = items_done + 1
			WHERE id = $5 AND EXISTS (SELECT 1 FROM s)
			RETURNING items_done >= items_total AND status = 'running' AS last)
		SELECT EXISTS (SELECT 1 FROM s), coalesce((SELECT last FROM r), false)`,
		run.ProjectID, itemID, run.RaterID, activeMS, run.ID,
		keys, values, notes, methods, hashes, weighted, dists, samples, spreads, raws, reasons, turns)
	err = db.inBatchTx(ctx, b, func(tx pgx.Tx, br pgx.BatchResults) error {
		var last bool
		err := br.QueryRow().Scan(&written, &last)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil || !last {
			return err
		}
		// The count says when to look; the look is exact (a job of an
		// earlier start finishing late can make the count run ahead), and
		// a statement of its own, so that it sees every answer committed
		// while this one waited for the run's row.
		completed, err = db.completeRunIfDone(ctx, tx, run)
		return err
	})
	if err != nil {
		return false, false, mapErr(err, "write judge answers", "")
	}
	return written, completed, nil
}

// completeRunIfDone marks a running run completed, and announces it, when
// its judge has answered every item of its scope. It reports whether it
// did. tx must hold the run's row locked, or lock it first.
func (db *DB) completeRunIfDone(ctx context.Context, tx pgx.Tx, run *attune.JudgeRun) (bool, error) {
	todo, err := runItemsTodo(ctx, tx, run)
	if err != nil || len(todo) > 0 {
		return false, err
	}
	var projectID int64
	err = tx.QueryRow(ctx, `
		UPDATE judge_runs SET status = 'completed', reason = '', finished_at = now()
		WHERE id = $1 AND status = 'running' RETURNING project_id`, run.ID).Scan(&projectID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, db.announceRun(ctx, tx, projectID, run.ID, attune.RunCompleted, "")
}

// unfinishedRunJobs is true when a run (r) has a job in the queue $1 that
// may still work: available, running, scheduled or to be retried.
const unfinishedRunJobs = `EXISTS (
	SELECT 1 FROM river_job q WHERE q.queue = $1 AND q.args @> jsonb_build_object('run_id', r.id)
	  AND q.state NOT IN ('completed', 'cancelled', 'discarded'))`

// CompleteFinishedRuns marks completed, and announces, every running run
// that has no job left in queue that may still work and whose judge has
// answered every item of its scope: a run whose last item's mark never
// committed, such as one a release before WriteJudgeAnswers marked runs
// itself left running, or one whose jobs all ended while it waited for a
// database that was failing over. A run with a job still to work is left
// to its jobs, which may have more to do than its items (its sentinel). It
// returns the ids of the runs it completed. Any process may call it at
// any time; the runner does at start and with each rescue.
func (db *DB) CompleteFinishedRuns(ctx context.Context, queue string) ([]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.status = 'running' AND r.kind = 'label' AND NOT `+unfinishedRunJobs+` ORDER BY r.id`, queue)
	if err != nil {
		return nil, mapErr(err, "complete finished runs", "")
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.JudgeRun, error) { return scanRun(r) })
	if err != nil {
		return nil, mapErr(err, "complete finished runs", "")
	}
	var done []int64
	for _, run := range runs {
		var completed bool
		err := db.inTx(ctx, func(tx pgx.Tx) error {
			// Under the run's lock and a fresh look at its jobs: a start
			// or a job may have moved on since the list was read.
			var idle bool
			err := tx.QueryRow(ctx, `
				SELECT NOT `+unfinishedRunJobs+` FROM judge_runs r WHERE r.id = $2 AND r.status = 'running' FOR UPDATE OF r`,
				queue, run.ID).Scan(&idle)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && !idle) {
				return nil
			}
			if err != nil {
				return err
			}
			completed, err = db.completeRunIfDone(ctx, tx, run)
			return err
		})
		if err != nil {
			return done, mapErr(err, "complete finished runs", "")
		}
		if completed {
			done = append(done, run.ID)
		}
	}
	return done, nil
}

// StartRunItems returns the items of a run still to answer, as a start or
// resume finds them, and sets the run's count of items done to match. The
// count decides which write looks for the run's end, so it must never fall
// behind: a job of an earlier start may write an answer meanwhile. The
// run's row is locked first, and that job's count goes up under the same
// lock as the last thing before it commits, so its answer is either counted
// here or counted by its own increment after, never lost between the two.
func (db *DB) StartRunItems(ctx context.Context, run *attune.JudgeRun) ([]int64, error) {
	var todo []int64
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM judge_runs WHERE id = $1 FOR UPDATE`, run.ID); err != nil {
			return err
		}
		var err error
		if todo, err = runItemsTodo(ctx, tx, run); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE judge_runs SET items_done = $2 WHERE id = $1`, run.ID, run.ItemsTotal-len(todo))
		return err
	})
	return todo, mapErr(err, "run items done", "")
}

// RunProgress reports a run's progress: items answered, ERROR labels,
// calls, tokens and cost.
func (db *DB) RunProgress(ctx context.Context, run *attune.JudgeRun) (attune.RunProgress, error) {
	p := attune.RunProgress{ItemsTotal: run.ItemsTotal}
	// Items done counts every item of the run's scope the judge has
	// answered, in this run or an earlier one (a resumed run skips those).
	err := db.pool.QueryRow(ctx, `
		SELECT count(*) FROM (SELECT id FROM items WHERE project_id = $1 ORDER BY id LIMIT $2) i
		WHERE EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.rater_id = $3)`,
		run.ProjectID, run.ItemsTotal, run.RaterID).Scan(&p.ItemsDone)
	if err != nil {
		return p, mapErr(err, "run progress", "")
	}
	err = db.pool.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE l.value = 'ERROR')
		FROM judge_label_details d JOIN labels l ON l.id = d.label_id WHERE d.run_id = $1`, run.ID).Scan(&p.Labels, &p.Errors)
	if err != nil {
		return p, mapErr(err, "run progress", "")
	}
	err = db.pool.QueryRow(ctx, `
		SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(cached_tokens), 0), coalesce(sum(output_tokens), 0),
		       coalesce(sum(cost_usd), 0)::float8
		FROM judge_calls WHERE run_id = $1`, run.ID).Scan(&p.Calls, &p.InputTokens, &p.CachedTokens, &p.OutputTokens, &p.CostUSD)
	if err != nil {
		return p, mapErr(err, "run progress", "")
	}
	if run.StartedAt != nil && p.ItemsDone > 0 && p.ItemsDone < p.ItemsTotal && run.Status == attune.RunRunning {
		per := time.Since(*run.StartedAt) / time.Duration(p.ItemsDone)
		p.TimeLeft = per * time.Duration(p.ItemsTotal-p.ItemsDone)
	}
	return p, nil
}

// ItemIDs returns the ids of a project's first limit items by id (all when
// limit is 0).
func (db *DB) ItemIDs(ctx context.Context, projectID int64, limit int) ([]int64, error) {
	lim := any(nil)
	if limit > 0 {
		lim = limit
	}
	rows, err := db.pool.Query(ctx, `SELECT id FROM items WHERE project_id = $1 ORDER BY id LIMIT $2`, projectID, lim)
	if err != nil {
		return nil, mapErr(err, "item ids", "")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, mapErr(err, "item ids", "")
}

// SetRunBudget sets a run's budget cap (nil: none). It must be above what
// the run has spent, or the run would pause again at once.
func (db *DB) SetRunBudget(ctx context.Context, runID int64, usd *float64) error {
	var spent float64
	err := db.pool.QueryRow(ctx, `SELECT spent_usd::float8 FROM judge_runs WHERE id = $1`, runID).Scan(&spent)
	if err != nil {
		return mapErr(err, "run budget", "")
	}
	if usd != nil && *usd <= spent {
		return attune.Invalid("budget", fmt.Sprintf("the run has spent $%.4f already: set a budget above that", spent))
	}
	_, err = db.pool.Exec(ctx, `UPDATE judge_runs SET budget_usd = $2 WHERE id = $1`, runID, usd)
	return mapErr(err, "run budget", "")
}
