package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
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

func (s *Server) goldPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	page, err := s.goldSetView(r, p)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, goldview.SetView(page))
	return nil
}

// applyConsensus applies the consensus rule to the items it has not judged
// as they are now, and says what it did.
func (s *Server) applyConsensus(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	res, err := s.db.ApplyConsensus(ctx, p.ID, store.ConsensusOptions{ActorID: &userFrom(ctx).ID})
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, consensusMessage(res))
	back := goldPath(p.ID)
	if r.PostFormValue("back") == "queue" {
		back = queuePath(p.ID)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

func consensusMessage(res store.ConsensusResult) string {
	if res.Items == 0 {
		return "The consensus rule had nothing new to judge."
	}
	return fmt.Sprintf("The consensus rule judged %d %s: %d got gold by the rule, %d %s for a lead.",
		res.Items, plural(res.Items, "item", "items"), res.Automatic, res.Queued, plural(res.Queued, "waits", "wait"))
}

// goldSettings saves the project's maximum spread and applies the rule
// again under it.
func (s *Server) goldSettings(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxGoldForm)
	typed := strings.TrimSpace(r.PostFormValue("max_spread"))
	spread, problem := gold.ParseMaxSpread(typed)
	if problem != "" {
		page, err := s.goldSetView(r, p)
		if err != nil {
			return err
		}
		page.MaxSpread = typed
		page.SpreadError = capitalize(problem) + "."
		s.render(w, r, http.StatusUnprocessableEntity, goldview.SetView(page))
		return nil
	}
	actor := userFrom(ctx).ID
	if err := s.db.SetGoldMaxSpread(ctx, &actor, p.ID, spread); err != nil {
		return err
	}
	res, err := s.db.ApplyConsensus(ctx, p.ID, store.ConsensusOptions{ActorID: &actor})
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, fmt.Sprintf("The maximum spread is %d. %s", spread, consensusMessage(res)))
	http.Redirect(w, r, goldPath(p.ID), http.StatusSeeOther)
	return nil
}

func (s *Server) disagreementsPage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	page, err := s.queueView(r, p)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, goldview.QueueView(page))
	return nil
}

func (s *Server) adjudicatePage(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	itemID, err := pathInt(r, "item")
	if err != nil {
		return err
	}
	page, err := s.adjudicationView(r, p, itemID, nil, nil)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, goldview.ItemView(page))
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
	in.note = textarea(r.PostFormValue("note"))
	in.accept = r.PostFormValue("consensus") == "accept"
	in.confirm = r.PostFormValue("confirm") != ""
	return in, nil
}

// saveGold stores a lead's gold for an item (storeGold) and moves on to
// the next disagreement; gold refused or needing confirmation shows the
// adjudication page again with the rubric's messages.
func (s *Server) saveGold(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	itemID, err := pathInt(r, "item")
	if err != nil {
		return err
	}
	in, err := readGoldForm(w, r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	item, err := s.storeGold(r, p, userFrom(ctx), itemID, in)
	if lp := (*labelProblems)(nil); errors.As(err, &lp) {
		page, err := s.adjudicationView(r, p, itemID, &in, lp.Issues)
		if err != nil {
			return err
		}
		s.render(w, r, http.StatusUnprocessableEntity, goldview.ItemView(page))
		return nil
	}
	if err != nil {
		return err
	}
	next, err := s.db.NextDisagreement(ctx, p.ID, itemID)
	switch {
	case errors.Is(err, attune.ErrNotFound):
		s.sessions.Put(ctx, sessionFlash, "Saved the gold of "+item.SourceID+". No other disagreement waits.")
		http.Redirect(w, r, queuePath(p.ID), http.StatusSeeOther)
		return nil
	case err != nil:
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Saved the gold of "+item.SourceID+". Here is the next disagreement.")
	http.Redirect(w, r, adjudicatePath(p.ID, next), http.StatusSeeOther)
	return nil
}

// storeGold stores a lead's gold for an item, for the page and the API
// alike: every rubric item answered with a value the rubric allows there,
// checked with the item's facts as a person's answers are (NA is refused
// where the rubric forbids it); the rubric's warnings need confirming.
// Accepting the consensus fills in the consensus of every rubric item that
// has one. Gold refused or awaiting confirmation is a *labelProblems and
// stores nothing.
func (s *Server) storeGold(r *http.Request, p *attune.Project, u *attune.User, itemID int64, in goldInput) (*attune.Item, error) {
	ctx := r.Context()
	item, err := s.db.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return nil, err
	}
	def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	facts := factsOf(item)
	decision, err := s.decisionOn(r, p, def, facts, itemID)
	if err != nil {
		return nil, err
	}
	if in.accept {
		for _, ic := range decision.Items {
			if ic.Decided {
				in.answers[ic.Key] = string(ic.Value)
			}
		}
	}
	issues := def.Validate(toAnswers(in.answers), facts, rubric.Options{})
	if p := gold.NoteProblem(in.note); p != "" {
		issues = append(issues, rubric.Issue{Item: "note", Severity: rubric.Blocking, Message: capitalize(p) + "."})
	}
	switch verdict, shown := issues.Verdict(in.confirm); verdict {
	case rubric.Refused:
		return nil, &labelProblems{Issues: shown}
	case rubric.NeedsConfirmation:
		return nil, &labelProblems{Issues: shown, NeedsConfirm: true}
	}
	var accepted []string
	for _, ic := range decision.Items {
		if ic.Decided && in.answers[ic.Key] == string(ic.Value) {
			accepted = append(accepted, ic.Key)
		}
	}
	return item, s.db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: itemID, ActorID: u.ID,
		Answers: in.answers, Accepted: accepted, Note: in.note})
}

// decisionOn applies the consensus rule to an item's answers as they are
// now, for the page and its post alike: what the rule would say, whether
// or not it last judged the item.
func (s *Server) decisionOn(r *http.Request, p *attune.Project, def *rubric.Definition, facts rubric.Facts, itemID int64) (gold.Decision, error) {
	ctx := r.Context()
	sets, err := s.db.ItemAnswerSets(ctx, p.ID, itemID)
	if err != nil {
		return gold.Decision{}, err
	}
	spread, err := s.db.GoldMaxSpread(ctx, p.ID)
	if err != nil {
		return gold.Decision{}, err
	}
	return gold.Decide(def, facts, humanAnswers(sets), spread), nil
}

// humanAnswers are the people's answer sets: the votes of the consensus.
func humanAnswers(sets []store.ItemAnswerSet) []rubric.Answers {
	var out []rubric.Answers
	for _, a := range sets {
		if a.Kind == "human" {
			out = append(out, toAnswers(a.Answers))
		}
	}
	return out
}
