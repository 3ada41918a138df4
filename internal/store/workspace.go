package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// Draft is a person's unsaved work on one item: what they have chosen and
// typed so far, kept so that a refresh or a crash loses nothing.
type Draft struct {
	Answers    map[string]string // rubric item key → value
	Rationales map[string]string // rubric item key → rationale
	Rationale  string            // about the dialogue as a whole
	// Evidence is the turns marked so far, by rubric item key, as typed
	// ("2, 5"): a draft holds unfinished work, checked when submitted.
	Evidence map[string]string
	ActiveMS int64 // active time spent so far
	// Base is the revision of the submitted answers the draft edits, or 0
	// for an item not submitted yet.
	Base      int
	UpdatedAt time.Time
}

// Workspace is everything the annotator's page needs about one item for
// one person, read in one round trip.
type Workspace struct {
	Item attune.Item
	// Assignment is the person's assignment for the item, or nil.
	Assignment *attune.Assignment
	// Answers are the person's submitted answers for the item, or nil.
	Answers *AnswerSet
	// AnswersUpdated is when those answers last changed.
	AnswersUpdated time.Time
	// Draft is the person's unsaved work on the item, or nil. A draft of
	// another revision than the submitted answers' is left out: it was
	// saved after those answers were stored.
	Draft *Draft
	// PrevItem and NextItem are the items the person submitted just before
	// and just after this one (0 when none). For an item not submitted yet,
	// PrevItem is their latest submitted item.
	PrevItem, NextItem int64
	// CurrentItem is the item of the person's active assignment in the
	// project (0 when none): where "back to labelling" leads.
	CurrentItem int64
	// Submitted counts the person's answer sets in the project.
	Submitted int
	// SeenOpen counts the items the person has been given (in any state)
	// that still need labels: Counts.Open minus this is what is left that
	// they could still be given.
	SeenOpen int
	// Counts are the project's label counts (with the draft, neighbours
	// and counts only).
	Counts *LabelCounts
	// Key is the gold a calibration item is held against, when the
	// person's assignment is of one (nil otherwise).
	Key *CalibrationKey
	// NoteOpened is true when the person opened the item's content note
	// (OpenContentNote); whether the item has one is the caller's
	// decision.
	NoteOpened bool
}

// FindWorkspace reads one item of a project with one person's assignment,
// submitted answers, draft, neighbours in their own labels and counts. It
// returns attune.ErrNotFound when the project has no such item; whether the
// person may see it is the caller's decision, from Assignment and Answers.
// The queries go to the server in one batch.
func (db *DB) FindWorkspace(ctx context.Context, projectID, itemID, userID int64) (*Workspace, error) {
	return findWorkspace(ctx, db.pool, projectID, itemID, userID, true)
}

// FindOwnItem is FindWorkspace without the draft, the neighbours and the
// counts: the item with the person's assignment and submitted answers, all
// that storing their answers needs.
func (db *DB) FindOwnItem(ctx context.Context, projectID, itemID, userID int64) (*Workspace, error) {
	return findWorkspace(ctx, db.pool, projectID, itemID, userID, false)
}

// FindItemAccess reads, in one round trip, the user's role in a project
// (as ProjectRole), the project, and one of its items as FindWorkspace
// (full) or FindOwnItem reads it. It returns attune.ErrNotFound when the
// user may not see the project (its existence is not revealed) and when
// the project has no such item; whether the person may see the item is
// the caller's decision, from the role, Assignment and Answers.
func (db *DB) FindItemAccess(ctx context.Context, projectID, itemID int64, u *attune.User, full bool) (*attune.Project, attune.MemberRole, *Workspace, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT u.role, m.role FROM users u
		LEFT JOIN project_members m ON m.user_id = u.id AND m.project_id = $1
		WHERE u.id = $2`, projectID, u.ID)
	b.Queue(`SELECT `+projectColumns+` FROM projects p JOIN rubric_versions rv ON rv.id = p.rubric_version_id WHERE p.id = $1`, projectID)
	queueWorkspace(b, projectID, itemID, u.ID, full)
	br := db.pool.SendBatch(ctx, b)
	p, role, w, err := func() (*attune.Project, attune.MemberRole, *Workspace, error) {
		var global attune.Role
		var stored *string
		if err := br.QueryRow().Scan(&global, &stored); err != nil {
			return nil, "", nil, err
		}
		p, err := scanProject(br.QueryRow())
		if err != nil {
			return nil, "", nil, err
		}
		var role attune.MemberRole
		switch {
		case stored != nil:
			role = attune.EffectiveMemberRole(global, attune.MemberRole(*stored))
		case global == attune.RoleAdmin:
			role = attune.MemberLead
		default:
			return nil, "", nil, pgx.ErrNoRows
		}
		w, err := scanWorkspace(br, itemID, full)
		return p, role, w, err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", nil, mapErr(err, "find item", "")
	}
	return p, role, w, nil
}

// me is the rater of the user given as $3, in the workspace's queries.
const me = `(SELECT id FROM raters WHERE user_id = $3)`

// batcher sends a batch: the pool, or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func findWorkspace(ctx context.Context, q batcher, projectID, itemID, userID int64, full bool) (*Workspace, error) {
	b := &pgx.Batch{}
	queueWorkspace(b, projectID, itemID, userID, full)
	br := q.SendBatch(ctx, b)
	w, err := scanWorkspace(br, itemID, full)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, mapErr(err, "find workspace", "")
	}
	return w, nil
}

// queueWorkspace adds the queries of a workspace to a batch.
func queueWorkspace(b *pgx.Batch, projectID, itemID, userID int64, full bool) {
	b.Queue(`SELECT id, project_id, source_id, kind, messages, meta, turns, sha256, sensitive
		FROM items WHERE id = $1 AND project_id = $2`, itemID, projectID)
	b.Queue(`SELECT `+assignmentColumns+`, `+calibrationKeyColumns+` FROM assignments a
		WHERE a.item_id = $1 AND a.project_id = $2 AND a.rater_id = `+me, itemID, projectID, userID)
	b.Queue(`SELECT s.id, s.rationale, s.active_ms, s.revision, s.submitted_at, s.updated_at, `+answerSetValues+`
		FROM answer_sets s
		WHERE s.item_id = $1 AND s.project_id = $2 AND s.rater_id = `+me, itemID, projectID, userID)
	b.Queue(`SELECT EXISTS (SELECT 1 FROM content_notes_opened o JOIN items i ON i.id = o.item_id
		WHERE o.item_id = $1 AND i.project_id = $2 AND o.rater_id = `+me+`)`, itemID, projectID, userID)
	if full {
		queueExtras(b, projectID, itemID, userID)
	}
}

// scanWorkspace reads what queueWorkspace asked for.
func scanWorkspace(br pgx.BatchResults, itemID int64, full bool) (*Workspace, error) {
	w := &Workspace{}
	err := func() error {
		var msgs []byte
		err := br.QueryRow().Scan(&w.Item.ID, &w.Item.ProjectID, &w.Item.SourceID, &w.Item.Kind, &msgs, &w.Item.Meta,
			&w.Item.Turns, &w.Item.SHA256, &w.Item.Sensitive)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(msgs, &w.Item.Messages); err != nil {
			return fmt.Errorf("item %d messages: %w", itemID, err)
		}
		a, key, err := scanKeyedAssignment(br.QueryRow())
		switch {
		case err == nil:
			w.Assignment, w.Key = a, key
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		s := &AnswerSet{ItemID: itemID}
		err = br.QueryRow().Scan(&s.ID, &s.Rationale, &s.ActiveMS, &s.Revision, &s.Submitted, &w.AnswersUpdated, &s.Answers, &s.Rationales, &s.Evidence)
		switch {
		case err == nil:
			w.Answers = s
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := br.QueryRow().Scan(&w.NoteOpened); err != nil {
			return err
		}
		if full {
			return scanExtras(br, w)
		}
		return nil
	}()
	if err != nil {
		return nil, err
	}
	return w, nil
}

// queueExtras adds the workspace's draft, neighbours and counts to a batch.
func queueExtras(b *pgx.Batch, projectID, itemID, userID int64) {
	b.Queue(countLabels, projectID)
	b.Queue(`SELECT answers, rationales, evidence, rationale, active_ms, base_revision, updated_at
		FROM drafts WHERE item_id = $1 AND rater_id = (SELECT id FROM raters WHERE user_id = $2)`, itemID, userID)
	b.Queue(`
		WITH me AS `+me+`,
		cur AS (SELECT s.submitted_at, s.id FROM answer_sets s WHERE s.item_id = $1 AND s.rater_id = (SELECT id FROM me))
		SELECT
		  (SELECT s.item_id FROM answer_sets s
		   WHERE s.rater_id = (SELECT id FROM me) AND s.project_id = $2
		     AND (NOT EXISTS (SELECT 1 FROM cur) OR (s.submitted_at, s.id) < (SELECT submitted_at, id FROM cur))
		   ORDER BY s.submitted_at DESC, s.id DESC LIMIT 1),
		  (SELECT s.item_id FROM answer_sets s
		   WHERE s.rater_id = (SELECT id FROM me) AND s.project_id = $2
		     AND EXISTS (SELECT 1 FROM cur) AND (s.submitted_at, s.id) > (SELECT submitted_at, id FROM cur)
		   ORDER BY s.submitted_at, s.id LIMIT 1),
		  (SELECT a.item_id FROM assignments a
		   WHERE a.rater_id = (SELECT id FROM me) AND a.project_id = $2 AND a.state = 'active'
		   ORDER BY a.assigned_at LIMIT 1),
		  (SELECT count(*) FROM answer_sets s WHERE s.rater_id = (SELECT id FROM me) AND s.project_id = $2),
		  (SELECT count(*) FROM assignments a
		   WHERE a.rater_id = (SELECT id FROM me) AND a.project_id = $2
		     AND (SELECT c.done FROM item_counts c WHERE c.item_id = a.item_id) < (SELECT p.overlap FROM projects p WHERE p.id = $2))`,
		itemID, projectID, userID)
}

// scanExtras reads what queueExtras asked for.
func scanExtras(br pgx.BatchResults, w *Workspace) error {
	w.Counts = &LabelCounts{}
	if err := br.QueryRow().Scan(&w.Counts.Items, &w.Counts.Open, &w.Counts.Labels, &w.Counts.Needed); err != nil {
		return err
	}
	d := &Draft{}
	err := br.QueryRow().Scan(&d.Answers, &d.Rationales, &d.Evidence, &d.Rationale, &d.ActiveMS, &d.Base, &d.UpdatedAt)
	switch {
	case err == nil:
		if (w.Answers == nil && d.Base == 0) || (w.Answers != nil && d.Base == w.Answers.Revision) {
			w.Draft = d
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	var prev, next, current *int64
	if err := br.QueryRow().Scan(&prev, &next, &current, &w.Submitted, &w.SeenOpen); err != nil {
		return err
	}
	if prev != nil {
		w.PrevItem = *prev
	}
	if next != nil {
		w.NextItem = *next
	}
	if current != nil {
		w.CurrentItem = *current
	}
	return nil
}

// OpenContentNote records that a person opened the content note of an
// item of a project: from then on the item shows to them without it, and
// their answers to it may be stored. Only an item the person was given (or
// labelled) can be opened; any other is attune.ErrNotFound. Opening again
// changes nothing.
func (db *DB) OpenContentNote(ctx context.Context, projectID, itemID, userID int64) error {
	var n int
	err := db.pool.QueryRow(ctx, `
		WITH target AS (
			SELECT r.id AS rater_id, i.id AS item_id FROM items i JOIN raters r ON r.user_id = $3
			WHERE i.id = $1 AND i.project_id = $2
			  AND (EXISTS (SELECT 1 FROM assignments a WHERE a.item_id = i.id AND a.rater_id = r.id)
			       OR EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.rater_id = r.id))),
		opened AS (
			INSERT INTO content_notes_opened (rater_id, item_id) SELECT rater_id, item_id FROM target
			ON CONFLICT DO NOTHING)
		SELECT count(*) FROM target`, itemID, projectID, userID).Scan(&n)
	if err != nil {
		return mapErr(err, "open content note", "")
	}
	if n == 0 {
		return attune.NotFound("item")
	}
	return nil
}

// ErrNoteUnopened refuses answers to an item behind a content note from a
// person who has not opened the note (Submission.NoteRequired,
// LabelEdit.NoteRequired). It matches attune.ErrInvalid, on the field
// content_note.
var ErrNoteUnopened = attune.Invalid("content_note",
	"this dialogue is behind a content note you have not opened; open it (Show the conversation) and read the dialogue before answering. Nothing was stored")

// checkNoteOpened returns ErrNoteUnopened unless the rater opened the
// item's content note.
func checkNoteOpened(ctx context.Context, tx pgx.Tx, raterID, itemID int64) error {
	var opened bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM content_notes_opened WHERE rater_id = $1 AND item_id = $2)`,
		raterID, itemID).Scan(&opened); err != nil {
		return err
	}
	if !opened {
		return ErrNoteUnopened
	}
	return nil
}

// SaveDraft keeps a person's unsaved work on an item. It saves only while
// the work can still be stored: for an item not submitted yet (d.Base 0)
// while the person holds its assignment, for submitted answers while they
// are at revision d.Base. It reports whether it saved; false means the
// draft came too late (the answers were stored or the item skipped
// meanwhile, or the person is no longer an annotator of the project) and
// is dropped.
func (db *DB) SaveDraft(ctx context.Context, projectID, itemID, userID int64, d Draft) (bool, error) {
	if err := attune.CheckActiveMS("active_ms", d.ActiveMS); err != nil {
		return false, err
	}
	answers, err := json.Marshal(nonNil(d.Answers))
	if err != nil {
		return false, fmt.Errorf("store: save draft: %w", err)
	}
	rationales, err := json.Marshal(nonNil(d.Rationales))
	if err != nil {
		return false, fmt.Errorf("store: save draft: %w", err)
	}
	evidence, err := json.Marshal(nonNil(d.Evidence))
	if err != nil {
		return false, fmt.Errorf("store: save draft: %w", err)
	}
	tag, err := db.pool.Exec(ctx, `
		INSERT INTO drafts AS d (rater_id, item_id, answers, rationales, rationale, active_ms, base_revision, evidence)
		SELECT r.id, i.id, $4, $5, $6, $7, $8, $9
		FROM items i, raters r
		WHERE i.id = $1 AND i.project_id = $2 AND r.user_id = $3
		  AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = $2 AND m.user_id = $3 AND m.role = 'annotator')
		  AND CASE WHEN $8 = 0 THEN
		        EXISTS (SELECT 1 FROM assignments a WHERE a.item_id = i.id AND a.rater_id = r.id AND a.state IN ('active', 'expired'))
		        AND NOT EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.rater_id = r.id)
		      ELSE EXISTS (SELECT 1 FROM answer_sets s WHERE s.item_id = i.id AND s.rater_id = r.id AND s.revision = $8) END
		ON CONFLICT (rater_id, item_id) DO UPDATE SET answers = EXCLUDED.answers, rationales = EXCLUDED.rationales,
		  evidence = EXCLUDED.evidence, rationale = EXCLUDED.rationale, active_ms = EXCLUDED.active_ms, base_revision = EXCLUDED.base_revision, updated_at = now()`,
		itemID, projectID, userID, answers, rationales, d.Rationale, d.ActiveMS, max(d.Base, 0), evidence)
	if err != nil {
		return false, mapErr(err, "save draft", "")
	}
	return tag.RowsAffected() == 1, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// LabelCounts are a project's figures the workspace's progress shows.
type LabelCounts struct {
	Items  int // items in the pool (not taken out by a lead)
	Open   int // items with fewer human labels than the overlap asks for
	Labels int // human labels given, counting at most the overlap per item
	Needed int // labels the project needs in all: items × overlap
}

// CountLabels counts a project's items in the pool and their labels. It
// reads the project's progress rows, which every change to an item's
// counts keeps in the same transaction: a few rows whatever the size of
// the project.
func (db *DB) CountLabels(ctx context.Context, projectID int64) (LabelCounts, error) {
	var c LabelCounts
	err := db.pool.QueryRow(ctx, countLabels, projectID).Scan(&c.Items, &c.Open, &c.Labels, &c.Needed)
	if err != nil {
		return LabelCounts{}, mapErr(err, "count labels", "")
	}
	return c, nil
}

// countLabels reads LabelCounts for the project $1.
const countLabels = `
	SELECT coalesce(sum(g.items) FILTER (WHERE NOT g.pulled), 0),
	       coalesce(sum(g.items) FILTER (WHERE NOT g.pulled AND g.done < p.overlap), 0),
	       coalesce(sum(g.items * least(g.done, p.overlap)) FILTER (WHERE NOT g.pulled), 0),
	       coalesce(sum(g.items) FILTER (WHERE NOT g.pulled), 0) * p.overlap
	FROM projects p LEFT JOIN project_progress g ON g.project_id = p.id
	WHERE p.id = $1 GROUP BY p.id`

// maxSensitiveIDs bounds one MarkSensitive call.
const maxSensitiveIDs = 10000

// MarkSensitive sets or clears the lead's sensitive mark on the project's
// items with the given ids (the dataset's ids, not attune's). It returns
// how many items it changed and, sorted, the ids the project does not have.
// More than 10,000 ids at once is an attune.ErrInvalid.
func (db *DB) MarkSensitive(ctx context.Context, actorID, projectID int64, sourceIDs []string, sensitive bool) (changed int, unknown []string, err error) {
	if len(sourceIDs) > maxSensitiveIDs {
		return 0, nil, attune.Invalid("ids", fmt.Sprintf("mark at most %d items at once", maxSensitiveIDs))
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH wanted AS (SELECT DISTINCT unnest($2::text[]) AS source_id),
			changed AS (
				UPDATE items i SET sensitive = $3 FROM wanted w
				WHERE i.project_id = $1 AND i.source_id = w.source_id AND i.sensitive <> $3
				RETURNING i.source_id)
			SELECT w.source_id, c.source_id IS NOT NULL,
			       EXISTS (SELECT 1 FROM items i WHERE i.project_id = $1 AND i.source_id = w.source_id)
			FROM wanted w LEFT JOIN changed c ON c.source_id = w.source_id`, projectID, sourceIDs, sensitive)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var didChange, exists bool
			if err := rows.Scan(&id, &didChange, &exists); err != nil {
				return err
			}
			if didChange {
				changed++
			}
			if !exists {
				unknown = append(unknown, id)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		slices.Sort(unknown)
		return audit(ctx, tx, attune.AuditEvent{ActorID: &actorID, Action: "project.mark_sensitive", ProjectID: &projectID,
			Details: map[string]string{"sensitive": fmt.Sprint(sensitive), "changed": fmt.Sprint(changed)}})
	})
	if err != nil {
		return 0, nil, mapErr(err, "mark sensitive", "")
	}
	return changed, unknown, nil
}

// OwnLabels reports how many items a person has submitted in a project and
// the item they submitted last (0 when none).
func (db *DB) OwnLabels(ctx context.Context, projectID, userID int64) (submitted int, latest int64, err error) {
	var last *int64
	err = db.pool.QueryRow(ctx, `
		WITH me AS (SELECT id FROM raters WHERE user_id = $2)
		SELECT (SELECT count(*) FROM answer_sets s WHERE s.rater_id = (SELECT id FROM me) AND s.project_id = $1),
		       (SELECT s.item_id FROM answer_sets s WHERE s.rater_id = (SELECT id FROM me) AND s.project_id = $1
		        ORDER BY s.submitted_at DESC, s.id DESC LIMIT 1)`, projectID, userID).Scan(&submitted, &last)
	if err != nil {
		return 0, 0, mapErr(err, "own labels", "")
	}
	if last != nil {
		latest = *last
	}
	return submitted, latest, nil
}
