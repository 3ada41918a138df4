package web

import (
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/ppi"
)

// apiEstimates is the prediction-powered estimates of one rubric item per
// system (docs/estimates.md), for the project's leads: the figures
// `attune estimate` prints, from the same read and the same assembly.
func (s *Server) apiEstimates(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.apiLeadProject(r, u, "read its estimates")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	judge, item, systemKey := q.Get("judge"), q.Get("rubric_item"), q.Get("system_key")
	switch {
	case judge == "":
		return 0, nil, attune.Invalid("judge", "name the judge: a rater id or a judge's name")
	case q.Get("outcome") != "":
		return 0, nil, attune.Invalid("outcome", "estimates of the engine's outputs are not available yet; ask for a rubric_item")
	case item == "":
		return 0, nil, attune.Invalid("rubric_item", "name the rubric item to estimate, by key")
	}
	if systemKey == "" {
		systemKey = "system"
	}
	rows, err := s.db.EstimateRubricItem(r.Context(), p.ID, judge, item, systemKey)
	if err != nil {
		return 0, nil, err
	}
	rated := make([]ppi.Rated, len(rows))
	for i, row := range rows {
		rated[i] = ppi.Rated{System: row.System, Judge: row.Judge, Human: row.Human, Labelled: row.Labelled}
	}
	est, err := ppi.BySystem(rated, ppi.Options{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, est, nil
}
