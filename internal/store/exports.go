package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
)

// The export methods stream: each reads its rows with one query and hands
// them to emit one at a time, reusing one value, while PostgreSQL is still
// sending the rest. Nothing holds more than a row, whatever the project's
// size. emit must not keep the value it is given; an error from emit stops
// the export and is returned as it is.

// exportLabelsQuery reads a project's labels ($1) for ExportLabels. Every
// table is read through an index that starts with the project, so the cost
// follows the project's size whatever else the database holds; how a
// judge's label was reached is looked up label by label.
const exportLabelsQuery = `
		SELECT i.source_id, coalesce(i.meta ->> p.system_key, ''), coalesce(u.email, r.name), r.kind, l.rubric_item_key, l.value, l.rationale,
		       s.active_ms, l.created_at,
		       coalesce((SELECT d.method FROM judge_label_details d WHERE d.label_id = l.id), ''), l.evidence
		FROM labels l
		JOIN items i ON i.id = l.item_id AND i.project_id = $1
		JOIN projects p ON p.id = $1
		JOIN answer_sets s ON s.id = l.answer_set_id AND s.project_id = $1
		JOIN raters r ON r.id = l.rater_id
		LEFT JOIN users u ON u.id = r.user_id
		LEFT JOIN rubric_items ri ON ri.rubric_version_id = l.rubric_version_id AND ri.key = l.rubric_item_key
		WHERE l.project_id = $1
		ORDER BY l.item_id, r.kind, l.rater_id, ri.position`

// ExportLabels streams every label of the project in long form: by item,
// people before judges, each rater's labels in rubric order. It returns how
// many labels it emitted.
func (db *DB) ExportLabels(ctx context.Context, projectID int64, emit func(*export.Label) error) (int, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return 0, err
	}
	n := 0
	err := db.leadRead(ctx, ReadExport, func(tx pgx.Tx) error {
		rows, err := openCursor(ctx, tx, "export_labels", exportLabelsQuery, projectID)
		if err != nil {
			return err
		}
		defer rows.Close()
		var l export.Label
		for rows.Next() {
			if err := rows.Scan(&l.ItemID, &l.System, &l.Rater, &l.RaterKind, &l.RubricItem, &l.Value, &l.Rationale,
				&l.ActiveMS, &l.CreatedAt, &l.Method, &l.Evidence); err != nil {
				return err
			}
			if err := emit(&l); err != nil {
				return emitError{err}
			}
			n++
		}
		return rows.Err()
	})
	return n, exportErr(err, "export labels")
}

// exportErr returns an emit's error as it is and maps the rest.
func exportErr(err error, what string) error {
	if e, ok := err.(emitError); ok {
		return e.err
	}
	if errors.Is(err, ErrReadsBusy) || errors.Is(err, ErrReadTimeout) {
		return err
	}
	return mapErr(err, what, "")
}

// ExportJudgeCalls streams every call judges made for the project's runs,
// in the order they were made. It returns how many it emitted.
func (db *DB) ExportJudgeCalls(ctx context.Context, projectID int64, emit func(*export.JudgeCall) error) (int, error) {
	n := 0
	err := db.leadRead(ctx, ReadExport, func(tx pgx.Tx) error {
		rows, err := openCursor(ctx, tx, "export_judge_calls", `
			SELECT c.run_id, j.name, c.model, i.source_id, coalesce(i.meta ->> p.system_key, ''), c.rubric_item_key, c.sample, c.reask, c.prompt_hash,
			       c.input_tokens, c.cached_tokens, c.output_tokens, c.cost_usd::text, c.latency_ms, c.ok, c.error, c.raw, c.created_at
			FROM judge_calls c
			JOIN judge_runs jr ON jr.id = c.run_id
			JOIN judges j ON j.id = c.judge_id
			JOIN items i ON i.id = c.item_id
			JOIN projects p ON p.id = jr.project_id
			WHERE jr.project_id = $1
			ORDER BY c.id`, projectID)
		if err != nil {
			return err
		}
		defer rows.Close()
		var c export.JudgeCall
		for rows.Next() {
			if err := rows.Scan(&c.RunID, &c.Judge, &c.Model, &c.ItemID, &c.System, &c.RubricItem, &c.Sample, &c.Reask, &c.PromptHash,
				&c.InputTokens, &c.CachedTokens, &c.OutputTokens, &c.CostUSD, &c.LatencyMS, &c.OK, &c.Error, &c.Raw, &c.CreatedAt); err != nil {
				return err
			}
			if err := emit(&c); err != nil {
				return emitError{err}
			}
			n++
		}
		return rows.Err()
	})
	return n, exportErr(err, "export judge calls")
}

// ExportGold streams the project's gold set, one GoldItem per item in id
// order, open items included. With raters, it first calls begin with every
// rater who answered in the project (people first, then judges, by name)
// and fills each item's Ratings; otherwise begin gets nil. The raters and
// the items are read in one snapshot, so the columns match the rows.
//
// Each item carries its people's answers by rubric item, as stored, from
// which the export computes its agreement (export.Agreement); the store
// computes no statistic. For automatic gold the note lists the rule's
// reason on each rubric item.
func (db *DB) ExportGold(ctx context.Context, projectID int64, withRaters bool, begin func([]export.Rater) error, emit func(*export.GoldItem) error) (int, error) {
	if _, err := db.currentLabels(ctx, projectID); err != nil { // answer sets submitted a moment ago (pending.go)
		return 0, err
	}
	n := 0
	err := db.leadRead(ctx, ReadExport, func(tx pgx.Tx) error {
		var raters []export.Rater
		if withRaters {
			rows, err := tx.Query(ctx, `
				SELECT r.id, r.kind, coalesce(u.email, r.name)
				FROM raters r LEFT JOIN users u ON u.id = r.user_id
				WHERE EXISTS (SELECT 1 FROM answer_sets s WHERE s.rater_id = r.id AND s.project_id = $1)
				ORDER BY r.kind, 3, r.id`, projectID)
			if err != nil {
				return err
			}
			raters, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (export.Rater, error) {
				var x export.Rater
				err := r.Scan(&x.ID, &x.Kind, &x.Name)
				return x, err
			})
			if err != nil {
				return err
			}
		}
		if err := begin(raters); err != nil {
			return emitError{err}
		}
		rows, err := openCursor(ctx, tx, "export_gold", `
			SELECT i.source_id, coalesce(i.meta ->> p.system_key, ''), g.vals, coalesce(g.method, ''), coalesce(g.by, ''), g.at, coalesce(g.note, ''),
			       h.humans, h.human,
			       CASE WHEN $2 THEN (SELECT jsonb_object_agg(x.rater_id, x.vals) FROM (
			           SELECT l.rater_id, jsonb_object_agg(l.rubric_item_key, l.value) AS vals
			           FROM labels l WHERE l.item_id = i.id GROUP BY l.rater_id) x) END
			FROM items i
			JOIN projects p ON p.id = i.project_id
			LEFT JOIN LATERAL (
				SELECT jsonb_object_agg(gl.rubric_item_key, gl.value) AS vals,
				       min(gl.method) AS method,
				       max(u.email) AS by,
				       max(gl.decided_at) AS at,
				       CASE WHEN min(gl.method) = 'adjudicated' THEN max(gl.note)
				            ELSE string_agg(gl.rubric_item_key || ': ' || gl.note, '; ' ORDER BY ri.position) END AS note
				FROM gold_labels gl
				LEFT JOIN users u ON u.id = gl.decided_by
				LEFT JOIN rubric_items ri ON ri.rubric_version_id = gl.rubric_version_id AND ri.key = gl.rubric_item_key
				WHERE gl.item_id = i.id) g ON true
			CROSS JOIN LATERAL (
				SELECT (SELECT count(*) FROM answer_sets s JOIN raters r ON r.id = s.rater_id
				        WHERE s.item_id = i.id AND r.kind = 'human') AS humans,
				       (SELECT jsonb_object_agg(v.key, v.vals) FROM (
				            SELECT l.rubric_item_key AS key, jsonb_agg(l.value) AS vals
				            FROM labels l JOIN raters r ON r.id = l.rater_id
				            WHERE l.item_id = i.id AND r.kind = 'human'
				            GROUP BY l.rubric_item_key) v) AS human) h
			WHERE i.project_id = $1
			ORDER BY i.id`, projectID, withRaters)
		if err != nil {
			return err
		}
		defer rows.Close()
		var it export.GoldItem
		for rows.Next() {
			var vals, human, ratings []byte
			var at *time.Time
			it = export.GoldItem{}
			if err := rows.Scan(&it.ItemID, &it.System, &vals, &it.Method, &it.DecidedBy, &at, &it.Note, &it.HumanRaters, &human, &ratings); err != nil {
				return err
			}
			if human != nil {
				if err := json.Unmarshal(human, &it.Human); err != nil {
					return fmt.Errorf("item %s answers: %w", it.ItemID, err)
				}
			}
			if at != nil {
				it.DecidedAt = *at
			}
			if vals != nil {
				if err := json.Unmarshal(vals, &it.Gold); err != nil {
					return fmt.Errorf("item %s gold: %w", it.ItemID, err)
				}
			}
			if ratings != nil {
				if err := json.Unmarshal(ratings, &it.Ratings); err != nil {
					return fmt.Errorf("item %s ratings: %w", it.ItemID, err)
				}
			}
			if err := emit(&it); err != nil {
				return emitError{err}
			}
			n++
		}
		return rows.Err()
	})
	return n, exportErr(err, "export gold")
}

// emitError carries an error of the caller's emit out of a transaction,
// so that it is returned as it is.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }

// ExportEvent is one export, for the audit log.
type ExportEvent struct {
	ActorID    *int64 // nil from the command line
	ProjectID  int64
	Dataset    export.Dataset
	Format     export.Format
	Rows       int
	WithRaters bool
	// Which and Soft are the dataset export's selection and soft labels.
	Which export.Which
	Soft  bool
	Via   string // web or cli
	// Err says why the export stopped before its end; "" when complete.
	Err string
}

// RecordExport writes an export to the audit log, after it streamed: what
// was exported, in which format, how many rows, and whether it completed.
func (db *DB) RecordExport(ctx context.Context, e ExportEvent) error {
	details := map[string]string{"format": string(e.Format), "rows": strconv.Itoa(e.Rows), "via": e.Via,
		"complete": strconv.FormatBool(e.Err == "")}
	if e.WithRaters {
		details["with_raters"] = "true"
	}
	if e.Which != "" {
		details["which"] = string(e.Which)
	}
	if e.Soft {
		details["soft"] = "true"
	}
	if e.Err != "" {
		details["error"] = e.Err
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		return audit(ctx, tx, attune.AuditEvent{ActorID: e.ActorID, Action: "export." + strings.ReplaceAll(string(e.Dataset), "-", "_"),
			ProjectID: &e.ProjectID, Subject: string(e.Dataset) + "." + string(e.Format), Details: details})
	})
	return mapErr(err, "record export", "")
}
