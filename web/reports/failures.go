package reports

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/failmap"
	"github.com/attune/attune/web/kit"
	rview "github.com/attune/attune/web/views/report"
)

// FailuresPage is the failure map for a project's leads: a judge's
// agreement with people on one rubric item, broken down by the kind of
// item, from the flow `attune failures` and the API call
// (internal/evaluation.Failures). With no judge or rubric item chosen yet
// it shows the choice with the first of each.
func (s *Handler) FailuresPage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.APILeadProject(r, kit.UserFrom(r.Context()), "read where its judges part from people")
	if err != nil {
		return err
	}
	ctx := r.Context()
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	raters, err := s.DB.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return err
	}
	page := rview.FailuresPage{Chrome: s.Chrome(r, "Where the judge fails · "+p.Name, "home"),
		ProjectURL: kit.ProjectPath(p.ID), ProjectName: p.Name, ReportURL: kit.ProjectPath(p.ID) + "/report"}
	for _, rt := range raters {
		if rt.Kind == "judge" {
			page.Judges = append(page.Judges, rview.Choice{Value: strconv.FormatInt(rt.ID, 10), Label: rt.Name})
		}
	}
	for _, it := range def.Items {
		page.Items = append(page.Items, rview.Choice{Value: it.Key, Label: it.Key + " · " + it.Label})
	}
	q := r.URL.Query()
	page.Judge, page.Item = q.Get("judge"), q.Get("rubric_item")
	if page.Judge == "" && len(page.Judges) > 0 {
		page.Judge = page.Judges[0].Value
	}
	if page.Item == "" && len(page.Items) > 0 {
		page.Item = page.Items[0].Value
	}
	status := http.StatusOK
	if len(page.Judges) == 0 {
		s.Render(w, r, status, rview.FailuresView(page))
		return nil
	}
	page.Target, page.Alpha = q.Get("target"), q.Get("alpha")
	m, err := evaluation.Failures(ctx, s.DB, evaluation.FailureQuery{ProjectID: p.ID, Judge: page.Judge, RubricItem: page.Item, SystemKey: p.SystemKeyOr("")})
	if err == nil {
		var target, alpha float64
		if target, alpha, err = evaluation.ParseTrustTerms(page.Target, page.Alpha); err == nil {
			var t evaluation.TrustResult
			t, err = evaluation.Trust(ctx, s.DB, evaluation.TrustQuery{ProjectID: p.ID, Judge: page.Judge, RubricItem: page.Item, Target: target, Alpha: alpha})
			page.Trust = &t
		}
	}
	switch {
	case err == nil:
		page.Map = &m
	case errors.Is(err, attune.ErrNotFound):
		status, page.Problem = http.StatusNotFound, attune.PublicMessage(err)
	case errors.Is(err, attune.ErrInvalid):
		status, page.Problem = http.StatusUnprocessableEntity, attune.PublicMessage(err)
	default:
		return err
	}
	s.Render(w, r, status, rview.FailuresView(page))
	return nil
}

// APIFailures is the failure map as JSON for a project's leads.
func (s *Handler) APIFailures(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read where its judges part from people")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	m, err := evaluation.Failures(r.Context(), s.DB, evaluation.FailureQuery{
		ProjectID: p.ID, Judge: q.Get("judge"), RubricItem: q.Get("rubric_item"), SystemKey: p.SystemKeyOr(q.Get("system_key")),
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, failuresJSON{RubricItem: q.Get("rubric_item"), Map: m}, nil
}

// failuresJSON is the API's failure map: the rubric item it maps and its
// bands.
type failuresJSON struct {
	RubricItem string `json:"rubric_item"`
	failmap.Map
}

// APITrust is trust or escalate for a project's leads: the confidence
// threshold above which a judge's agreement with people on a rubric item
// is guaranteed at the lead's terms, and what it would keep.
func (s *Handler) APITrust(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read where its judges may be trusted")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	target, alpha, err := evaluation.ParseTrustTerms(q.Get("target"), q.Get("alpha"))
	if err != nil {
		return 0, nil, err
	}
	res, err := evaluation.Trust(r.Context(), s.DB, evaluation.TrustQuery{
		ProjectID: p.ID, Judge: q.Get("judge"), RubricItem: q.Get("rubric_item"), Target: target, Alpha: alpha,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, res, nil
}
