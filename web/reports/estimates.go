package reports

import (
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/evaluation"
)

// APIEstimates is the prediction-powered estimates of one rubric item or
// engine output per system (docs/estimates.md), for the project's leads: the figures
// `attune estimate` prints, from the same read and the same assembly.
func (s *Handler) APIEstimates(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read its estimates")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	est, err := evaluation.Estimate(r.Context(), s.DB, evaluation.Query{
		ProjectID: p.ID, Judge: q.Get("judge"), RubricItem: q.Get("rubric_item"),
		Outcome: q.Get("outcome"), Human: q.Get("human"), SystemKey: q.Get("system_key"),
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, est, nil
}
