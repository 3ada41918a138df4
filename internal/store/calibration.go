package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
)

// CalibrationPolicy returns the project's calibration rules.
func (db *DB) CalibrationPolicy(ctx context.Context, projectID int64) (calibration.Policy, error) {
	var p calibration.Policy
	err := db.pool.QueryRow(ctx, `SELECT calibration_qualify, calibration_every, calibration_pass FROM projects WHERE id = $1`,
		projectID).Scan(&p.Qualify, &p.Every, &p.PassPercent)
	return p, mapErr(err, "calibration policy", "")
}

// SetCalibrationPolicy changes the project's calibration rules, checked by
// package calibration.
func (db *DB) SetCalibrationPolicy(ctx context.Context, actorID *int64, projectID int64, p calibration.Policy) error {
	if err := p.Check(); err != nil {
		return attune.Invalid("calibration", err.Error())
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var old calibration.Policy
		if err := tx.QueryRow(ctx, `SELECT calibration_qualify, calibration_every, calibration_pass FROM projects WHERE id = $1 FOR UPDATE`,
			projectID).Scan(&old.Qualify, &old.Every, &old.PassPercent); err != nil {
			return err
		}
		if old == p {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE projects SET calibration_qualify = $2, calibration_every = $3, calibration_pass = $4, updated_at = now()
			WHERE id = $1`, projectID, p.Qualify, p.Every, p.PassPercent); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "calibration.set_policy", ProjectID: &projectID,
			Details: map[string]string{"qualify": fmt.Sprint(p.Qualify), "every": fmt.Sprint(p.Every), "pass": fmt.Sprint(p.PassPercent)}})
	})
	return mapErr(err, "set calibration policy", "")
}

// CalibrationItem is one item of a project's calibration set.
type CalibrationItem struct {
	ItemID   int64
	SourceID string
	// Gold is the item's gold now, by rubric item key.
	Gold map[string]string
	// Explanations are the lead's, by rubric item key.
	Explanations map[string]string
	AddedBy      string
	AddedAt      time.Time
	// Answered counts the calibration answers given to it; Passed those
	// that passed.
	Answered, Passed int
}

// ErrNoCompleteGold refuses to promote an item whose gold does not cover
// every rubric item: a calibration item is held against all of them.
var ErrNoCompleteGold = attune.Invalid("item", "this item has no gold for every rubric item yet; settle or adjudicate its gold first")

// AddCalibration promotes an item of the project (named by its dataset id)
// to the calibration set, or changes its explanations when it is there
// already. The item must have gold on every rubric item of the project's
// rubric version. Explanations are checked by the caller
// (calibration.CheckExplanations). It returns the item's id.
func (db *DB) AddCalibration(ctx context.Context, actorID *int64, projectID int64, sourceID string, explanations map[string]string) (int64, error) {
	body, err := json.Marshal(nonNil(explanations))
	if err != nil {
		return 0, fmt.Errorf("store: add calibration: %w", err)
	}
	var itemID int64
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		var complete bool
		err := tx.QueryRow(ctx, `
			SELECT i.id,
			       (SELECT count(*) FROM gold_labels g WHERE g.item_id = i.id AND g.rubric_version_id = p.rubric_version_id)
			       = (SELECT count(*) FROM rubric_items ri WHERE ri.rubric_version_id = p.rubric_version_id)
			FROM items i JOIN projects p ON p.id = i.project_id
			WHERE i.project_id = $1 AND i.source_id = $2`, projectID, sourceID).Scan(&itemID, &complete)
		if errors.Is(err, pgx.ErrNoRows) {
			return attune.Invalid("item", fmt.Sprintf("this project has no item %q", sourceID))
		}
		if err != nil {
			return err
		}
		if !complete {
			return ErrNoCompleteGold
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO calibration_items (item_id, project_id, explanations, added_by) VALUES ($1, $2, $3, $4)
			ON CONFLICT (item_id) DO UPDATE SET explanations = EXCLUDED.explanations`, itemID, projectID, body, actorID); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "calibration.add", ProjectID: &projectID, Subject: sourceID})
	})
	return itemID, mapErr(err, "add calibration item", "")
}

// RemoveCalibration takes an item (by its dataset id) out of the project's
// calibration set. Answers already given to it are kept: they stay in
// their people's records. It returns attune.ErrNotFound when the project
// has no such item and attune.ErrConflict when the item is not in the set.
func (db *DB) RemoveCalibration(ctx context.Context, actorID *int64, projectID int64, sourceID string) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var exists, removed bool
		err := tx.QueryRow(ctx, `
			WITH target AS (SELECT id FROM items WHERE project_id = $1 AND source_id = $2),
			removed AS (DELETE FROM calibration_items k USING target WHERE k.item_id = target.id AND k.project_id = $1 RETURNING k.item_id)
			SELECT EXISTS (SELECT 1 FROM target), EXISTS (SELECT 1 FROM removed)`, projectID, sourceID).Scan(&exists, &removed)
		switch {
		case err != nil:
			return err
		case !exists:
			return attune.NotFound(fmt.Sprintf("this project has no item %q", sourceID))
		case !removed:
			return attune.Conflict(fmt.Sprintf("item %q is not in this project's calibration set", sourceID))
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "calibration.remove", ProjectID: &projectID, Subject: sourceID})
	})
	return mapErr(err, "remove calibration item", "")
}

// ListCalibration returns the project's calibration set in dataset id
// order, with each item's gold and how it has fared.
func (db *DB) ListCalibration(ctx context.Context, projectID int64) ([]CalibrationItem, error) {
	return db.listCalibration(ctx, projectID, make([]any, 2), nil)
}

// CalibrationPage is one page of the project's calibration set in
// ListCalibration's order: at most limit (1 to MaxSearchPage) after the
// page whose cursor is cursor ("" for the first), and the next page's
// cursor ("" on the last), by keyset.
func (db *DB) CalibrationPage(ctx context.Context, projectID int64, cursor string, limit int) ([]CalibrationItem, string, error) {
	return keysetList(cursor, "calibration", 1, limit,
		func(after []any, n int) ([]CalibrationItem, error) {
			return db.listCalibration(ctx, projectID, after, &n)
		},
		func(c CalibrationItem) (int64, []string) { return c.ItemID, []string{c.SourceID} })
}

// listCalibration lists the set after the row after (afterRow's
// arguments), at most limit (nil: all).
func (db *DB) listCalibration(ctx context.Context, projectID int64, after []any, limit *int) ([]CalibrationItem, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT k.item_id, i.source_id,
		       coalesce((SELECT jsonb_object_agg(g.rubric_item_key, g.value) FROM gold_labels g WHERE g.item_id = k.item_id), '{}'),
		       k.explanations, coalesce(nullif(btrim(u.name), ''), u.email, ''), k.added_at,
		       (SELECT count(*) FROM calibration_answers c WHERE c.item_id = k.item_id),
		       (SELECT count(*) FROM calibration_answers c WHERE c.item_id = k.item_id AND c.passed)
		FROM calibration_items k JOIN items i ON i.id = k.item_id LEFT JOIN users u ON u.id = k.added_by
		WHERE k.project_id = $1 AND ($3::bigint IS NULL OR (i.source_id, k.item_id) > ($2, $3))
		ORDER BY i.source_id, k.item_id LIMIT $4`, append(append([]any{projectID}, after...), limit)...)
	if err != nil {
		return nil, mapErr(err, "list calibration", "")
	}
	defer rows.Close()
	var out []CalibrationItem
	for rows.Next() {
		var c CalibrationItem
		if err := rows.Scan(&c.ItemID, &c.SourceID, &c.Gold, &c.Explanations, &c.AddedBy, &c.AddedAt, &c.Answered, &c.Passed); err != nil {
			return nil, mapErr(err, "list calibration", "")
		}
		out = append(out, c)
	}
	return out, mapErr(rows.Err(), "list calibration", "")
}

// ErrQueuePaused is the claim's answer to an annotator whose queue a lead
// paused: a conflict that says why.
func ErrQueuePaused(why string) error {
	msg := "a lead paused your work in this project"
	if why != "" {
		msg += " (" + why + ")"
	}
	return attune.Conflict(msg + "; nothing new is handed to you until they resume it")
}

// ErrNotQualified is the claim's answer to an annotator who still has to
// qualify when no calibration item is left for them: a conflict. Having
// answered some in this attempt, they failed (calibration.QualificationFailed)
// and only a lead can let them try again; having answered none, the
// project's set is empty for them.
func ErrNotQualified(answered, qualify int) error {
	if answered > 0 {
		return attune.Conflict(calibration.NotQualified)
	}
	return attune.Conflict(fmt.Sprintf("this project asks you to pass %d practice items before its real items, "+
		"and has none for you yet; a lead of the project can add some", qualify))
}

// CalibrationKey is what a calibration item's answers are graded with:
// the item's gold now, the lead's explanations and the project's pass
// mark.
type CalibrationKey struct {
	Gold         map[string]string
	Explanations map[string]string
	PassPercent  int
}

// calibrationKeyColumns read, beside an assignment a, the key of its
// calibration item: all NULL for a real item. An item taken out of the set
// after it was served keeps its gold, without explanations.
const calibrationKeyColumns = `
	CASE WHEN a.calibration THEN coalesce((SELECT jsonb_object_agg(g.rubric_item_key, g.value) FROM gold_labels g WHERE g.item_id = a.item_id), '{}') END,
	CASE WHEN a.calibration THEN coalesce((SELECT k.explanations FROM calibration_items k WHERE k.item_id = a.item_id), '{}') END,
	CASE WHEN a.calibration THEN (SELECT p.calibration_pass FROM projects p WHERE p.id = a.project_id) END`

func scanKeyedAssignment(row pgx.Row) (*attune.Assignment, *CalibrationKey, error) {
	var a attune.Assignment
	var gold, explanations map[string]string
	var pass *int
	err := row.Scan(&a.ID, &a.ProjectID, &a.ItemID, &a.RaterID, &a.State, &a.AssignedAt, &a.LeaseExpiresAt, &a.Calibration,
		&gold, &explanations, &pass)
	if err != nil || !a.Calibration {
		return &a, nil, err
	}
	return &a, &CalibrationKey{Gold: gold, Explanations: explanations, PassPercent: *pass}, nil
}

// FindAssignmentKey is FindAssignment with the key of its calibration item
// (nil for a real item).
func (db *DB) FindAssignmentKey(ctx context.Context, id, userID int64) (*attune.Assignment, *CalibrationKey, error) {
	a, key, err := scanKeyedAssignment(db.pool.QueryRow(ctx, `SELECT `+assignmentColumns+`, `+calibrationKeyColumns+`
		FROM assignments a JOIN raters r ON r.id = a.rater_id WHERE a.id = $1 AND r.user_id = $2`, id, userID))
	if err != nil {
		return nil, nil, mapErr(err, "find assignment", "")
	}
	return a, key, nil
}

// CalibrationAnswer is a person's answer to a calibration item, with what
// it was graded against and where the person stood when they gave it.
type CalibrationAnswer struct {
	ItemID       int64
	Answers      map[string]string
	Gold         map[string]string
	Explanations map[string]string
	Matched      int
	Compared     int
	Passed       bool
	PassPercent  int
	SubmittedAt  time.Time
	// PassedBefore counts the calibration items the person passed before
	// this one; Qualify is the project's qualification now.
	PassedBefore, Qualify int
}

// FindCalibrationAnswer returns a person's answer to a calibration item of
// the project in their latest attempt that has one, or attune.ErrNotFound
// when they gave none.
func (db *DB) FindCalibrationAnswer(ctx context.Context, projectID, itemID, userID int64) (*CalibrationAnswer, error) {
	c := &CalibrationAnswer{ItemID: itemID}
	err := db.pool.QueryRow(ctx, `
		SELECT c.answers, c.gold, coalesce(k.explanations, '{}'), c.matched, c.compared, c.passed, p.calibration_pass, c.submitted_at,
		       (SELECT count(*) FROM calibration_answers b WHERE b.project_id = c.project_id AND b.rater_id = c.rater_id AND b.passed
		        AND b.calibration_attempt = c.calibration_attempt AND (b.submitted_at, b.id) < (c.submitted_at, c.id)),
		       p.calibration_qualify
		FROM calibration_answers c JOIN raters r ON r.id = c.rater_id JOIN projects p ON p.id = c.project_id
		LEFT JOIN calibration_items k ON k.item_id = c.item_id
		WHERE c.project_id = $1 AND c.item_id = $2 AND r.user_id = $3
		ORDER BY c.calibration_attempt DESC LIMIT 1`, projectID, itemID, userID).
		Scan(&c.Answers, &c.Gold, &c.Explanations, &c.Matched, &c.Compared, &c.Passed, &c.PassPercent, &c.SubmittedAt, &c.PassedBefore, &c.Qualify)
	if err != nil {
		return nil, mapErr(err, "find calibration answer", "")
	}
	return c, nil
}

// SetQueuePaused pauses (or resumes) one annotator's queue in a project:
// while paused they are handed nothing new, and told why. What they hold
// already stays theirs. It returns attune.ErrNotFound when the user is not
// an annotator of the project.
func (db *DB) SetQueuePaused(ctx context.Context, actorID *int64, projectID, userID int64, paused bool, why string) error {
	if n := len([]rune(why)); n > 500 {
		return attune.Invalid("why", fmt.Sprintf("the reason is %d characters; at most 500", n))
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE project_members SET paused_at = CASE WHEN $3 THEN coalesce(paused_at, now()) END,
			paused_why = CASE WHEN $3 THEN $4 ELSE '' END
			WHERE project_id = $1 AND user_id = $2 AND role = 'annotator'`, projectID, userID, paused, why)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return attune.NotFound("this person is not an annotator of the project")
		}
		action := "member.resume_queue"
		if paused {
			action = "member.pause_queue"
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: action, ProjectID: &projectID, Subject: fmt.Sprint(userID),
			Details: map[string]string{"why": why}})
	})
	return mapErr(err, "pause queue", "")
}

// RaterCalibration is one rater's calibration answer sets in a project,
// oldest first, each with the gold it was graded against.
type RaterCalibration struct {
	RaterID int64
	UserID  int64 // the person's account; 0 for a judge or an imported rater
	Name    string
	Kind    string // human or judge
	Records []calibration.Record
}

// CalibrationHistory returns, for every rater with a calibration answer in
// the project, all of them in the order they were given (people first,
// then by rater id; a judge's are its sentinel answers, run by run). The
// whole history is read, whatever a report's dates: a drift chart needs
// the series from its start.
func (db *DB) CalibrationHistory(ctx context.Context, projectID int64) ([]RaterCalibration, error) {
	return db.calibrationHistory(ctx, projectID, 0)
}

// PersonCalibrationHistory is CalibrationHistory for one person: their
// history, or a RaterCalibration with no records when they have none.
func (db *DB) PersonCalibrationHistory(ctx context.Context, projectID, userID int64) (RaterCalibration, error) {
	h, err := db.calibrationHistory(ctx, projectID, userID)
	if err != nil || len(h) == 0 {
		return RaterCalibration{UserID: userID, Kind: "human"}, err
	}
	return h[0], nil
}

// calibrationHistory reads the project's calibration answers, of one
// person when userID is not 0.
func (db *DB) calibrationHistory(ctx context.Context, projectID, userID int64) ([]RaterCalibration, error) {
	// A judge's are its sentinel answers, one set per run and
	// calibration item (judge_sentinels), in the same shape.
	rows, err := db.pool.Query(ctx, `
		SELECT rater_id, user_id, name, kind, answers, gold, run_id, at, item_id FROM (
			SELECT c.rater_id, coalesce(r.user_id, 0) AS user_id, r.name, r.kind, c.answers, c.gold,
			       0::bigint AS run_id, c.submitted_at AS at, c.id AS seq, c.item_id
			FROM calibration_answers c JOIN raters r ON r.id = c.rater_id
			WHERE c.project_id = $1 AND ($2 = 0 OR r.user_id = $2)
			UNION ALL
			SELECT s.rater_id, 0, r.name, 'judge', s.answers, s.gold, s.run_id, s.answered_at, s.item_id, s.item_id
			FROM judge_sentinels s JOIN raters r ON r.id = s.rater_id
			WHERE s.project_id = $1 AND $2 = 0) h
		ORDER BY kind = 'judge', rater_id, run_id, at, seq`, projectID, userID)
	if err != nil {
		return nil, mapErr(err, "calibration history", "")
	}
	defer rows.Close()
	var out []RaterCalibration
	for rows.Next() {
		var (
			id, userID int64
			name, kind string
			rec        calibration.Record
		)
		if err := rows.Scan(&id, &userID, &name, &kind, &rec.Given, &rec.Gold, &rec.Run, &rec.At, &rec.Item); err != nil {
			return nil, fmt.Errorf("store: calibration history of project %d: %w", projectID, err)
		}
		if len(out) == 0 || out[len(out)-1].RaterID != id {
			out = append(out, RaterCalibration{RaterID: id, UserID: userID, Name: name, Kind: kind})
		}
		last := &out[len(out)-1]
		last.Records = append(last.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: calibration history of project %d: %w", projectID, err)
	}
	return out, nil
}
