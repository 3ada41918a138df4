package annotate

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/web/kit"
	aview "github.com/attune/attune/web/views/annotate"
)

func feedbackPath(projectID, itemID int64) string {
	return fmt.Sprintf("/projects/%d/items/%d/feedback", projectID, itemID)
}

// toFeedback sends the annotator to the feedback on the practice item they
// just answered: htmx navigates to it, a form post is redirected.
func (ws *Handler) toFeedback(w http.ResponseWriter, r *http.Request, p *attune.Project, itemID int64) error {
	if kit.IsHX(r) {
		w.Header().Set("HX-Redirect", feedbackPath(p.ID, itemID))
		w.WriteHeader(http.StatusOK)
		return nil
	}
	http.Redirect(w, r, feedbackPath(p.ID, itemID), http.StatusSeeOther)
	return nil
}

// Feedback shows the annotator how their answer to a practice item compares
// with gold: only for an answer given while they qualified. Any other item
// (a real one, or a calibration item served after qualifying, which stays
// unmarked) sends them to the item's page.
func (ws *Handler) Feedback(w http.ResponseWriter, r *http.Request) error {
	p, err := ws.annotator(r, false)
	if err != nil {
		return err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	ctx := r.Context()
	c, err := ws.DB.FindCalibrationAnswer(ctx, p.ID, itemID, kit.UserFrom(ctx).ID)
	if errors.Is(err, attune.ErrNotFound) || err == nil && !(c.Qualify > 0 && c.PassedBefore < c.Qualify) {
		http.Redirect(w, r, itemPath(p.ID, itemID), http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	def, err := ws.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	// Graded again as it was graded when stored: against the gold kept
	// with the answer, under the pass mark of now.
	g := calibration.GradeAnswers(def, c.Gold, c.Answers, c.PassPercent)
	f := calibration.FeedbackFor(def, g, c.Explanations)
	page := aview.FeedbackPage{Matched: g.Matched, Compared: g.Compared, Passed: g.Passed, PassPercent: c.PassPercent,
		PassedNow: c.PassedBefore, Qualify: c.Qualify, Continue: templ.SafeURL(annotatePath(p.ID))}
	if g.Passed {
		page.PassedNow++
	}
	for _, it := range f.Items {
		page.Items = append(page.Items, aview.FeedbackItem{Key: it.Key, Label: it.Label, Given: it.Given, Gold: it.Gold,
			Match: it.Match, ChosenText: it.ChosenText, GoldText: it.GoldText, Explanation: it.Explanation})
	}
	ws.renderPart(w, r, http.StatusOK, "Feedback · "+p.Name, aview.Feedback(page))
	return nil
}
