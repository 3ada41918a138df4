package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
)

// NewProbe is what CreateProbe needs.
type NewProbe struct {
	JudgeID   int64
	ProjectID int64
	// PromptVersion is the judge's prompt version to probe; 0 or 1 is
	// the rubric's own prompts.
	PromptVersion int
	// K is how many times each calibration item is asked as it is.
	K           int
	BudgetUSD   *float64
	EstimateUSD float64
}

// CreateProbe stores a queued robustness probe of a judge and prompt
// version over the project's calibration items: a judge run of the kind
// attune.RunProbe, with the judge's settings as they are now. A probe of
// the same judge and prompt version still queued or running on the project
// is an attune.ErrConflict (MsgProbeActive), decided by the database.
func (db *DB) CreateProbe(ctx context.Context, actorID *int64, np NewProbe) (*attune.JudgeRun, error) {
	var run *attune.JudgeRun
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		promptID, raterID, err := runPrompt(ctx, tx, np.JudgeID, np.ProjectID, np.PromptVersion)
		if err != nil {
			return err
		}
		var id int64
		err = tx.QueryRow(ctx, `
			INSERT INTO judge_runs (kind, probe_k, judge_id, project_id, budget_usd, estimate_usd, settings, items_total, created_by, prompt_id, rater_id)
			SELECT 'probe', $2, j.id, $3, $4, $5, j.settings, (SELECT count(*) FROM calibration_items WHERE project_id = $3), $6, $7, $8
			FROM judges j WHERE j.id = $1
			RETURNING id`, np.JudgeID, np.K, np.ProjectID, np.BudgetUSD, np.EstimateUSD, actorID, promptID, raterID).Scan(&id)
		if err != nil {
			return err
		}
		if run, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+runFrom+` WHERE r.id = $1`, id)); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "judge.probe", ProjectID: &np.ProjectID, Subject: run.JudgeName,
			Details: map[string]string{"run": fmt.Sprint(id), "items": fmt.Sprint(run.ItemsTotal), "k": strconv.Itoa(np.K),
				"prompt_version": fmt.Sprint(run.PromptVersion)}})
	})
	if err != nil {
		return nil, mapErr(err, "create probe", MsgProbeActive)
	}
	return run, nil
}

// MsgProbeActive is the conflict CreateProbe returns when a probe of the
// judge and prompt version is queued or running on the project already.
const MsgProbeActive = "a probe of this judge with this prompt version is queued or running on this project; wait for it to finish, or cancel it, first"

// ListProbes returns the probes of a judge on a project, newest first.
func (db *DB) ListProbes(ctx context.Context, projectID, judgeID int64) ([]*attune.JudgeRun, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.project_id = $1 AND r.judge_id = $2 AND r.kind = 'probe' ORDER BY r.created_at DESC, r.id DESC`, projectID, judgeID)
	if err != nil {
		return nil, mapErr(err, "list probes", "")
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.JudgeRun, error) { return scanRun(r) })
	return rs, mapErr(err, "list probes", "")
}

// ProbeItems are the calibration items of a project, by id: what a probe
// asks.
func (db *DB) ProbeItems(ctx context.Context, projectID int64) ([]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT item_id FROM calibration_items WHERE project_id = $1 ORDER BY item_id`, projectID)
	if err != nil {
		return nil, mapErr(err, "probe items", "")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, mapErr(err, "probe items", "")
}

// ProbeAnswer is a probe's answers to one item under one variant and ask.
type ProbeAnswer struct {
	ItemID  int64
	Variant string // "original" or a probe.Rewrite
	Ask     int
	Answers map[string]string // rubric item key → answer
}

// ProbeOriginal is the variant of the dialogue as it is.
const ProbeOriginal = "original"

// WriteProbeAnswers keeps a probe's answers to one item under one variant
// and ask. A second write of the same (a job run again after its worker
// died) keeps the first.
func (db *DB) WriteProbeAnswers(ctx context.Context, a ProbeAnswer, runID int64) error {
	_, err := db.pool.Exec(ctx, `
		INSERT INTO probe_answers (run_id, item_id, variant, ask, answers) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (run_id, item_id, variant, ask) DO NOTHING`, runID, a.ItemID, a.Variant, a.Ask, nonNil(a.Answers))
	return mapErr(err, "write probe answers", "")
}

// ProbeAnswers returns every answer of a probe, by item, variant and ask.
func (db *DB) ProbeAnswers(ctx context.Context, runID int64) ([]ProbeAnswer, error) {
	rows, err := db.pool.Query(ctx, `SELECT item_id, variant, ask, answers FROM probe_answers WHERE run_id = $1
		ORDER BY item_id, variant, ask`, runID)
	if err != nil {
		return nil, mapErr(err, "probe answers", "")
	}
	defer rows.Close()
	var out []ProbeAnswer
	for rows.Next() {
		var a ProbeAnswer
		if err := rows.Scan(&a.ItemID, &a.Variant, &a.Ask, &a.Answers); err != nil {
			return nil, mapErr(err, "probe answers", "")
		}
		out = append(out, a)
	}
	return out, mapErr(rows.Err(), "probe answers", "")
}

// ProbePeople returns, for each calibration item of a project, the
// people's answers by rubric item key: every person's label, or the gold
// answer alone where no person labelled the item. The length probe sets
// the judge's answers beside them.
func (db *DB) ProbePeople(ctx context.Context, projectID int64) (map[int64]map[string][]string, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		SELECT l.item_id, l.rubric_item_key, l.value
		FROM calibration_items k JOIN labels l ON l.item_id = k.item_id JOIN raters rt ON rt.id = l.rater_id AND rt.kind = 'human'
		WHERE k.project_id = $1
		UNION ALL
		SELECT g.item_id, g.rubric_item_key, g.value
		FROM calibration_items k JOIN gold_labels g ON g.item_id = k.item_id
		WHERE k.project_id = $1 AND NOT EXISTS (
			SELECT 1 FROM labels l JOIN raters rt ON rt.id = l.rater_id AND rt.kind = 'human'
			WHERE l.item_id = g.item_id AND l.rubric_item_key = g.rubric_item_key)`, projectID)
	if err != nil {
		return nil, mapErr(err, "probe people", "")
	}
	defer rows.Close()
	out := map[int64]map[string][]string{}
	for rows.Next() {
		var id int64
		var key, value string
		if err := rows.Scan(&id, &key, &value); err != nil {
			return nil, mapErr(err, "probe people", "")
		}
		if out[id] == nil {
			out[id] = map[string][]string{}
		}
		out[id][key] = append(out[id][key], value)
	}
	return out, mapErr(rows.Err(), "probe people", "")
}

// ProbeThresholds returns the project's probe thresholds: those a lead
// set, or probe.DefaultThresholds.
func (db *DB) ProbeThresholds(ctx context.Context, projectID int64) (probe.Thresholds, error) {
	var raw []byte
	if err := db.pool.QueryRow(ctx, `SELECT probe_thresholds FROM projects WHERE id = $1`, projectID).Scan(&raw); err != nil {
		return probe.Thresholds{}, mapErr(err, "probe thresholds", "")
	}
	t := probe.DefaultThresholds()
	if raw == nil {
		return t, nil
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return probe.Thresholds{}, fmt.Errorf("store: probe thresholds of project %d: %w", projectID, err)
	}
	return t, nil
}

// SetProbeThresholds stores the project's probe thresholds, refusing what
// probe.Thresholds.Validate refuses with its *attune.ValidationError (on
// the fields of probe.ThresholdFields).
func (db *DB) SetProbeThresholds(ctx context.Context, actorID *int64, projectID int64, t probe.Thresholds) error {
	if err := t.Validate(); err != nil {
		return err
	}
	b, _ := json.Marshal(t)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE projects SET probe_thresholds = $2, updated_at = now() WHERE id = $1`, projectID, b)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "project.probe_thresholds", ProjectID: &projectID,
			Details: map[string]string{"probe_thresholds": string(b)}})
	})
	return mapErr(err, "set probe thresholds", "")
}

// LatestProbes returns the latest completed probe of each judge and
// prompt version (each rater) on a project.
func (db *DB) LatestProbes(ctx context.Context, projectID int64) ([]*attune.JudgeRun, error) {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT ON (r.rater_id) `+runColumns+runFrom+`
		WHERE r.project_id = $1 AND r.kind = 'probe' AND r.status = 'completed'
		ORDER BY r.rater_id, r.finished_at DESC, r.id DESC`, projectID)
	if err != nil {
		return nil, mapErr(err, "latest probes", "")
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*attune.JudgeRun, error) { return scanRun(r) })
	return rs, mapErr(err, "latest probes", "")
}
