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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

const assignmentColumns = `a.id, a.project_id, a.item_id, a.rater_id, a.state, a.assigned_at, a.lease_expires_at, a.calibration`

func scanAssignment(row pgx.Row) (*attune.Assignment, error) {
	var a attune.Assignment
	err := row.Scan(&a.ID, &a.ProjectID, &a.ItemID, &a.RaterID, &a.State, &a.AssignedAt, &a.LeaseExpiresAt, &a.Calibration)
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

// lockSubmitted is requireAnnotator and the lock on the assignment being
// submitted, in one statement: the person's membership of the
// assignment's project share-locked first, then the assignment itself
// (the order of the locking clauses, which is the order RemoveMember
// takes), with what the submission needs to know of it. No row means the
// assignment is not the person's, or they are no longer an annotator of
// its project; whyNotSubmittable tells the two apart.
const lockSubmitted = `
	SELECT a.state, a.item_id, a.project_id, a.answer_set_id, c.pulled,
	       EXISTS (SELECT 1 FROM content_notes_opened o WHERE o.rater_id = a.rater_id AND o.item_id = a.item_id),
	       a.calibration
	FROM project_members m
	JOIN assignments a ON a.project_id = m.project_id AND a.id = $1
	JOIN raters r ON r.id = a.rater_id AND r.user_id = m.user_id
	JOIN item_counts c ON c.item_id = a.item_id
	WHERE m.user_id = $2 AND m.role = 'annotator'
	FOR SHARE OF m FOR UPDATE OF a`

// whyNotSubmittable says why lockSubmitted found no row: pgx.ErrNoRows
// when the assignment is not the person's, errNotAnnotatorNow when it is
// but they are no longer an annotator of its project.
func whyNotSubmittable(ctx context.Context, tx pgx.Tx, assignmentID, userID int64) error {
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM assignments a JOIN raters r ON r.id = a.rater_id WHERE a.id = $1 AND r.user_id = $2)`,
		assignmentID, userID).Scan(&mine); err != nil {
		return err
	}
	if !mine {
		return pgx.ErrNoRows
	}
	return errNotAnnotatorNow
}

var errNotAnnotatorNow = attune.Forbidden("you are not an annotator on this project (any more); nothing was stored")

// errNotLocked is lockSubmitted's empty answer, told apart by
// whyNotSubmittable once the batch is read.
var errNotLocked = errors.New("store: assignment not locked")

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
		b := &pgx.Batch{}
		b.Queue(genericPlans)
		queueClaim(b, projectID, userID)
		c := claim{userID: userID}
		err := func() error {
			br := tx.SendBatch(ctx, b)
			defer br.Close()
			if _, err := br.Exec(); err != nil {
				return err
			}
			return c.read(br)
		}()
		if err != nil {
			return err
		}
		a, err = c.finish(ctx, tx, projectID)
		return err
	})
	if err != nil {
		return nil, mapErr(err, "next assignment", "")
	}
	return a, nil
}

// genericPlans, first in the transactions of a submit and a claim, has
// PostgreSQL run their statements with the generic plan it keeps for each
// prepared statement instead of planning every execution afresh for its
// values (plan_cache_mode auto keeps choosing custom plans for these):
// planning was a quarter of the database's CPU under many annotators
// (perf, BenchmarkSaturationSQL), and these plans cannot gain from the
// values, since every predicate is an equality on a key or on the
// project of an index that starts with it. SET LOCAL ends with the
// transaction, so no other query of the connection is affected.
const genericPlans = `SET LOCAL plan_cache_mode = force_generic_plan`

// claimMe is the annotator ($2) of the project ($1) as a CTE, present only
// while the project hands out work; claimMine is their open assignment.
const (
	claimMe = `me AS (
		SELECT r.id, p.overlap, p.lease_seconds, p.calibration_every AS every, m.calibration_attempt AS attempt,
		       ` + claimQualifying + ` AS qualifying FROM projects p
		JOIN project_members m ON m.project_id = p.id AND m.user_id = $2 AND m.role = 'annotator'
		JOIN raters r ON r.user_id = m.user_id
		WHERE p.id = $1 AND p.status = 'active' AND m.paused_at IS NULL)`
	// claimQualifying is calibration.Policy.Qualifying for the rater r
	// and membership m in the project p: fewer calibration items passed in
	// the current attempt than the project asks for.
	claimQualifying = `(p.calibration_qualify > 0 AND ` + claimPassed + ` < p.calibration_qualify)`
	// claimPassed and claimAnswered count the calibration answers (passed,
	// or all) of the rater r in the current attempt of membership m.
	claimPassed = `(SELECT count(*) FROM calibration_answers ca
		WHERE ca.project_id = p.id AND ca.rater_id = r.id AND ca.calibration_attempt = m.calibration_attempt AND ca.passed)`
	claimAnswered = `(SELECT count(*) FROM calibration_answers ca
		WHERE ca.project_id = p.id AND ca.rater_id = r.id AND ca.calibration_attempt = m.calibration_attempt)`
	claimMine = `(SELECT 1 FROM assignments a WHERE a.project_id = $1 AND a.rater_id = (SELECT id FROM me) AND a.state = 'active')`
	// claimOpen is an item the annotator could still be given: not taken
	// out of the pool by a lead, nor held back until a draw sends it
	// (store.DrawItems). Nobody who still has to qualify is given a real
	// item.
	//
	// OFFSET 0 keeps the "never given" check a lookup of the one
	// (rater, project, item) entry per candidate: without it PostgreSQL
	// may turn it into an anti-join whose inner side, planned while a
	// project's assignments were few (the generic plan lives as long as
	// the connection), walks every assignment the person ever had in the
	// project for every candidate item, the claim's largest cost under
	// many annotators (BenchmarkSaturationSQL, pg_stat_statements).
	claimOpen = `c.project_id = $1 AND NOT c.pulled AND NOT c.held AND c.filled < (SELECT overlap FROM me) AND NOT (SELECT qualifying FROM me)
		AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.project_id = $1 AND x.item_id = c.item_id AND x.rater_id = (SELECT id FROM me) OFFSET 0)`
)

// queueClaim adds to a batch the statements that give the annotator their
// next item, each seeing what the one before did: their standing, with
// the project share-locked so that a pause or overlap change waits for
// the claim; their holds on items a lead took out of the pool released;
// their open assignment resumed; lapsed leases reclaimed; an item
// claimed; and whether open items remained when none could be claimed
// without waiting (claim.finish then waits for them).
func queueClaim(b *pgx.Batch, projectID, userID int64) {
	b.Queue(`
		SELECT r.id, p.overlap, p.lease_seconds, p.status, m.paused_at IS NOT NULL, m.paused_why,
		       p.calibration_qualify, `+claimPassed+`, `+claimAnswered+`
		FROM projects p
		JOIN project_members m ON m.project_id = p.id AND m.user_id = $2 AND m.role = 'annotator'
		JOIN raters r ON r.user_id = m.user_id
		WHERE p.id = $1
		FOR SHARE OF p`, projectID, userID)
	// An item a lead took out of the pool is not resumed either: the
	// annotator's hold on it ends here, and its slot with it.
	b.Queue(`
		WITH `+claimMe+`,
		released AS (
			UPDATE assignments a SET state = 'expired', finished_at = now()
			FROM item_counts c
			WHERE c.item_id = a.item_id AND a.project_id = $1 AND a.rater_id = (SELECT id FROM me) AND a.state = 'active' AND c.pulled
			  AND NOT a.calibration
			RETURNING a.item_id)
		UPDATE item_counts c SET holds = c.holds - 1 FROM released WHERE c.item_id = released.item_id`, projectID, userID)
	// Resume: the annotator's own open assignment, even past its lease,
	// since nobody reclaimed its slot yet.
	b.Queue(`
		WITH `+claimMe+`
		UPDATE assignments a SET lease_expires_at = greatest(now(), assigned_at) + (SELECT lease_seconds FROM me) * interval '1 second'
		WHERE a.id = (SELECT id FROM assignments WHERE project_id = $1 AND rater_id = (SELECT id FROM me) AND state = 'active'
		              ORDER BY assigned_at LIMIT 1 FOR UPDATE)
		RETURNING `+assignmentColumns, projectID, userID)
	// Lapsed leases go back to the pool before a claim looks for room.
	// Concurrent reclaimers do not double-count: each row is updated once,
	// and a second updater re-checks the state.
	b.Queue(`
		WITH `+claimMe+`,
		lapsed AS (
			UPDATE assignments SET state = 'expired', finished_at = now()
			WHERE project_id = $1 AND state = 'active' AND lease_expires_at < now() AND NOT calibration
			  AND EXISTS (SELECT 1 FROM me) AND NOT EXISTS `+claimMine+`
			RETURNING item_id),
		per_item AS (SELECT item_id, count(*) AS n FROM lapsed GROUP BY item_id)
		UPDATE item_counts c SET holds = c.holds - per_item.n FROM per_item WHERE c.item_id = per_item.item_id`, projectID, userID)
	// Claim: skip items other claimers hold locked. NO KEY UPDATE, not
	// UPDATE: a claim only changes an item's counts, and the weaker lock
	// lets a submission's foreign-key checks go ahead instead of waiting
	// behind a claimer that may itself wait for that submission: a
	// deadlock in which PostgreSQL could end the submission.
	// A calibration item, when one is due (calibration.Policy.Due): the
	// real claim below then finds the annotator holding it.
	b.Queue(claimCalibration, projectID, userID)
	b.Queue(claimStatement("FOR NO KEY UPDATE SKIP LOCKED"), projectID, userID)
	b.Queue(`
		WITH `+claimMe+`
		SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM me) OR EXISTS `+claimMine+` THEN false
		       ELSE EXISTS (SELECT 1 FROM item_counts c WHERE `+claimOpen+`) END`, projectID, userID)
}

// claimCalibration gives the annotator a calibration item they were not
// given in their current attempt (nor ever labelled for real), when one is
// due: always while they qualify, else once they submitted every − 1 real
// items since they were last given one. It takes no slot of the item's
// overlap and touches no counts, so it locks nothing but its own new row;
// the unique assignment per person, item and attempt keeps two claims of
// the same person from taking one item twice.
const claimCalibration = `
	WITH ` + claimMe + `,
	last AS (SELECT max(x.assigned_at) AS at FROM assignments x
	         WHERE x.rater_id = (SELECT id FROM me) AND x.project_id = $1 AND x.calibration),
	due AS (
		SELECT (SELECT qualifying FROM me) OR ((SELECT every FROM me) > 0 AND (
			SELECT count(*) FROM (
				SELECT 1 FROM answer_sets s
				WHERE s.rater_id = (SELECT id FROM me) AND s.project_id = $1
				  AND s.submitted_at > coalesce((SELECT at FROM last), '-infinity')
				LIMIT greatest((SELECT every FROM me) - 1, 0)) real_since) >= (SELECT every FROM me) - 1) AS yes),
	pick AS (
		SELECT k.item_id FROM calibration_items k
		WHERE k.project_id = $1 AND (SELECT yes FROM due) AND NOT EXISTS ` + claimMine + `
		  AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.project_id = $1 AND x.item_id = k.item_id AND x.rater_id = (SELECT id FROM me)
		                  AND (NOT x.calibration OR x.calibration_attempt = (SELECT attempt FROM me)))
		ORDER BY random() LIMIT 1)
	INSERT INTO assignments AS a (project_id, item_id, rater_id, lease_expires_at, calibration, calibration_attempt)
	SELECT $1, pick.item_id, (SELECT id FROM me), now() + (SELECT lease_seconds FROM me) * interval '1 second', true,
	       (SELECT attempt FROM me) FROM pick
	ON CONFLICT DO NOTHING
	RETURNING ` + assignmentColumns

// claimStatement claims the annotator's next item, if they hold none,
// locking its counts with lock.
func claimStatement(lock string) string {
	return `
		WITH ` + claimMe + `,
		pick AS (
			SELECT c.item_id FROM item_counts c
			WHERE ` + claimOpen + ` AND NOT EXISTS ` + claimMine + `
			ORDER BY c.filled DESC, c.item_id
			LIMIT 1 ` + lock + `),
		held AS (UPDATE item_counts c SET holds = c.holds + 1 FROM pick WHERE c.item_id = pick.item_id RETURNING c.item_id)
		INSERT INTO assignments AS a (project_id, item_id, rater_id, lease_expires_at)
		SELECT $1, held.item_id, (SELECT id FROM me), now() + (SELECT lease_seconds FROM me) * interval '1 second' FROM held
		RETURNING ` + assignmentColumns
}

// claim is what the statements of queueClaim found.
type claim struct {
	userID   int64
	labeller labeller
	member   bool
	got      *attune.Assignment
	open     bool // nothing claimed without waiting, but open items remain
	// paused: a lead paused the annotator's queue, saying why.
	paused    bool
	pausedWhy string
	// qualify is the project's qualification; passed and answered the
	// calibration items the annotator passed and answered in their current
	// attempt, this submission included.
	qualify, passed, answered int
}

func (c *claim) read(br pgx.BatchResults) error {
	var leaseSeconds int
	err := br.QueryRow().Scan(&c.labeller.raterID, &c.labeller.overlap, &leaseSeconds, &c.labeller.status, &c.paused, &c.pausedWhy,
		&c.qualify, &c.passed, &c.answered)
	switch {
	case err == nil:
		c.member = true
		c.labeller.lease = time.Duration(leaseSeconds) * time.Second
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if _, err := br.Exec(); err != nil {
		return err
	}
	for i := range 3 { // resumed, then (after the reclaim) a calibration item or a real one claimed
		if i == 1 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		a, err := scanAssignment(br.QueryRow())
		switch {
		case err == nil:
			c.got = a
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
	}
	return br.QueryRow().Scan(&c.open)
}

// waits reports whether finish would wait for other claimers' locks: the
// annotator may be given work, nothing was claimed without waiting, and
// open items remain.
func (c *claim) waits() bool {
	return c.member && c.labeller.status == attune.ProjectActive && !c.paused && c.got == nil && c.open
}

// qualifying says whether the annotator still has to qualify
// (calibration.Policy.Qualifying).
func (c *claim) qualifying() bool { return c.qualify > 0 && c.passed < c.qualify }

// finish says what the claim came to. When every open item was locked by
// other claimers, it waits for their locks instead of saying the queue is
// empty.
func (c *claim) finish(ctx context.Context, tx pgx.Tx, projectID int64) (*attune.Assignment, error) {
	if a, settled, err := c.outcome(); settled {
		return a, err
	}
	for attempt := 0; c.open && attempt < 3; attempt++ {
		// Submits never get here (they claim after committing), but the
		// claim's own batch may hold counts of items whose leases it
		// reclaimed, so a wait can still deadlock with another claimer.
		// Under a savepoint the one PostgreSQL picks gives up only this
		// wait, and waits again.
		sp, err := tx.Begin(ctx)
		if err != nil {
			return nil, err
		}
		a, err := scanAssignment(sp.QueryRow(ctx, claimStatement("FOR NO KEY UPDATE"), projectID, c.userID))
		if isDeadlock(err) {
			if err := sp.Rollback(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if cerr := sp.Commit(ctx); err == nil && cerr != nil { // the row locks stay with the transaction
			return nil, cerr
		}
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		if err := tx.QueryRow(ctx, `
			WITH `+claimMe+`
			SELECT EXISTS (SELECT 1 FROM item_counts c WHERE `+claimOpen+`)`, projectID, c.userID).Scan(&c.open); err != nil {
			return nil, err
		}
	}
	return nil, attune.ErrNoWork
}

// outcome says what the claim came to without waiting for anyone:
// settled is false when it claimed nothing but open items remain, held
// locked by other claimers (finish then waits for them).
func (c *claim) outcome() (a *attune.Assignment, settled bool, err error) {
	switch {
	case !c.member:
		return nil, true, attune.NotFound("you are not an annotator on this project")
	case c.labeller.status != attune.ProjectActive:
		return nil, true, attune.Conflict(fmt.Sprintf("this project is %s: it hands out no work until a lead resumes it", c.labeller.status))
	case c.paused:
		return nil, true, ErrQueuePaused(c.pausedWhy)
	case c.got != nil:
		return c.got, true, nil
	case c.qualifying():
		return nil, true, ErrNotQualified(c.answered, c.qualify)
	case !c.open:
		return nil, true, attune.ErrNoWork
	}
	return nil, false, nil
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
	// say false where a claim would reclaim one and succeed. While the
	// annotator qualifies, it speaks of calibration items instead.
	Open bool
	// Stopped says why nothing new is handed to the annotator, when a lead
	// paused their queue or they still have to qualify and no calibration
	// item is left (a conflict); nil otherwise.
	Stopped error
}

// PeekQueue reads the annotator's queue in a project without claiming,
// renewing or reclaiming anything: what a GET may do. It returns
// attune.ErrNotFound when the user is not an annotator of the project.
func (db *DB) PeekQueue(ctx context.Context, projectID, userID int64) (Queue, error) {
	var q Queue
	var held *int64
	var paused bool
	var why string
	var qualify, passed, answered int
	err := db.pool.QueryRow(ctx, `
		WITH me AS (
			SELECT r.id, p.overlap, p.status, m.paused_at IS NOT NULL AS paused, m.paused_why, p.calibration_qualify AS qualify,
			       m.calibration_attempt AS attempt, `+claimPassed+` AS passed, `+claimAnswered+` AS answered
			FROM projects p
			JOIN project_members m ON m.project_id = p.id AND m.user_id = $2 AND m.role = 'annotator'
			JOIN raters r ON r.user_id = m.user_id
			WHERE p.id = $1)
		SELECT me.status,
		       (SELECT a.id FROM assignments a WHERE a.project_id = $1 AND a.rater_id = me.id AND a.state = 'active'
		        ORDER BY a.assigned_at LIMIT 1),
		       CASE WHEN me.qualify > 0 AND me.passed < me.qualify THEN
		         EXISTS (SELECT 1 FROM calibration_items k WHERE k.project_id = $1
		                 AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.project_id = $1 AND x.item_id = k.item_id AND x.rater_id = me.id
		                                 AND (NOT x.calibration OR x.calibration_attempt = me.attempt)))
		       ELSE
		         EXISTS (SELECT 1 FROM item_counts c WHERE c.project_id = $1 AND NOT c.pulled AND NOT c.held AND c.filled < me.overlap
		                 AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.project_id = $1 AND x.item_id = c.item_id AND x.rater_id = me.id))
		       END,
		       me.paused, me.paused_why, me.qualify, me.passed, me.answered
		FROM me`, projectID, userID).Scan(&q.Status, &held, &q.Open, &paused, &why, &qualify, &passed, &answered)
	if err == nil && paused {
		q.Stopped = ErrQueuePaused(why)
	} else if err == nil && !q.Open && qualify > 0 && passed < qualify {
		q.Stopped = ErrNotQualified(answered, qualify)
	}
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
	// ProjectID is the assignment's project when the caller knows it
	// (0 otherwise): the claim of the next item is then sent with the
	// answers instead of after a look-up. An assignment of another
	// project is attune.ErrNotFound.
	ProjectID  int64
	UserID     int64
	Answers    map[string]string // rubric item key → value, already validated
	Rationales map[string]string // rubric item key → rationale (optional)
	// Evidence is the turns each failing answer fails at, already
	// validated (rubric.Definition.ValidateEvidence); a key without an
	// answer is not stored.
	Evidence  rubric.Evidence
	Rationale string // about the dialogue as a whole
	ActiveMS  int64  // time actively spent on the item
	ClaimNext bool   // also claim the next item in the same transaction
	// NextWorkspace also reads the next item's Workspace (as FindWorkspace
	// does), when one was claimed, right after the transaction commits.
	NextWorkspace bool
	// NoteRequired says the item is behind a content note: the answers
	// are refused (ErrNoteUnopened) unless the person opened it.
	NoteRequired bool
	// Graded is the answers held against the item's gold, for the
	// assignment of a calibration item (nil for a real one). A
	// calibration assignment submitted without it stores nothing.
	Graded *GradedAnswers
}

// GradedAnswers is a calibration answer as package calibration graded it.
type GradedAnswers struct {
	Gold              map[string]string // the gold it was held against
	Matched, Compared int
	Passed            bool
}

// SubmitResult says what a submission did.
type SubmitResult struct {
	AnswerSetID int64
	Created     bool // false when the assignment had been submitted already
	// Stored are the answers stored by the first submission, as they are
	// now, when Created is false (nil otherwise): the caller tells a retry
	// of the same answers from different ones, which are never stored.
	Stored *AnswerSet
	Next   *attune.Assignment // the next assignment, when asked for and there is one
	// NextWorkspace is the next item's workspace, when asked for and
	// there is a next item.
	NextWorkspace *Workspace
	NextErr       error // why there is no next one (attune.ErrNoWork, a paused project)
	// Calibration is true when the assignment was a calibration item:
	// AnswerSetID is then its calibration answer's id.
	Calibration bool
	// WasQualifying is true when the person still had to qualify before
	// this calibration answer (known when the next item was claimed with
	// it): the answer is followed by feedback.
	WasQualifying bool
}

// submitAttempts is how many times a submission is sent when PostgreSQL
// ends it to break a deadlock.
const submitAttempts = 4

// SubmitLabels stores the answers of an assignment in one transaction:
// the answer set (its answers, notes and turns written once, on the set:
// its label rows follow after the commit, pending.go), the assignment
// closed, the item's counters moved, and — with ClaimNext — the next item
// claimed.
// A submission that gives an item its overlap of labels queues it for the
// consensus rule, which a Settler applies after the commit, within
// SettleBound (settle.go): gold when its people agree, else a place in
// the queue of disagreements, and the project's full overlap announced.
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
	keys, values, notes, turns := answerColumns(s.Answers, s.Rationales, s.Evidence)
	projectID := s.ProjectID
	if s.ClaimNext && projectID == 0 {
		if err := db.pool.QueryRow(ctx, `SELECT project_id FROM assignments WHERE id = $1`, s.AssignmentID).Scan(&projectID); err != nil {
			return res, mapErr(err, "submit labels", "")
		}
	}
	submitArgs := []any{s.AssignmentID, s.UserID, s.NoteRequired, s.Rationale, s.ActiveMS, keys, values, notes, turns, projectID}
	// claimAfter: the next item is claimed after the submission commits.
	var claimAfter bool
	submitOnce := func() error {
		claimAfter = false
		// A submission of a real item goes in one round trip, COMMIT
		// included, when it stores its answers; one that stores nothing
		// commits nothing there and comes here the long way, which says
		// why. A calibration item's goes the long way: it is graded.
		if s.Graded == nil {
			stored, after, err := db.submitInOneTrip(ctx, s, projectID, submitArgs, &res)
			if stored || err != nil {
				claimAfter = after
				return err
			}
			res = SubmitResult{}
		}
		// Everything goes to the server in one batch, BEGIN included,
		// each statement seeing what the ones before did: the membership
		// locked, then the assignment; the answers stored when the
		// assignment may take them; the next item claimed. What the batch
		// found decides below whether it all commits.
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue(genericPlans)
		b.Queue(lockSubmitted, s.AssignmentID, s.UserID)
		b.Queue(submitStatement+`SELECT id FROM submitted`, submitArgs...)
		// A calibration item's answers, graded, go to calibration_answers
		// instead: no answer set, no label, no count moved. Only a graded
		// submission can store one, so an ungraded one does not send it.
		if s.Graded != nil {
			answersJSON, _ := json.Marshal(nonNil(s.Answers))
			g := *s.Graded
			goldJSON, _ := json.Marshal(nonNil(g.Gold))
			b.Queue(`
			WITH a AS (
				SELECT a.id, a.item_id, a.project_id, a.rater_id, a.calibration_attempt FROM assignments a JOIN raters r ON r.id = a.rater_id
				WHERE a.id = $1 AND r.user_id = $2 AND a.state = 'active' AND a.calibration AND $4
				  AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = a.project_id AND m.user_id = $2 AND m.role = 'annotator')
				  AND (NOT $3 OR EXISTS (SELECT 1 FROM content_notes_opened o WHERE o.rater_id = a.rater_id AND o.item_id = a.item_id))),
			stored AS (
				INSERT INTO calibration_answers (assignment_id, project_id, item_id, rater_id, answers, gold, matched, compared, passed, active_ms,
				                                 calibration_attempt)
				SELECT a.id, a.project_id, a.item_id, a.rater_id, $5, $6, $7, $8, $9, $10, a.calibration_attempt FROM a
				RETURNING id, assignment_id)
			UPDATE assignments x SET state = 'submitted', finished_at = now() FROM stored WHERE x.id = stored.assignment_id
			RETURNING stored.id`,
				s.AssignmentID, s.UserID, s.NoteRequired, true, answersJSON, goldJSON, g.Matched, g.Compared, g.Passed, s.ActiveMS)
		}
		if s.ClaimNext {
			queueClaim(b, projectID, s.UserID)
		}
		return db.inBatchTx(ctx, b, func(tx pgx.Tx, br pgx.BatchResults) error {
			var state string
			var itemID int64
			var existing *int64
			var pulled, opened, calib bool
			c := claim{userID: s.UserID}
			err := func() error {
				defer br.Close()
				if _, err := br.Exec(); err != nil { // genericPlans
					return err
				}
				var assignmentProject int64
				if err := br.QueryRow().Scan(&state, &itemID, &assignmentProject, &existing, &pulled, &opened, &calib); err != nil {
					if errors.Is(err, pgx.ErrNoRows) {
						return errNotLocked
					}
					return err
				}
				if projectID != 0 && assignmentProject != projectID {
					return attune.NotFound("assignment")
				}
				projectID = assignmentProject
				switch err := br.QueryRow().Scan(&res.AnswerSetID); {
				case err == nil:
					res.Created = true
				case !errors.Is(err, pgx.ErrNoRows):
					return err
				}
				if s.Graded != nil {
					switch err := br.QueryRow().Scan(&res.AnswerSetID); {
					case err == nil:
						res.Created, res.Calibration = true, true
					case !errors.Is(err, pgx.ErrNoRows):
						return err
					}
				}
				if s.ClaimNext {
					return c.read(br)
				}
				return nil
			}()
			if errors.Is(err, errNotLocked) {
				return whyNotSubmittable(ctx, tx, s.AssignmentID, s.UserID)
			}
			if err != nil {
				return err
			}
			if s.NoteRequired && !opened {
				return ErrNoteUnopened
			}
			res.Calibration = calib
			if !res.Created {
				switch {
				case calib && state == "submitted":
					stored, err := readCalibrationAnswer(ctx, tx, s.AssignmentID)
					if err != nil {
						return err
					}
					res.AnswerSetID, res.Stored = stored.ID, stored
				case calib && state == "active" && s.Graded == nil:
					return fmt.Errorf("assignment %d is of a calibration item and came without its grade", s.AssignmentID)
				case state == "submitted":
					res.AnswerSetID = *existing
					stored, err := readAnswerSet(ctx, tx, *existing)
					if err != nil {
						return err
					}
					res.Stored = stored
				case pulled:
					return attune.Conflict("a lead took this item out of the pool; your answers were not stored")
				case state == "skipped":
					return attune.Conflict("you skipped this item; it can no longer be labelled from this assignment")
				case state == "expired":
					return attune.Conflict("your time on this item ran out and it was given to someone else; your answers were not stored")
				default:
					return fmt.Errorf("assignment %d in state %s stored nothing", s.AssignmentID, state)
				}
			}
			if calib && s.ClaimNext {
				passedBefore := c.passed
				if res.Created && s.Graded.Passed {
					passedBefore--
				}
				res.WasQualifying = c.qualify > 0 && passedBefore < c.qualify
			}
			switch {
			case s.ClaimNext && c.waits():
				// Every open item is held by someone else. Waiting for one
				// here, while this transaction holds the counts of the item
				// just labelled, closes deadlocks with other submits doing
				// the same; the wait comes after the commit instead.
				claimAfter = true
			case s.ClaimNext:
				a, err := c.finish(ctx, tx, projectID)
				if err := res.next(a, err); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// A submission can wait for a row lock while it holds others (its
	// item's counts, held by another submission of the same item), so
	// under many annotators PostgreSQL may end it to break a deadlock.
	// Nothing of it stayed, so it is sent again as it was.
	err := submitOnce()
	for attempt := 1; isDeadlock(err) && attempt < submitAttempts; attempt++ {
		res = SubmitResult{}
		err = submitOnce()
	}
	if err != nil {
		return SubmitResult{}, mapErr(err, "submit labels", "")
	}
	if claimAfter {
		// In a transaction of its own, which holds no item while it waits.
		a, err := db.NextAssignment(ctx, projectID, s.UserID)
		if err := res.next(a, err); err != nil {
			return SubmitResult{}, err
		}
	}
	// Read after the commit, not before: the row locks the submit took
	// are not held over one more round trip.
	if s.NextWorkspace && res.Next != nil {
		if res.NextWorkspace, err = findWorkspace(ctx, db.pool, res.Next.ProjectID, res.Next.ItemID, s.UserID, true); err != nil {
			return SubmitResult{}, err
		}
	}
	return res, nil
}

// next records the claim that followed a submission: no next item is an
// answer (NextErr), not a failure of the submission.
func (r *SubmitResult) next(a *attune.Assignment, err error) error {
	switch {
	case err == nil:
		r.Next = a
	case errors.Is(err, attune.ErrNoWork) || errors.Is(err, attune.ErrConflict) || errors.Is(err, attune.ErrNotFound):
		r.NextErr = err
	default:
		return err
	}
	return nil
}

// readCalibrationAnswer reads the calibration answer stored for an
// assignment, as an AnswerSet (no notes: calibration answers keep none).
func readCalibrationAnswer(ctx context.Context, tx pgx.Tx, assignmentID int64) (*AnswerSet, error) {
	s := &AnswerSet{Rationales: map[string]string{}, Revision: 1}
	err := tx.QueryRow(ctx, `SELECT id, item_id, answers, active_ms, submitted_at FROM calibration_answers WHERE assignment_id = $1`,
		assignmentID).Scan(&s.ID, &s.ItemID, &s.Answers, &s.ActiveMS, &s.Submitted)
	return s, err
}

// submitInOneTrip sends a submission of a real item, the claim of the
// next item when it asks for one, and their BEGIN and COMMIT as one batch:
// the locks it takes (its item's counters, the next item's) are held for
// one round trip, not two. stored says it stored the answers and
// committed; false, with a nil error, says it stored nothing and nothing
// of it committed (submit_stored, 00061). claimAfter says the next item is
// to be claimed after the commit, every open one being held locked by
// other claimers at the moment.
func (db *DB) submitInOneTrip(ctx context.Context, s Submission, projectID int64, args []any, res *SubmitResult) (stored, claimAfter bool, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return false, false, err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(genericPlans)
	b.Queue(lockSubmitted, s.AssignmentID, s.UserID)
	b.Queue(submitStatement+`SELECT submit_stored((SELECT id FROM submitted))`, args...)
	if s.ClaimNext {
		queueClaim(b, projectID, s.UserID)
	}
	b.Queue(`COMMIT`)
	c := claim{userID: s.UserID}
	br := conn.SendBatch(ctx, b)
	err = func() error {
		for range 3 { // BEGIN, the plans, the locks (submitStatement checks what they found)
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&res.AnswerSetID); err != nil {
			return err
		}
		if s.ClaimNext {
			if err := c.read(br); err != nil {
				return err
			}
		}
		_, err := br.Exec() // COMMIT
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The server skipped the rest of the batch, COMMIT included; the
		// transaction it left open is rolled back before the connection
		// goes back to the pool (which would close it otherwise).
		if conn.Conn().PgConn().TxStatus() != 'I' {
			if _, rerr := conn.Exec(ctx, `ROLLBACK`); rerr != nil {
				return false, false, errors.Join(err, rerr)
			}
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "AT001" {
			return false, false, nil
		}
		return false, false, err
	}
	res.Created = true
	if !s.ClaimNext {
		return true, false, nil
	}
	a, settled, err := c.outcome()
	if !settled {
		return true, true, nil
	}
	return true, false, res.next(a, err)
}

// submitStatement stores a submission's answers, given the assignment
// ($1) of the person ($2), in the project $10 when it is not 0, may take
// them: the item's counters moved, the
// answer set stored once with its notes and turns, queued for its label
// rows and, when it completes the item, for the consensus rule, and the
// assignment closed. Its CTE submitted holds the new answer set's id, or
// nothing when it stored nothing; the caller ends it with the SELECT it
// needs.
//
// An expired lease takes its slot back if the item still has room; an
// active one turns its hold into a label. Either way filled, the queue's
// order, stays as it was for an active one.
const submitStatement = `
		WITH a AS (
			SELECT a.id, a.state, a.item_id, a.project_id, a.rater_id, p.rubric_version_id, p.overlap
			FROM assignments a JOIN raters r ON r.id = a.rater_id JOIN projects p ON p.id = a.project_id
			JOIN item_counts c ON c.item_id = a.item_id
			WHERE a.id = $1 AND r.user_id = $2 AND a.state IN ('active', 'expired') AND NOT c.pulled AND NOT a.calibration
			  AND ($10::bigint = 0 OR a.project_id = $10::bigint)
			  AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = a.project_id AND m.user_id = $2 AND m.role = 'annotator')
			  AND (NOT $3 OR EXISTS (SELECT 1 FROM content_notes_opened o WHERE o.rater_id = a.rater_id AND o.item_id = a.item_id))),
		counted AS (
			UPDATE item_counts c SET done = c.done + 1, holds = c.holds - CASE WHEN a.state = 'active' THEN 1 ELSE 0 END
			FROM a WHERE c.item_id = a.item_id AND (a.state = 'active' OR c.filled < a.overlap)
			RETURNING c.item_id, c.done),
		stored AS (
			-- The answers, their notes and their turns are written
			-- once, on the set, as the labels' trigger would make
			-- them (00055); the label rows come after the commit.
			INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, rationale, active_ms, answers, rationales, evidence)
			SELECT a.project_id, a.item_id, a.rater_id, a.rubric_version_id, $4, $5, t.answers, t.rationales, t.evidence
			FROM a JOIN counted ON counted.item_id = a.item_id,
			     (SELECT coalesce(json_object_agg(k, v ORDER BY k), '{}') AS answers,
			             coalesce(json_object_agg(k, n ORDER BY k) FILTER (WHERE n <> ''), '{}') AS rationales,
			             coalesce(json_object_agg(k, e::int[] ORDER BY k) FILTER (WHERE e <> '{}'), '{}') AS evidence
			      FROM unnest($6::text[], $7::text[], $8::text[], $9::text[]) AS u(k, v, n, e)) t
			RETURNING id, project_id),
		pending AS (
			INSERT INTO labels_pending (project_id, answer_set_id) SELECT project_id, id FROM stored),
		-- The item has its overlap of labels (or more: a lead may
		-- have lowered the overlap while it was held): the settler
		-- applies the consensus rule after the commit (settle.go).
		-- completed: this submission gave the item its k-th label.
		queued AS (
			INSERT INTO settle_queue (project_id, item_id, completed)
			SELECT a.project_id, a.item_id, counted.done = a.overlap FROM a JOIN counted ON counted.item_id = a.item_id
			WHERE counted.done >= a.overlap),
		submitted AS (
			UPDATE assignments x SET state = 'submitted', finished_at = now(), answer_set_id = stored.id
			FROM stored WHERE x.id = $1
			RETURNING stored.id)
	`

// answerColumns lays answers out as the columns labels are inserted from,
// in one statement with unnest: parallel arrays, the turns of each as an
// int[] literal ("{2,5}"), since unnest cannot take an array of arrays of
// different lengths.
func answerColumns(answers, rationales map[string]string, evidence rubric.Evidence) (keys, values, notes, turns []string) {
	keys = make([]string, 0, len(answers))
	values = make([]string, 0, len(answers))
	notes = make([]string, 0, len(answers))
	turns = make([]string, 0, len(answers))
	for k, v := range answers {
		keys = append(keys, k)
		values = append(values, v)
		notes = append(notes, rationales[k])
		turns = append(turns, turnsLiteral(evidence[k]))
	}
	return keys, values, notes, turns
}

// turnsLiteral writes turns as a PostgreSQL int[] literal.
func turnsLiteral(turns []int) string {
	parts := make([]string, len(turns))
	for i, t := range turns {
		parts[i] = strconv.Itoa(t)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// ErrSkipLabelled refuses a skip of an item the person labelled already
// (Skip): it matches attune.ErrConflict.
var ErrSkipLabelled = attune.Conflict("this item is labelled already; edit your labels instead of skipping it")

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
		var calib bool
		err := tx.QueryRow(ctx, `SELECT a.item_id, a.state, a.calibration FROM assignments a JOIN raters r ON r.id = a.rater_id
			WHERE a.id = $1 AND r.user_id = $2 FOR UPDATE OF a`, assignmentID, userID).Scan(&itemID, &state, &calib)
		if err != nil {
			return err
		}
		switch state {
		case "skipped":
			return nil
		case "submitted":
			return ErrSkipLabelled
		}
		var flagArg *string
		if flag != "" {
			flagArg = &flag
		}
		if _, err := tx.Exec(ctx, `UPDATE assignments SET state = 'skipped', finished_at = now(), flag = $2, flag_note = $3 WHERE id = $1`,
			assignmentID, flagArg, note); err != nil {
			return err
		}
		if state == "active" && !calib { // a calibration item holds no slot
			_, err = tx.Exec(ctx, `UPDATE item_counts SET holds = holds - 1 WHERE item_id = $1`, itemID)
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
	// Evidence is the turns of each failing answer, already validated;
	// an answer without any has its stored turns cleared.
	Evidence  rubric.Evidence
	Rationale string
	ActiveMS  int64 // further time spent, added to the total
	// NoteRequired says the item is behind a content note: the edit is
	// refused (ErrNoteUnopened) unless the person opened it.
	NoteRequired bool
}

// UpdateLabels edits a person's submitted answers for an item. Labels that
// change keep their earlier value in the history; answers removed from the
// set are deleted. An item with complete labels and no gold a person set
// is judged again by the consensus rule in the same transaction (settle).
// It returns the answer set's id and new revision, or
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
		// Labels not yet written from the set are written first, so that
		// the edit below changes them and keeps the earlier values.
		if err := deriveSet(ctx, tx, e.ProjectID, answerSetID); err != nil {
			return err
		}
		keys, values, notes, turns := answerColumns(e.Answers, e.Rationales, e.Evidence)
		// The turns are written with the label they explain, in the same
		// statement; a change of turns alone updates the row, and
		// keep_label_history keeps only earlier values and notes.
		if _, err := tx.Exec(ctx, `
			INSERT INTO labels (answer_set_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale, evidence)
			SELECT $1, $2, $3, $4, k, v, n, e::int[] FROM unnest($5::text[], $6::text[], $7::text[], $8::text[]) AS t(k, v, n, e)
			ON CONFLICT (answer_set_id, rubric_item_key) DO UPDATE
			SET value = EXCLUDED.value, rationale = EXCLUDED.rationale, evidence = EXCLUDED.evidence
			WHERE labels.value IS DISTINCT FROM EXCLUDED.value OR labels.rationale IS DISTINCT FROM EXCLUDED.rationale
			   OR labels.evidence IS DISTINCT FROM EXCLUDED.evidence`,
			answerSetID, e.ItemID, raterID, rvID, keys, values, notes, turns); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM labels WHERE answer_set_id = $1 AND NOT (rubric_item_key = ANY($2))`, answerSetID, keys); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE answer_sets SET rationale = $2, active_ms = active_ms + $3, revision = revision + 1, updated_at = now()
			WHERE id = $1 RETURNING revision`, answerSetID, e.Rationale, e.ActiveMS).Scan(&revision); err != nil {
			return err
		}
		// An item with complete labels is judged again as it is now,
		// unless a person set its gold. settle waits for the lock on the
		// item's counts, so that a submission or edit of the same item
		// under way settles first and this one sees its labels.
		_, err = db.settleLabelled(ctx, tx, e.ProjectID, []int64{e.ItemID})
		return err
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
	// Evidence is the turns marked on each failing answer; answers without
	// any are left out.
	Evidence  rubric.Evidence
	Rationale string
	ActiveMS  int64
	Revision  int
	Submitted time.Time
}

// answerSetValues reads an answer set s's answers, notes and turns as the
// set keeps them (00055): written with it by a person's submit, kept equal
// to its labels after every other write.
const answerSetValues = `s.answers, s.rationales, s.evidence`

// readAnswerSet reads one answer set with its answers; notes that are
// empty are left out of Rationales.
func readAnswerSet(ctx context.Context, tx pgx.Tx, id int64) (*AnswerSet, error) {
	s := &AnswerSet{ID: id}
	err := tx.QueryRow(ctx, `
		SELECT s.item_id, s.rationale, s.active_ms, s.revision, s.submitted_at, `+answerSetValues+`
		FROM answer_sets s WHERE s.id = $1`, id).Scan(&s.ItemID, &s.Rationale, &s.ActiveMS, &s.Revision, &s.Submitted, &s.Answers, &s.Rationales,
		&s.Evidence)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// FindOwnAnswerSet returns the answers a person submitted for an item.
func (db *DB) FindOwnAnswerSet(ctx context.Context, projectID, itemID, userID int64) (*AnswerSet, error) {
	s := &AnswerSet{}
	err := db.pool.QueryRow(ctx, `
		SELECT s.id, s.item_id, s.rationale, s.active_ms, s.revision, s.submitted_at, `+answerSetValues+`
		FROM answer_sets s JOIN raters r ON r.id = s.rater_id
		WHERE s.project_id = $1 AND s.item_id = $2 AND r.user_id = $3`, projectID, itemID, userID).
		Scan(&s.ID, &s.ItemID, &s.Rationale, &s.ActiveMS, &s.Revision, &s.Submitted, &s.Answers, &s.Rationales, &s.Evidence)
	if err != nil {
		return nil, mapErr(err, "find answers", "")
	}
	return s, nil
}
