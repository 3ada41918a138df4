package web

import (
	"context"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

// labelInput is one person's answers for one item, as the annotator's page
// and the API both receive them.
type labelInput struct {
	Answers         map[string]string
	Rationales      map[string]string
	Rationale       string
	ActiveMS        int64
	ConfirmWarnings bool // the person has seen the rubric's warnings and stands by the answers
	Next            bool // also claim the next item
}

// labelProblems is a submission the rubric refuses (errors) or that needs
// the person to confirm the rubric's warnings first. It matches
// attune.ErrInvalid.
type labelProblems struct {
	Issues rubric.Issues
	// NeedsConfirm is true when the only problems are warnings.
	NeedsConfirm bool
}

func (p *labelProblems) Error() string {
	var msgs []string
	for _, is := range p.Issues {
		msgs = append(msgs, is.Message)
	}
	if p.NeedsConfirm {
		return "please confirm: " + strings.Join(msgs, "; ")
	}
	return strings.Join(msgs, "; ")
}

func (p *labelProblems) Is(target error) bool { return target == attune.ErrInvalid }

// checkLabels validates answers against the project's rubric version as a
// person's (ERROR is a judge's value only) and scores them. Errors always
// block; warnings block until confirmed.
func (s *Server) checkLabels(ctx context.Context, p *attune.Project, item *attune.Item, in labelInput) (scoring.Result, error) {
	def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return scoring.Result{}, err
	}
	answers := rubric.Answers{}
	for k, v := range in.Answers {
		answers[k] = rubric.Value(v)
	}
	facts := factsOf(item)
	switch verdict, issues := def.Validate(answers, facts, rubric.Options{}).Verdict(in.ConfirmWarnings); verdict {
	case rubric.Refused:
		return scoring.Result{}, &labelProblems{Issues: issues}
	case rubric.NeedsConfirmation:
		return scoring.Result{}, &labelProblems{Issues: issues, NeedsConfirm: true}
	}
	for k := range in.Rationales {
		if _, ok := def.Item(k); !ok {
			return scoring.Result{}, attune.Invalid("rationales", fmt.Sprintf("%s has no item %q", def.Ref(), k))
		}
	}
	return scoring.Score(def, answers, facts)
}

// factsOf are the facts of an item every path checks and scores answers
// with, as rubric.FactsOf works them out from the item's turns, messages
// and the lead's mark.
func factsOf(item *attune.Item) rubric.Facts {
	texts := make([]string, len(item.Messages))
	for i, m := range item.Messages {
		texts[i] = m.Content
	}
	return rubric.FactsOf(item.Turns, texts, item.Sensitive)
}

// behindNote reports whether an item with these facts is announced with a
// content note, and so answered only once its annotator opened the note:
// when crisis is signalled (a word of the wellbeing list, or a lead's
// mark). The page, the form post and the API all decide it here.
func behindNote(f rubric.Facts) bool { return f.Crisis == rubric.Signalled }

// cleanAnswers trims answers and drops empty ones: an empty form field is
// no answer.
func cleanAnswers(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if v = strings.TrimSpace(v); v != "" {
			out[k] = v
		}
	}
	return out
}

// submitLabels is the one way a person's labels are stored, behind the
// annotator's page and the API alike: validate against the rubric, then
// one store transaction (answers stored, assignment closed, next claimed).
func (s *Server) submitLabels(ctx context.Context, u *attune.User, assignmentID int64, in labelInput) (store.SubmitResult, scoring.Result, error) {
	in.Answers = cleanAnswers(in.Answers)
	a, key, err := s.db.FindAssignmentKey(ctx, assignmentID, u.ID)
	if err != nil {
		return store.SubmitResult{}, scoring.Result{}, err
	}
	p, err := s.db.FindProjectByID(ctx, a.ProjectID)
	if err != nil {
		return store.SubmitResult{}, scoring.Result{}, err
	}
	item, err := s.db.FindItem(ctx, a.ProjectID, a.ItemID)
	if err != nil {
		return store.SubmitResult{}, scoring.Result{}, err
	}
	return s.submitLoaded(ctx, u, p, item, assignmentID, key, in, false)
}

// submitLoaded is submitLabels for a caller that loaded the assignment's
// project and item already (the store checks again, under its locks, that
// the assignment is the person's, of that project, and may be stored).
// With nextWorkspace, the next item's workspace is read with it, right
// after the claim commits. key is the gold of a calibration item (nil for
// a real one): its answers, checked the same way, are graded against it
// by package calibration and kept apart from labels.
func (s *Server) submitLoaded(ctx context.Context, u *attune.User, p *attune.Project, item *attune.Item, assignmentID int64, key *store.CalibrationKey, in labelInput, nextWorkspace bool) (store.SubmitResult, scoring.Result, error) {
	in.Answers = cleanAnswers(in.Answers)
	score, err := s.checkLabels(ctx, p, item, in)
	if err != nil {
		return store.SubmitResult{}, scoring.Result{}, err
	}
	sub := store.Submission{
		AssignmentID: assignmentID, ProjectID: p.ID, UserID: u.ID, Answers: in.Answers, Rationales: in.Rationales,
		Rationale: in.Rationale, ActiveMS: in.ActiveMS, ClaimNext: in.Next, NextWorkspace: in.Next && nextWorkspace,
		NoteRequired: behindNote(factsOf(item)),
	}
	if key != nil {
		def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
		if err != nil {
			return store.SubmitResult{}, scoring.Result{}, err
		}
		g := calibration.GradeAnswers(def, key.Gold, in.Answers, key.PassPercent)
		sub.Graded = &store.GradedAnswers{Gold: key.Gold, Matched: g.Matched, Compared: g.Compared, Passed: g.Passed}
	}
	res, err := s.db.SubmitLabels(ctx, sub)
	if err == nil && key != nil && res.Created {
		s.announceCalibrationAlert(ctx, p, u, key.PassPercent)
	}
	return res, score, err
}

// announceCalibrationAlert tells the project's webhooks when the calibration
// answer just stored is the one that raised an alert on this person (drift,
// or accuracy below the pass mark): once, when it starts, not on every
// later answer. The answer is stored already, so a failure here is logged,
// not returned: the person's submission succeeded.
func (s *Server) announceCalibrationAlert(ctx context.Context, p *attune.Project, u *attune.User, passPercent int) {
	err := func() error {
		h, err := s.db.PersonCalibrationHistory(ctx, p.ID, u.ID)
		if err != nil || len(h.Records) == 0 {
			return err
		}
		def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
		if err != nil {
			return err
		}
		now := calibration.Summarize(def, h.Records)
		what := now.Alert(passPercent)
		if what == "" || calibration.Summarize(def, h.Records[:len(h.Records)-1]).Alert(passPercent) != "" {
			return nil
		}
		return s.db.Announce(ctx, p.ID, attune.EventCalibrationAlert, map[string]any{
			"user_id": u.ID, "email": u.Email, "alert": what, "n": now.N, "accuracy": now.Accuracy,
			"leniency": now.Leniency, "drifting_on": now.DriftingOn, "pass_percent": passPercent,
		})
	}()
	if err != nil {
		s.log.ErrorContext(ctx, "calibration alert", "project", p.ID, "user", u.ID, "err", err)
	}
}

// updateLabels is the one way a person edits their submitted labels.
func (s *Server) updateLabels(ctx context.Context, u *attune.User, p *attune.Project, itemID int64, in labelInput) (int, scoring.Result, error) {
	in.Answers = cleanAnswers(in.Answers)
	item, err := s.db.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return 0, scoring.Result{}, err
	}
	score, err := s.checkLabels(ctx, p, item, in)
	if err != nil {
		return 0, scoring.Result{}, err
	}
	_, rev, err := s.db.UpdateLabels(ctx, store.LabelEdit{ProjectID: p.ID, ItemID: itemID, UserID: u.ID,
		Answers: in.Answers, Rationales: in.Rationales, Rationale: in.Rationale, ActiveMS: in.ActiveMS,
		NoteRequired: behindNote(factsOf(item))})
	return rev, score, err
}
