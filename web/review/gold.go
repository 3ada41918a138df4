package review

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/web/kit"
	goldview "github.com/attune/attune/web/views/gold"
)

// queuePageSize is how many disagreements a page of the queue lists.
const queuePageSize = 50

// maxGoldForm bounds the adjudication and settings forms.
const maxGoldForm = 1 << 20

func goldPath(projectID int64) string  { return fmt.Sprintf("/projects/%d/gold", projectID) }
func queuePath(projectID int64) string { return fmt.Sprintf("/projects/%d/disagreements", projectID) }
func adjudicatePath(projectID, itemID int64) string {
	return fmt.Sprintf("/projects/%d/disagreements/%d", projectID, itemID)
}

// GoldPage shows the project's gold set to its leads: the counts, the
// consensus rule's setting and the exports.
func (s *Handler) GoldPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	page, err := s.goldSetView(r, p)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, goldview.SetView(page))
	return nil
}

// ApplyConsensus applies the consensus rule to the items it has not judged
// as they are now (adjudication.Flow.ApplyConsensus), and says what it did.
func (s *Handler) ApplyConsensus(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	res, err := s.adjudication.ApplyConsensus(ctx, p.ID, &kit.UserFrom(ctx).ID, false)
	if err != nil {
		return err
	}
	s.Flash(ctx, res.Message())
	back := goldPath(p.ID)
	if r.PostFormValue("back") == "queue" {
		back = queuePath(p.ID)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// GoldSettings saves the project's maximum spread and applies the rule
// again under it (adjudication.Flow.SetMaxSpread).
func (s *Handler) GoldSettings(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxGoldForm)
	typed := strings.TrimSpace(r.PostFormValue("max_spread"))
	res, err := s.setMaxSpread(ctx, p.ID, typed)
	if ve := (*attune.ValidationError)(nil); errors.As(err, &ve) && ve.Fields[adjudication.SpreadField] != "" {
		page, err := s.goldSetView(r, p)
		if err != nil {
			return err
		}
		page.MaxSpread = typed
		page.SpreadError = ve.Fields[adjudication.SpreadField]
		s.Render(w, r, http.StatusUnprocessableEntity, goldview.SetView(page))
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, res.Message())
	http.Redirect(w, r, goldPath(p.ID), http.StatusSeeOther)
	return nil
}

// setMaxSpread is the settings form's spread, as typed, set by the flow.
func (s *Handler) setMaxSpread(ctx context.Context, projectID int64, typed string) (adjudication.Consensus, error) {
	spread, err := adjudication.ParseMaxSpread(typed)
	if err != nil {
		return adjudication.Consensus{}, err
	}
	return s.adjudication.SetMaxSpread(ctx, projectID, &kit.UserFrom(ctx).ID, spread, false)
}

// DisagreementsPage is the queue of the items the consensus rule leaves
// to a lead, worst first, a page at a time.
func (s *Handler) DisagreementsPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	page, err := s.queueView(r, p)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, goldview.QueueView(page))
	return nil
}

// AdjudicatePage is one item of the queue with every rater's answers and
// the gold form.
func (s *Handler) AdjudicatePage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	page, err := s.adjudicationView(r, p, itemID, nil, nil)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, goldview.ItemView(page))
	return nil
}

// goldInput is the gold form as posted.
type goldInput struct {
	answers map[string]string // rubric item key → value
	note    string
	// accept takes the consensus on every rubric item that has one.
	accept  bool
	confirm bool
}

// flowInput is the form as the flow takes it.
func (in goldInput) flowInput() adjudication.Input {
	return adjudication.Input{Answers: in.answers, Note: in.note, AcceptConsensus: in.accept, ConfirmWarnings: in.confirm}
}

func readGoldForm(w http.ResponseWriter, r *http.Request) (goldInput, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxGoldForm)
	if err := r.ParseForm(); err != nil {
		return goldInput{}, attune.Invalid("form", "the form could not be read; reload the page and try again")
	}
	in := goldInput{answers: map[string]string{}}
	for k, vs := range r.PostForm {
		if key, ok := strings.CutPrefix(k, "answer."); ok && len(vs) > 0 {
			if v := strings.TrimSpace(vs[0]); v != "" {
				in.answers[key] = v
			}
		}
	}
	in.note = labeling.CleanNote(r.PostFormValue("note"))
	in.accept = r.PostFormValue("consensus") == "accept"
	in.confirm = r.PostFormValue("confirm") != ""
	return in, nil
}

// SaveGold stores a lead's gold for an item (adjudication.Flow.Adjudicate) and moves on to
// the next disagreement; gold refused or needing confirmation shows the
// adjudication page again with the rubric's messages.
func (s *Handler) SaveGold(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	in, err := readGoldForm(w, r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	g, err := s.adjudication.Adjudicate(ctx, p, kit.UserFrom(ctx).ID, itemID, in.flowInput())
	if lp := (*labeling.Problems)(nil); errors.As(err, &lp) {
		// The form again as it was checked: with the consensus filled in
		// where it was accepted.
		in.answers, in.note = g.Answers, g.Note
		page, err := s.adjudicationView(r, p, itemID, &in, lp.Issues)
		if err != nil {
			return err
		}
		s.Render(w, r, http.StatusUnprocessableEntity, goldview.ItemView(page))
		return nil
	}
	if err != nil {
		return err
	}
	next, err := s.DB.NextDisagreement(ctx, p.ID, itemID)
	switch {
	case errors.Is(err, attune.ErrNotFound):
		s.Flash(ctx, "Saved the gold of "+g.Item.SourceID+". No other disagreement waits.")
		http.Redirect(w, r, queuePath(p.ID), http.StatusSeeOther)
		return nil
	case err != nil:
		return err
	}
	s.Flash(ctx, "Saved the gold of "+g.Item.SourceID+". Here is the next disagreement.")
	http.Redirect(w, r, adjudicatePath(p.ID, next), http.StatusSeeOther)
	return nil
}
