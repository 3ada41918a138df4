// Package labeling is the one flow of a person's labels for every adapter:
// the annotator's page and the JSON API read their input into an Input and
// call Submit, Edit, Skip and OpenNote, so that each refuses the same input
// with the same verdict and message and stores the same rows. The rules
// themselves stay in the pure packages: the rubric's checks
// (rubric.Definition.Validate, and ValidateEvidence for the turns a
// failing answer names), the engine's score (scoring.Score), the
// grading of a calibration answer (calibration.GradeAnswers), the flags of
// a skip (attune.CheckSkipFlag) and the content note (rubric.Facts.BehindNote);
// the flow reads what they need once, calls them, and stores through one
// store call.
package labeling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

// Store is what the flow needs of the database; *store.DB satisfies it.
type Store interface {
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	FindAssignmentKey(ctx context.Context, id, userID int64) (*attune.Assignment, *store.CalibrationKey, error)
	FindProjectByID(ctx context.Context, id int64) (*attune.Project, error)
	FindItem(ctx context.Context, projectID, itemID int64) (*attune.Item, error)
	FindOwnItem(ctx context.Context, projectID, itemID, userID int64) (*store.Workspace, error)
	SubmitLabels(ctx context.Context, s store.Submission) (store.SubmitResult, error)
	UpdateLabels(ctx context.Context, e store.LabelEdit) (answerSetID int64, revision int, err error)
	Skip(ctx context.Context, assignmentID, userID int64, flag, note string) error
	OpenContentNote(ctx context.Context, projectID, itemID, userID int64) error
	PersonCalibrationHistory(ctx context.Context, projectID, userID int64) (store.RaterCalibration, error)
	Announce(ctx context.Context, projectID int64, event attune.WebhookEvent, data any) error
}

// Flow stores, changes and gives back a person's labels.
type Flow struct {
	db  Store
	log *slog.Logger
}

// New returns the flow over db. log gets what the flow cannot return: a
// webhook that failed after the answers were stored.
func New(db Store, log *slog.Logger) *Flow { return &Flow{db: db, log: log} }

// ErrNothingToEdit refuses an edit of an item the person has no submitted
// labels for. It matches attune.ErrConflict.
var ErrNothingToEdit = attune.Conflict("there are no submitted labels of yours on this item to change")

// Input is one person's answers for one item, as the annotator's page and
// the API both receive them. Answers and notes are cleaned by the flow
// (CleanAnswers, CleanNote): an empty field is no answer.
type Input struct {
	Answers    map[string]string // rubric item key → value
	Rationales map[string]string // rubric item key → note
	// Evidence is the turns (from 1) where each failing answer fails, as
	// the project's policy allows or requires (CleanEvidence).
	Evidence rubric.Evidence

	Rationale       string // a note on the whole dialogue
	ActiveMS        int64
	ConfirmWarnings bool // the person has seen the rubric's warnings and stands by the answers
	Next            bool // also claim the next item (Submit only)
}

// clean is in with its answers and notes cleaned.
func (in Input) clean() Input {
	in.Answers = CleanAnswers(in.Answers)
	notes := make(map[string]string, len(in.Rationales))
	for k, v := range in.Rationales {
		if v = CleanNote(v); v != "" {
			notes[k] = v
		}
	}
	in.Rationales, in.Rationale = notes, CleanNote(in.Rationale)
	in.Evidence = CleanEvidence(in.Evidence)
	return in
}

// CleanEvidence drops the items that name no turn (an empty list is no
// evidence) and puts each item's turns in order, on a copy: the order a
// rater marked them in says nothing. Repeats stay, for the rubric to
// refuse.
func CleanEvidence(in rubric.Evidence) rubric.Evidence {
	out := make(rubric.Evidence, len(in))
	for k, turns := range in {
		if len(turns) > 0 {
			out[k] = slices.Sorted(slices.Values(turns))
		}
	}
	return out
}

// CleanAnswers trims answers and drops empty ones: an empty form field is
// no answer.
func CleanAnswers(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if v = strings.TrimSpace(v); v != "" {
			out[k] = v
		}
	}
	return out
}

// CleanNote is a note as typed, with a browser's CRLF line ends made LF
// and surrounding blank space dropped.
func CleanNote(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }

// SameAsStored reports whether a submission repeats the answers stored
// first for its assignment (a double click, a retry) rather than bringing
// different ones (a second tab). Empty answers, notes and turn lists count
// as none.
func SameAsStored(stored *store.AnswerSet, in Input) bool {
	if stored == nil {
		return true
	}
	in = in.clean()
	return maps.Equal(in.Answers, CleanAnswers(stored.Answers)) &&
		maps.Equal(in.Rationales, CleanAnswers(stored.Rationales)) &&
		maps.EqualFunc(in.Evidence, CleanEvidence(stored.Evidence), slices.Equal[[]int]) &&
		in.Rationale == strings.TrimSpace(stored.Rationale)
}

// Problems is a submission the rubric refuses (errors) or that needs the
// person to confirm the rubric's warnings first. It matches
// attune.ErrInvalid.
type Problems struct {
	Issues rubric.Issues
	// NeedsConfirm is true when the only problems are warnings.
	NeedsConfirm bool
}

func (p *Problems) Error() string {
	var msgs []string
	for _, is := range p.Issues {
		msgs = append(msgs, is.Message)
	}
	if p.NeedsConfirm {
		return "please confirm: " + strings.Join(msgs, "; ")
	}
	return strings.Join(msgs, "; ")
}

// Is makes Problems match attune.ErrInvalid.
func (p *Problems) Is(target error) bool { return target == attune.ErrInvalid }

// FactsOf are the facts of an item every path checks and scores answers
// with, as rubric.FactsOf works them out from the item's turns, messages
// and the lead's mark.
func FactsOf(item *attune.Item) rubric.Facts {
	texts := make([]string, len(item.Messages))
	for i, m := range item.Messages {
		texts[i] = m.Content
	}
	return rubric.FactsOf(item.Turns, texts, item.Sensitive)
}

// Check validates answers (cleaned) against def as a person's (ERROR is a
// judge's value only), with their turn evidence under the project's
// policy (rubric.Definition.ValidateEvidence), and scores them. Errors
// always block (*Problems), those of the answers and of the turns in one
// list; warnings block until confirmed; a note on an item def does not
// have is an ErrInvalid error on rationales.
func Check(def *rubric.Definition, facts rubric.Facts, policy rubric.EvidencePolicy, in Input) (scoring.Result, error) {
	answers := make(rubric.Answers, len(in.Answers))
	for k, v := range in.Answers {
		answers[k] = rubric.Value(v)
	}
	all := append(def.Validate(answers, facts, rubric.Options{}), def.ValidateEvidence(answers, in.Evidence, facts, policy)...)
	switch verdict, issues := all.Verdict(in.ConfirmWarnings); verdict {
	case rubric.Refused:
		return scoring.Result{}, &Problems{Issues: issues}
	case rubric.NeedsConfirmation:
		return scoring.Result{}, &Problems{Issues: issues, NeedsConfirm: true}
	}
	for k := range in.Rationales {
		if _, ok := def.Item(k); !ok {
			return scoring.Result{}, attune.Invalid("rationales", fmt.Sprintf("%s has no item %q", def.Ref(), k))
		}
	}
	return scoring.Score(def, answers, facts)
}

// Held is an assignment a person holds, with what storing its answers
// needs: its project, its item, and the gold of a calibration item (nil
// for a real one). The page reads it with the item (store.Workspace); the
// API by the assignment's id (Find).
type Held struct {
	Project      *attune.Project
	Item         *attune.Item
	AssignmentID int64
	Key          *store.CalibrationKey
}

// Find reads the assignment id of the user with its project and item;
// another's assignment, or none, is attune.ErrNotFound.
func (f *Flow) Find(ctx context.Context, u *attune.User, assignmentID int64) (Held, error) {
	a, key, err := f.db.FindAssignmentKey(ctx, assignmentID, u.ID)
	if err != nil {
		return Held{}, err
	}
	p, err := f.db.FindProjectByID(ctx, a.ProjectID)
	if err != nil {
		return Held{}, err
	}
	item, err := f.db.FindItem(ctx, a.ProjectID, a.ItemID)
	if err != nil {
		return Held{}, err
	}
	return Held{Project: p, Item: item, AssignmentID: assignmentID, Key: key}, nil
}

// Submitted is what a submission did, with the engine's score of the
// answers and the rubric they were checked with.
type Submitted struct {
	store.SubmitResult
	Score  scoring.Result
	Rubric *rubric.Definition
	// Different is true when the assignment had been submitted already
	// with other answers (a second tab): nothing of this submission was
	// stored, and each adapter says so as it can (a 409).
	Different bool
}

// Submit is the one way a person's labels are stored: the answers and
// their turns checked against the project's rubric with the item's facts
// and the project's evidence policy, and scored, a
// calibration item's graded against its gold, then one store transaction
// (answers stored, assignment closed, the next claimed with in.Next, its
// workspace read with nextWorkspace). The rubric is read once. The store
// checks again, under its locks, that the assignment is the person's, of
// that project, and may be stored.
func (f *Flow) Submit(ctx context.Context, u *attune.User, h Held, in Input, nextWorkspace bool) (Submitted, error) {
	in = in.clean()
	def, err := f.db.FindRubricByID(ctx, h.Project.RubricVersionID)
	if err != nil {
		return Submitted{}, err
	}
	facts := FactsOf(h.Item)
	score, err := Check(def, facts, h.Project.Evidence(), in)
	if err != nil {
		return Submitted{}, err
	}
	sub := store.Submission{
		AssignmentID: h.AssignmentID, ProjectID: h.Project.ID, UserID: u.ID, Answers: in.Answers, Rationales: in.Rationales,
		Evidence: in.Evidence, Rationale: in.Rationale, ActiveMS: in.ActiveMS, ClaimNext: in.Next, NextWorkspace: in.Next && nextWorkspace,
		NoteRequired: facts.BehindNote(),
	}
	if h.Key != nil {
		g := calibration.GradeAnswers(def, h.Key.Gold, in.Answers, h.Key.PassPercent)
		sub.Graded = &store.GradedAnswers{Gold: h.Key.Gold, Matched: g.Matched, Compared: g.Compared, Passed: g.Passed}
	}
	res, err := f.db.SubmitLabels(ctx, sub)
	if err != nil {
		return Submitted{}, err
	}
	if h.Key != nil && res.Created {
		f.announceCalibrationAlert(ctx, def, h.Project, u, h.Key.PassPercent)
	}
	same := in
	if h.Key != nil {
		// A calibration answer keeps no turns (it is graded on its
		// answers alone): a retry is told apart by what was kept.
		same.Evidence = nil
	}
	return Submitted{SubmitResult: res, Score: score, Rubric: def, Different: !res.Created && !SameAsStored(res.Stored, same)}, nil
}

// SubmitAssignment is Find then Submit, for a caller that has only the
// assignment's id.
func (f *Flow) SubmitAssignment(ctx context.Context, u *attune.User, assignmentID int64, in Input) (Held, Submitted, error) {
	h, err := f.Find(ctx, u, assignmentID)
	if err != nil {
		return Held{}, Submitted{}, err
	}
	s, err := f.Submit(ctx, u, h, in, false)
	return h, s, err
}

// announceCalibrationAlert tells the project's webhooks when the calibration
// answer just stored is the one that raised an alert on this person (drift,
// or accuracy below the pass mark): once, when it starts, not on every
// later answer. The answer is stored already, so a failure here is logged,
// not returned: the person's submission succeeded.
func (f *Flow) announceCalibrationAlert(ctx context.Context, def *rubric.Definition, p *attune.Project, u *attune.User, passPercent int) {
	err := func() error {
		h, err := f.db.PersonCalibrationHistory(ctx, p.ID, u.ID)
		if err != nil || len(h.Records) == 0 {
			return err
		}
		now := calibration.Summarize(def, h.Records)
		what := now.Alert(passPercent)
		if what == "" || calibration.Summarize(def, h.Records[:len(h.Records)-1]).Alert(passPercent) != "" {
			return nil
		}
		return f.db.Announce(ctx, p.ID, attune.EventCalibrationAlert, map[string]any{
			"user_id": u.ID, "email": u.Email, "alert": what, "n": now.N, "accuracy": now.Accuracy,
			"leniency": now.Leniency, "drifting_on": now.DriftingOn, "pass_percent": passPercent,
		})
	}()
	if err != nil {
		f.log.ErrorContext(ctx, "calibration alert", "project", p.ID, "user", u.ID, "err", err)
	}
}

// Edited is what an edit did: the answers' new revision and the engine's
// score of them.
type Edited struct {
	Revision int
	Score    scoring.Result
}

// Edit is the one way a person changes their submitted labels for an item
// of project p, wk being the item with the person's assignment and answers
// as store.FindOwnItem reads it: checked and scored as a submission is,
// the earlier values kept in the history. The turns given replace the
// stored ones: an edit without them clears them. An item the person was never
// given (or gave back) is attune.ErrNotFound, as it is on the page; one
// they hold without having submitted it is ErrNothingToEdit.
func (f *Flow) Edit(ctx context.Context, u *attune.User, p *attune.Project, wk *store.Workspace, in Input) (Edited, error) {
	if wk.Answers == nil {
		if !Holds(wk) {
			return Edited{}, attune.NotFound("item")
		}
		return Edited{}, ErrNothingToEdit
	}
	in = in.clean()
	def, err := f.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return Edited{}, err
	}
	facts := FactsOf(&wk.Item)
	score, err := Check(def, facts, p.Evidence(), in)
	if err != nil {
		return Edited{}, err
	}
	_, rev, err := f.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: p.ID, ItemID: wk.Item.ID, UserID: u.ID,
		Answers: in.Answers, Rationales: in.Rationales, Evidence: in.Evidence, Rationale: in.Rationale, ActiveMS: in.ActiveMS,
		NoteRequired: facts.BehindNote()})
	if errors.Is(err, attune.ErrNotFound) {
		// The answers were read above; only a lead's removal of them
		// since leaves nothing to edit.
		return Edited{}, ErrNothingToEdit
	}
	if err != nil {
		return Edited{}, err
	}
	return Edited{Revision: rev, Score: score}, nil
}

// EditItem is Edit for a caller that has only the item's id; an item the
// project does not have is attune.ErrNotFound.
func (f *Flow) EditItem(ctx context.Context, u *attune.User, p *attune.Project, itemID int64, in Input) (Edited, error) {
	wk, err := f.db.FindOwnItem(ctx, p.ID, itemID, u.ID)
	if err != nil {
		return Edited{}, err
	}
	return f.Edit(ctx, u, p, wk, in)
}

// Holds reports whether the person of wk holds its item to label it: an
// assignment active, or lapsed but not given to someone else yet, and no
// answers stored. With their answers, it is what a person may see of a
// project's items.
func Holds(wk *store.Workspace) bool {
	return wk.Answers == nil && wk.Assignment != nil && (wk.Assignment.State == "active" || wk.Assignment.State == "expired")
}

// Skip gives the user's assignment back without labels, flagged for the
// leads or not (attune.CheckSkipFlag), with a note (CleanNote). A
// labelled item is store.ErrSkipLabelled; skipping again changes nothing.
func (f *Flow) Skip(ctx context.Context, u *attune.User, assignmentID int64, flag, note string) error {
	flag = strings.TrimSpace(flag)
	if err := attune.CheckSkipFlag(flag); err != nil {
		return err
	}
	return f.db.Skip(ctx, assignmentID, u.ID, flag, CleanNote(note))
}

// OpenNote records that the user opened the content note of an item of
// project projectID, one they were given or labelled (attune.ErrNotFound
// otherwise): from then on their answers to it may be stored. Opening
// again changes nothing.
func (f *Flow) OpenNote(ctx context.Context, u *attune.User, projectID, itemID int64) error {
	return f.db.OpenContentNote(ctx, projectID, itemID, u.ID)
}
