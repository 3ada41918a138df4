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

const assignmentColumns = `a.id, a.project_id, a.item_id, a.rater_id, a.state, a.assigned_at, a.lease_expires_at`

func scanAssignment(row pgx.Row) (*attune.Assignment, error) {
	var a attune.Assignment
	err := row.Scan(&a.ID, &a.ProjectID, &a.ItemID, &a.RaterID, &a.State, &a.AssignedAt, &a.LeaseExpiresAt)
	return &a, err
}

// labeller is what the work queue needs to know about an annotator in a
// project: their rater, and the project's rules.
type labeller struct {
	raterID int64
	overlap int
	lease   time.Duration
	status  attune.ProjectStatus
}

// lockLabeller reads the annotator's standing in the project. Only
// annotator members get work. The project row is share-locked so that a
// concurrent pause or overlap change waits for claims under way.
func lockLabeller(ctx context.Context, tx pgx.Tx, projectID, userID int64) (labeller, error) {
	var l labeller
	var leaseSeconds int
	err := tx.QueryRow(ctx, `
		SELECT r.id, p.overlap, p.lease_seconds, p.status
		FROM projects p
		JOIN project_members m ON m.project_id = p.id AND m.user_id = $2 AND m.role = 'annotator'
		JOIN raters r ON r.user_id = m.user_id
		WHERE p.id = $1
		FOR SHARE OF p`, projectID, userID).Scan(&l.raterID, &l.overlap, &leaseSeconds, &l.status)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, attune.NotFound("you are not an annotator on this project")
	}
	l.lease = time.Duration(leaseSeconds) * time.Second
	return l, err
}

// requireAnnotator refuses a person who is not, at this moment, an
// annotator of the project: removed from it, or made one of its leads,
// after they took an assignment. The membership row is share-locked until
// the transaction ends, so that a removal under way waits for the work
// being stored (or the work for the removal). Every path that stores a
// person's labels, skips or drafts goes through it; it locks the member
// row before the assignment or answer set, the order RemoveMember takes.
func requireAnnotator(ctx context.Context, tx pgx.Tx, projectID, userID int64) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM project_members WHERE project_id = $1 AND user_id = $2 AND role = 'annotator' FOR SHARE`,
		projectID, userID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return attune.Forbidden("you are not an annotator on this project (any more); nothing was stored")
	}
	return err
}

// assignmentProject returns the project of one of the person's
// assignments, read without a lock so that requireAnnotator can lock the
// membership first.
func assignmentProject(ctx context.Context, tx pgx.Tx, assignmentID, userID int64) (int64, error) {
	var projectID int64
	err := tx.QueryRow(ctx, `SELECT a.project_id FROM assignments a JOIN raters r ON r.id = a.rater_id WHERE a.id = $1 AND r.user_id = $2`,
		assignmentID, userID).Scan(&projectID)
	if err != nil {
		return 0, err
	}
	return projectID, requireAnnotator(ctx, tx, projectID, userID)
}

// NextAssignment hands the annotator their next item in the project: the
// one they hold already (resuming where they stopped, lease renewed), or a
// new one they have never been given, preferring items nearest to
// completion, never letting more than the overlap hold or label an item.
// Items a lead took out of the pool are never handed out nor resumed.
// It returns attune.ErrNoWork when nothing is left for them and a
// conflict when the project is paused or archived.
//
// Safe under any number of concurrent callers on any number of replicas:
// candidate items are claimed with FOR NO KEY UPDATE SKIP LOCKED, and the claim
// re-checks capacity on the locked row.
func (db *DB) NextAssignment(ctx context.Context, projectID, userID int64) (*attune.Assignment, error) {
	var a *attune.Assignment
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		a, err = next(ctx, tx, projectID, userID)
		return err
	})
	if err != nil {
		return nil, mapErr(err, "next assignment", "")
	}
	return a, nil
}

func next(ctx context.Context, tx pgx.Tx, projectID, userID int64) (*attune.Assignment, error) {
	l, err := lockLabeller(ctx, tx, projectID, userID)
	if err != nil {
		return nil, err
	}
	if l.status != attune.ProjectActive {
		return nil, attune.Conflict(fmt.Sprintf("this project is %s: it hands out no work until a lead resumes it", l.status))
	}
	// An item a lead took out of the pool is not resumed either: the
	// annotator's hold on it ends here, and its slot with it.
	if _, err := tx.Exec(ctx, `
		WITH released AS (
			UPDATE assignments a SET state = 'expired', finished_at = now()
			FROM items i
			WHERE i.id = a.item_id AND a.project_id = $1 AND a.rater_id = $2 AND a.state = 'active' AND i.pulled_at IS NOT NULL
			RETURNING a.item_id)
		UPDATE items i SET holds = i.holds - 1 FROM released WHERE i.id = released.item_id`, projectID, l.raterID); err != nil {
		return nil, err
	}
	// Resume: the annotator's own open assignment, even past its lease,
	// since nobody reclaimed its slot yet.
	a, err := scanAssignment(tx.QueryRow(ctx, `
		UPDATE assignments a SET lease_expires_at = greatest(now(), assigned_at) + $3 * interval '1 second'
		WHERE a.id = (SELECT id FROM assignments WHERE project_id = $1 AND rater_id = $2 AND state = 'active'
		              ORDER BY assigned_at LIMIT 1 FOR UPDATE)
		RETURNING `+assignmentColumns, projectID, l.raterID, l.lease.Seconds()))
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if err := reclaimExpired(ctx, tx, projectID); err != nil {
		return nil, err
	}
	// First skip items other claimers hold locked; if that finds nothing
	// while open items exist, they are all being claimed right now: wait
	// for the locks instead of saying the queue is empty.
	//
	// NO KEY UPDATE, not UPDATE: a claim only changes an item's counts,
	// and the weaker lock lets a submission's foreign-key checks on the
	// item (its answer set and labels) go ahead instead of waiting behind
	// a claimer that may itself wait for that submission's items: a
	// deadlock in which PostgreSQL could end the submission.
	lock := "FOR NO KEY UPDATE SKIP LOCKED"
	for attempt := 0; attempt < 3; attempt++ {
		// Waiting while this transaction holds an item already (the one
		// just submitted) can deadlock with another claimer doing the
		// same. Under a savepoint the one PostgreSQL picks gives up this
		// wait, not its submission, and waits again.
		q, sp := tx, pgx.Tx(nil)
		if lock == "FOR NO KEY UPDATE" {
			var err error
			if sp, err = tx.Begin(ctx); err != nil {
				return nil, err
			}
			q = sp
		}
		var itemID int64
		err := q.QueryRow(ctx, `
			SELECT i.id FROM items i
			WHERE i.project_id = $1 AND i.done + i.holds < $3 AND i.pulled_at IS NULL
			  AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.item_id = i.id AND x.rater_id = $2)
			ORDER BY i.done + i.holds DESC, i.id
			LIMIT 1 `+lock, projectID, l.raterID, l.overlap).Scan(&itemID)
		if sp != nil {
			if isDeadlock(err) {
				if err := sp.Rollback(ctx); err != nil {
					return nil, err
				}
				continue
			}
			if cerr := sp.Commit(ctx); err == nil && cerr != nil { // the row locks stay with the transaction
				return nil, cerr
			}
		}
		if err == nil {
			if _, err := tx.Exec(ctx, `UPDATE items SET holds = holds + 1 WHERE id = $1`, itemID); err != nil {
				return nil, err
			}
			return scanAssignment(tx.QueryRow(ctx, `
				INSERT INTO assignments AS a (project_id, item_id, rater_id, lease_expires_at)
				VALUES ($1, $2, $3, now() + $4 * interval '1 second')
				RETURNING `+assignmentColumns, projectID, itemID, l.raterID, l.lease.Seconds()))
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		var open bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM items i WHERE i.project_id = $1 AND i.done + i.holds < $3 AND i.pulled_at IS NULL
			  AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.item_id = i.id AND x.rater_id = $2))`,
			projectID, l.raterID, l.overlap).Scan(&open); err != nil {
			return nil, err
		}
		if !open {
			break
		}
		lock = "FOR NO KEY UPDATE"
	}
	return nil, attune.ErrNoWork
}

// Queue is what an annotator's queue in a project holds right now, read
// without changing anything.
type Queue struct {
	// Held is the annotator's open assignment (even past its lease), or
	// nil.
	Held *attune.Assignment
	// Status is the project's status: only an active project hands out
	// work.
	Status attune.ProjectStatus
	// Open is true when some item could still be given to the annotator:
	// one they were never given that has fewer labels and holds than the
	// overlap. Lapsed leases not yet reclaimed count as holds, so it may
	// say false where a claim would reclaim one and succeed.
	Open bool
}

// PeekQueue reads the annotator's queue in a project without claiming,
// renewing or reclaiming anything: what a GET may do. It returns
// attune.ErrNotFound when the user is not an annotator of the project.
func (db *DB) PeekQueue(ctx context.Context, projectID, userID int64) (Queue, error) {
	var q Queue
	var held *int64
	err := db.pool.QueryRow(ctx, `
		WITH me AS (
			SELECT r.id, p.overlap, p.status FROM projects p
			JOIN project_members m ON m.project_id = p.id AND m.user_id = $2 AND m.role = 'annotator'
			JOIN raters r ON r.user_id = m.user_id
			WHERE p.id = $1)
		SELECT me.status,
		       (SELECT a.id FROM assignments a WHERE a.project_id = $1 AND a.rater_id = me.id AND a.state = 'active'
		        ORDER BY a.assigned_at LIMIT 1),
		       EXISTS (SELECT 1 FROM items i WHERE i.project_id = $1 AND i.done + i.holds < me.overlap
		               AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.item_id = i.id AND x.rater_id = me.id))
		FROM me`, projectID, userID).Scan(&q.Status, &held, &q.Open)
	if errors.Is(err, pgx.ErrNoRows) {
		return Queue{}, attune.NotFound("you are not an annotator on this project")
	}
	if err != nil {
		return Queue{}, mapErr(err, "peek queue", "")
	}
	if held != nil {
		a, err := scanAssignment(db.pool.QueryRow(ctx, `SELECT `+assignmentColumns+` FROM assignments a WHERE a.id = $1`, *held))
		if err != nil {
			return Queue{}, mapErr(err, "peek queue", "")
		}
		q.Held = a
	}
	return q, nil
}

// reclaimExpired ends the lapsed leases of a project so their items go back
// to the pool. Concurrent reclaimers do not double-count: each row is
// updated once, and a second updater re-checks the state.
func reclaimExpired(ctx context.Context, tx pgx.Tx, projectID int64) error {
	_, err := tx.Exec(ctx, `
		WITH lapsed AS (
			UPDATE assignments SET state = 'expired', finished_at = now()
			WHERE project_id = $1 AND state = 'active' AND lease_expires_at < now()
			RETURNING item_id),
		per_item AS (SELECT item_id, count(*) AS n FROM lapsed GROUP BY item_id)
		UPDATE items i SET holds = i.holds - per_item.n FROM per_item WHERE i.id = per_item.item_id`, projectID)
	return err
}

// FindAssignment returns one of the user's assignments.
func (db *DB) FindAssignment(ctx context.Context, id, userID int64) (*attune.Assignment, error) {
	a, err := scanAssignment(db.pool.QueryRow(ctx, `SELECT `+assignmentColumns+` FROM assignments a JOIN raters r ON r.id = a.rater_id
		WHERE a.id = $1 AND r.user_id = $2`, id, userID))
	return a, mapErr(err, "find assignment", "")
}

// FindItem returns an item of a project.
func (db *DB) FindItem(ctx context.Context, projectID, itemID int64) (*attune.Item, error) {
	var it attune.Item
	var msgs []byte
	err := db.pool.QueryRow(ctx, `SELECT id, project_id, source_id, kind, messages, meta, turns, sha256, sensitive FROM items WHERE id = $1 AND project_id = $2`,
		itemID, projectID).Scan(&it.ID, &it.ProjectID, &it.SourceID, &it.Kind, &msgs, &it.Meta, &it.Turns, &it.SHA256, &it.Sensitive)
	if err != nil {
		return nil, mapErr(err, "find item", "")
	}
	if err := json.Unmarshal(msgs, &it.Messages); err != nil {
		return nil, fmt.Errorf("store: item %d messages: %w", itemID, err)
	}
	return &it, nil
}

// Submission is one annotator's answers for the item of an assignment.
type Submission struct {
	AssignmentID int64
	UserID       int64
	Answers      map[string]string // rubric item key → value, already validated
	Rationales   map[string]string // rubric item key → rationale (optional)
	Rationale    string            // about the dialogue as a whole
	ActiveMS     int64             // time actively spent on the item
	ClaimNext    bool              // also claim the next item in the same transaction
	// NoteRequired says the item is behind a content note: the answers
	// are refused (ErrNoteUnopened) unless the person opened it.
	NoteRequired bool
}

// SubmitResult says what a submission did.
type SubmitResult struct {
	AnswerSetID int64
	Created     bool // false when the assignment had been submitted already
	// Stored are the answers stored by the first submission, as they are
	// now, when Created is false (nil otherwise): the caller tells a retry
	// of the same answers from different ones, which are never stored.
	Stored  *AnswerSet
	Next    *attune.Assignment // the next assignment, when asked for and there is one
	NextErr error              // why there is no next one (attune.ErrNoWork, a paused project)
}

// SubmitLabels stores the answers of an assignment in one transaction:
// the answer set and one label per answer, the assignment closed, the
// item's counters moved, and — with ClaimNext — the next item claimed.
// Submitting an assignment again (a double click, a second tab, a retry)
// changes nothing and returns the answer set stored the first time. A
// submission after the lease ran out is accepted while the item still has
// room; otherwise it is an attune.ErrConflict. So is a submission for an
// item a lead took out of the pool since it was handed out. Someone who is
// no longer an annotator of the project gets attune.ErrForbidden and
// nothing is stored, even with an assignment taken before.
func (db *DB) SubmitLabels(ctx context.Context, s Submission) (SubmitResult, error) {
	var res SubmitResult
	if err := attune.CheckActiveMS("active_ms", s.ActiveMS); err != nil {
		return res, err
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := assignmentProject(ctx, tx, s.AssignmentID, s.UserID); err != nil {
			return err
		}
		var state string
		var itemID, projectID, raterID, rvID int64
		var existing *int64
		var overlap int
		var pulled bool
		err := tx.QueryRow(ctx, `
			SELECT a.state, a.item_id, a.project_id, a.rater_id, p.rubric_version_id, a.answer_set_id, p.overlap, i.pulled_at IS NOT NULL
			FROM assignments a JOIN raters r ON r.id = a.rater_id JOIN projects p ON p.id = a.project_id JOIN items i ON i.id = a.item_id
			WHERE a.id = $1 AND r.user_id = $2
			FOR UPDATE OF a`, s.AssignmentID, s.UserID).Scan(&state, &itemID, &projectID, &raterID, &rvID, &existing, &overlap, &pulled)
		if err != nil {
			return err
		}
		if s.NoteRequired {
			if err := checkNoteOpened(ctx, tx, raterID, itemID); err != nil {
				return err
			}
		}
		switch {
		case state == "submitted":
			res.AnswerSetID = *existing
			stored, err := readAnswerSet(ctx, tx, *existing)
			if err != nil {
				return err
			}
			res.Stored = stored
			return claimNext(ctx, tx, s, projectID, &res)
		case pulled:
			return attune.Conflict("a lead took this item out of the pool; your answers were not stored")
		}
		switch state {
		case "skipped":
			return attune.Conflict("you skipped this item; it can no longer be labelled from this assignment")
		case "expired":
			// The lease lapsed and was reclaimed: take the slot back if the
			// item still has room.
			tag, err := tx.Exec(ctx, `UPDATE items SET holds = holds + 1 WHERE id = $1 AND done + holds < $2`, itemID, overlap)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return attune.Conflict("your time on this item ran out and it was given to someone else; your answers were not stored")
			}
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, rationale, active_ms)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			projectID, itemID, raterID, rvID, s.Rationale, s.ActiveMS).Scan(&res.AnswerSetID); err != nil {
			return err
		}
		if err := insertLabels(ctx, tx, res.AnswerSetID, itemID, raterID, rvID, s.Answers, s.Rationales); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE assignments SET state = 'submitted', finished_at = now(), answer_set_id = $2 WHERE id = $1`,
			s.AssignmentID, res.AnswerSetID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE items SET done = done + 1, holds = holds - 1 WHERE id = $1`, itemID); err != nil {
			return err
		}
		res.Created = true
		return claimNext(ctx, tx, s, projectID, &res)
	})
	if err != nil {
		return SubmitResult{}, mapErr(err, "submit labels", "")
	}
	return res, nil
}

func claimNext(ctx context.Context, tx pgx.Tx, s Submission, projectID int64, res *SubmitResult) error {
	if !s.ClaimNext {
		return nil
	}
	a, err := next(ctx, tx, projectID, s.UserID)
	switch {
	case err == nil:
		res.Next = a
	case errors.Is(err, attune.ErrNoWork) || errors.Is(err, attune.ErrConflict):
		// No next item is an answer, not a failure of the submission.
		res.NextErr = err
	default:
		return err
	}
	return nil
}

func insertLabels(ctx context.Context, tx pgx.Tx, answerSetID, itemID, raterID, rvID int64, answers, rationales map[string]string) error {
	keys := make([]string, 0, len(answers))
	values := make([]string, 0, len(answers))
	notes := make([]string, 0, len(answers))
	for k, v := range answers {
		keys = append(keys, k)
		values = append(values, v)
		notes = append(notes, rationales[k])
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO labels (answer_set_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale)
		SELECT $1, $2, $3, $4, k, v, n FROM unnest($5::text[], $6::text[], $7::text[]) AS t(k, v, n)`,
		answerSetID, itemID, raterID, rvID, keys, values, notes)
	return err
}

// Skip gives an assignment back without labels, optionally flagging the
// item (broken, off-topic, distressing, other) with a note for the leads.
// The annotator is never given the item again. Someone who is no longer an
// annotator of the project gets attune.ErrForbidden.
func (db *DB) Skip(ctx context.Context, assignmentID, userID int64, flag, note string) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := assignmentProject(ctx, tx, assignmentID, userID); err != nil {
			return err
		}
		var itemID int64
		var state string
		err := tx.QueryRow(ctx, `SELECT a.item_id, a.state FROM assignments a JOIN raters r ON r.id = a.rater_id
			WHERE a.id = $1 AND r.user_id = $2 FOR UPDATE OF a`, assignmentID, userID).Scan(&itemID, &state)
		if err != nil {
			return err
		}
		switch state {
		case "skipped":
			return nil
		case "submitted":
			return attune.Conflict("this item is labelled already; edit your labels instead of skipping it")
		}
		var flagArg *string
		if flag != "" {
			flagArg = &flag
		}
		if _, err := tx.Exec(ctx, `UPDATE assignments SET state = 'skipped', finished_at = now(), flag = $2, flag_note = $3 WHERE id = $1`,
			assignmentID, flagArg, note); err != nil {
			return err
		}
		if state == "active" {
			_, err = tx.Exec(ctx, `UPDATE items SET holds = holds - 1 WHERE id = $1`, itemID)
		}
		return err
	})
	return mapErr(err, "skip", "")
}

// LabelEdit replaces a rater's own answers for an item they submitted.
type LabelEdit struct {
	ProjectID  int64
	ItemID     int64
	UserID     int64
	Answers    map[string]string // already validated
	Rationales map[string]string
	Rationale  string
	ActiveMS   int64 // further time spent, added to the total
	// NoteRequired says the item is behind a content note: the edit is
	// refused (ErrNoteUnopened) unless the person opened it.
	NoteRequired bool
}

// UpdateLabels edits a person's submitted answers for an item. Labels that
// change keep their earlier value in the history; answers removed from the
// set are deleted. It returns the answer set's id and new revision, or
// attune.ErrNotFound when the person has not submitted that item, and
// attune.ErrForbidden when they are no longer an annotator of the project.
func (db *DB) UpdateLabels(ctx context.Context, e LabelEdit) (answerSetID int64, revision int, err error) {
	if err := attune.CheckActiveMS("active_ms", e.ActiveMS); err != nil {
		return 0, 0, err
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if err := requireAnnotator(ctx, tx, e.ProjectID, e.UserID); err != nil {
			return err
		}
		var raterID, rvID int64
		err := tx.QueryRow(ctx, `
			SELECT s.id, s.rater_id, s.rubric_version_id FROM answer_sets s JOIN raters r ON r.id = s.rater_id
			WHERE s.project_id = $1 AND s.item_id = $2 AND r.user_id = $3 FOR UPDATE OF s`,
			e.ProjectID, e.ItemID, e.UserID).Scan(&answerSetID, &raterID, &rvID)
		if err != nil {
			return err
		}
		if e.NoteRequired {
			if err := checkNoteOpened(ctx, tx, raterID, e.ItemID); err != nil {
				return err
			}
		}
		keys := make([]string, 0, len(e.Answers))
		values := make([]string, 0, len(e.Answers))
		notes := make([]string, 0, len(e.Answers))
		for k, v := range e.Answers {
			keys, values, notes = append(keys, k), append(values, v), append(notes, e.Rationales[k])
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO labels (answer_set_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale)
			SELECT $1, $2, $3, $4, k, v, n FROM unnest($5::text[], $6::text[], $7::text[]) AS t(k, v, n)
			ON CONFLICT (answer_set_id, rubric_item_key) DO UPDATE SET value = EXCLUDED.value, rationale = EXCLUDED.rationale
			WHERE labels.value IS DISTINCT FROM EXCLUDED.value OR labels.rationale IS DISTINCT FROM EXCLUDED.rationale`,
			answerSetID, e.ItemID, raterID, rvID, keys, values, notes); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM labels WHERE answer_set_id = $1 AND NOT (rubric_item_key = ANY($2))`, answerSetID, keys); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `UPDATE answer_sets SET rationale = $2, active_ms = active_ms + $3, revision = revision + 1, updated_at = now()
			WHERE id = $1 RETURNING revision`, answerSetID, e.Rationale, e.ActiveMS).Scan(&revision)
	})
	if err != nil {
		return 0, 0, mapErr(err, "update labels", "")
	}
	return answerSetID, revision, nil
}

// AnswerSet is one rater's stored answers for an item.
type AnswerSet struct {
	ID         int64
	ItemID     int64
	Answers    map[string]string
	Rationales map[string]string
	Rationale  string
	ActiveMS   int64
	Revision   int
	Submitted  time.Time
}

// readAnswerSet reads one answer set with its labels; notes that are
// empty are left out of Rationales.
func readAnswerSet(ctx context.Context, tx pgx.Tx, id int64) (*AnswerSet, error) {
	s := &AnswerSet{ID: id}
	err := tx.QueryRow(ctx, `
		SELECT s.item_id, s.rationale, s.active_ms, s.revision, s.submitted_at,
		       coalesce(jsonb_object_agg(l.rubric_item_key, l.value) FILTER (WHERE l.id IS NOT NULL), '{}'),
		       coalesce(jsonb_object_agg(l.rubric_item_key, l.rationale) FILTER (WHERE l.rationale <> ''), '{}')
		FROM answer_sets s LEFT JOIN labels l ON l.answer_set_id = s.id
		WHERE s.id = $1 GROUP BY s.id`, id).Scan(&s.ItemID, &s.Rationale, &s.ActiveMS, &s.Revision, &s.Submitted, &s.Answers, &s.Rationales)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// FindOwnAnswerSet returns the answers a person submitted for an item.
func (db *DB) FindOwnAnswerSet(ctx context.Context, projectID, itemID, userID int64) (*AnswerSet, error) {
	s := &AnswerSet{Answers: map[string]string{}, Rationales: map[string]string{}}
	err := db.pool.QueryRow(ctx, `
		SELECT s.id, s.item_id, s.rationale, s.active_ms, s.revision, s.submitted_at
		FROM answer_sets s JOIN raters r ON r.id = s.rater_id
		WHERE s.project_id = $1 AND s.item_id = $2 AND r.user_id = $3`, projectID, itemID, userID).
		Scan(&s.ID, &s.ItemID, &s.Rationale, &s.ActiveMS, &s.Revision, &s.Submitted)
	if err != nil {
		return nil, mapErr(err, "find answers", "")
	}
	rows, err := db.pool.Query(ctx, `SELECT rubric_item_key, value, rationale FROM labels WHERE answer_set_id = $1`, s.ID)
	if err != nil {
		return nil, mapErr(err, "find answers", "")
	}
	defer rows.Close()
	for rows.Next() {
		var k, v, n string
		if err := rows.Scan(&k, &v, &n); err != nil {
			return nil, mapErr(err, "find answers", "")
		}
		s.Answers[k] = v
		if n != "" {
			s.Rationales[k] = n
		}
	}
	return s, mapErr(rows.Err(), "find answers", "")
}
