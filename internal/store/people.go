package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
)

// Person is one annotator of a project as its leads see them: where they
// stand with qualification in their current attempt, how much real work
// they did, whether their queue is paused and whether their calibration
// answers drift.
type Person struct {
	UserID int64
	Email  string
	Name   string
	// Attempt is the person's current attempt at qualifying, and
	// Qualification what package calibration makes of it under the
	// project's policy.
	Attempt       calibration.Attempt
	Qualification calibration.Qualification
	// Submitted counts the real items they submitted (calibration answers
	// are not counted).
	Submitted int
	Paused    bool
	PausedWhy string
	// Calibration is their calibration record over every attempt (the
	// drift charts need the whole series), and Alert why a lead should
	// look at it ("" when nothing calls for a look).
	Calibration calibration.Summary
	Alert       string
}

// ListPeople returns the project's annotators, by email, each with their
// status (Person). Leads are not listed: they do not label.
func (db *DB) ListPeople(ctx context.Context, projectID int64) ([]Person, error) {
	return db.people(ctx, projectID, 0)
}

// FindPerson is ListPeople for one user, or attune.ErrNotFound when they
// are not an annotator of the project.
func (db *DB) FindPerson(ctx context.Context, projectID, userID int64) (Person, error) {
	ps, err := db.people(ctx, projectID, userID)
	if err != nil {
		return Person{}, err
	}
	if len(ps) == 0 {
		return Person{}, attune.NotFound("this person is not an annotator of the project")
	}
	return ps[0], nil
}

// people reads the project's annotators, only userID's when it is not 0.
func (db *DB) people(ctx context.Context, projectID, userID int64) ([]Person, error) {
	var rubricVersionID int64
	var pol calibration.Policy
	err := db.pool.QueryRow(ctx, `SELECT rubric_version_id, calibration_qualify, calibration_every, calibration_pass FROM projects WHERE id = $1`,
		projectID).Scan(&rubricVersionID, &pol.Qualify, &pol.Every, &pol.PassPercent)
	if err != nil {
		return nil, mapErr(err, "list people", "")
	}
	// Left counts the calibration items the claim could still serve in
	// this attempt (claimCalibration's rule): not given in it, and never
	// labelled for real.
	rows, err := db.pool.Query(ctx, `
		SELECT u.id, u.email, u.name, m.paused_at IS NOT NULL, m.paused_why, m.calibration_attempt,
		       (SELECT count(*) FROM calibration_answers ca WHERE ca.project_id = m.project_id AND ca.rater_id = r.id
		        AND ca.calibration_attempt = m.calibration_attempt),
		       (SELECT count(*) FROM calibration_answers ca WHERE ca.project_id = m.project_id AND ca.rater_id = r.id
		        AND ca.calibration_attempt = m.calibration_attempt AND ca.passed),
		       (SELECT count(*) FROM assignments a WHERE a.project_id = m.project_id AND a.rater_id = r.id AND a.state = 'active'
		        AND a.calibration AND a.calibration_attempt = m.calibration_attempt),
		       (SELECT count(*) FROM calibration_items k WHERE k.project_id = m.project_id
		        AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.project_id = m.project_id AND x.item_id = k.item_id AND x.rater_id = r.id
		                        AND (NOT x.calibration OR x.calibration_attempt = m.calibration_attempt))),
		       (SELECT count(*) FROM answer_sets s WHERE s.project_id = m.project_id AND s.rater_id = r.id)
		FROM project_members m JOIN users u ON u.id = m.user_id LEFT JOIN raters r ON r.user_id = m.user_id
		WHERE m.project_id = $1 AND m.role = 'annotator' AND ($2 = 0 OR m.user_id = $2)
		ORDER BY u.email, u.id`, projectID, userID)
	if err != nil {
		return nil, mapErr(err, "list people", "")
	}
	people, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Person, error) {
		var p Person
		a := &p.Attempt
		err := r.Scan(&p.UserID, &p.Email, &p.Name, &p.Paused, &p.PausedWhy, &a.Number, &a.Answered, &a.Passed, &a.Held, &a.Left, &p.Submitted)
		p.Qualification = pol.Qualification(*a)
		return p, err
	})
	if err != nil || len(people) == 0 {
		return people, mapErr(err, "list people", "")
	}
	def, err := db.FindRubricByID(ctx, rubricVersionID)
	if err != nil {
		return nil, err
	}
	history, err := db.calibrationHistory(ctx, projectID, userID)
	if err != nil {
		return nil, err
	}
	byUser := make(map[int64][]calibration.Record, len(history))
	for _, h := range history {
		if h.UserID != 0 {
			byUser[h.UserID] = h.Records
		}
	}
	for i := range people {
		p := &people[i]
		p.Calibration = calibration.Summarize(def, byUser[p.UserID])
		p.Alert = p.Calibration.Alert(pol.PassPercent)
	}
	return people, nil
}

// ErrStaleAttempt refuses a re-qualification asked for an attempt that is
// no longer the person's current one: someone re-qualified them already.
func ErrStaleAttempt(current, asked int) error {
	return attune.Conflict(fmt.Sprintf("this person is on attempt %d, not %d: they were re-qualified already; look again at where they stand",
		current, asked))
}

// Requalify starts a new attempt at qualifying for an annotator of the
// project: their calibration answers so far are kept for the record and
// the drift charts, but qualification counts the new attempt's only, so
// the project's calibration items are served to them again. Whatever they
// hold (a calibration item or a real one) is released, its slot going
// back to the pool. expectedAttempt is the attempt the caller saw: when
// it is no longer current the re-qualification is refused
// (ErrStaleAttempt, a conflict), so that two leads acting at once start
// one attempt, not two. It returns the new attempt's number, and
// attune.ErrNotFound when the user is not a member, attune.ErrInvalid
// when they are a lead or expectedAttempt is below 1. The membership is
// locked, the project too (so that no claim under way hands out an item
// of the old attempt), and the change and its audit entry
// (member.requalify) commit together.
func (db *DB) Requalify(ctx context.Context, actorID *int64, projectID, userID int64, expectedAttempt int) (int, error) {
	if expectedAttempt < 1 {
		return 0, attune.Invalid("attempt", "the attempt is counted from 1: give the person's current attempt")
	}
	var attempt int
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var role attune.MemberRole
		var email string
		// The membership first, as a submit locks it, then the project, as
		// a claim share-locks it: the same order, so neither waits for the
		// other in a circle.
		err := tx.QueryRow(ctx, `SELECT m.role, m.calibration_attempt, u.email FROM project_members m JOIN users u ON u.id = m.user_id
			WHERE m.project_id = $1 AND m.user_id = $2 FOR UPDATE OF m`, projectID, userID).Scan(&role, &attempt, &email)
		if errors.Is(err, pgx.ErrNoRows) {
			return attune.NotFound("this person is not a member of the project")
		}
		if err != nil {
			return err
		}
		if role != attune.MemberAnnotator {
			return attune.Invalid("member", "this person is a lead of the project, not an annotator: only annotators qualify")
		}
		if attempt != expectedAttempt {
			return ErrStaleAttempt(attempt, expectedAttempt)
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM projects WHERE id = $1 FOR NO KEY UPDATE`, projectID); err != nil {
			return err
		}
		attempt++
		if _, err := tx.Exec(ctx, `UPDATE project_members SET calibration_attempt = $3 WHERE project_id = $1 AND user_id = $2`,
			projectID, userID, attempt); err != nil {
			return err
		}
		// A calibration item holds no slot of its item's overlap: only a
		// real one gives its hold back.
		var released int
		if err := tx.QueryRow(ctx, `
			WITH released AS (
				UPDATE assignments a SET state = 'expired', finished_at = now()
				FROM raters r WHERE r.id = a.rater_id AND r.user_id = $2 AND a.project_id = $1 AND a.state = 'active'
				RETURNING a.item_id, a.calibration),
			freed AS (
				UPDATE item_counts c SET holds = c.holds - 1 FROM released
				WHERE c.item_id = released.item_id AND NOT released.calibration)
			SELECT count(*) FROM released`, projectID, userID).Scan(&released); err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "member.requalify", ProjectID: &projectID, Subject: email,
			Details: map[string]string{"user_id": strconv.FormatInt(userID, 10), "from_attempt": strconv.Itoa(attempt - 1),
				"attempt": strconv.Itoa(attempt), "released": strconv.Itoa(released)}})
	})
	if err != nil {
		return 0, mapErr(err, "requalify", "")
	}
	return attempt, nil
}
