package reports

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/web/kit"
	rview "github.com/attune/attune/web/views/report"
)

func trustPath(projectID int64) string { return kit.ProjectPath(projectID) + "/trust" }

// TrustPage is trust routing for a project's leads: a judge's setting
// with its form, the rule on every rubric item and where routing left
// the items (internal/evaluation.TrustStatus). With no judge chosen it
// shows the first.
func (s *Handler) TrustPage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.APILeadProject(r, kit.UserFrom(r.Context()), "read where its judges may be trusted")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.trustView(r, p, q.Get("judge"))
	if err != nil {
		return err
	}
	if q.Get("done") != "" {
		page.Notice = q.Get("done")
	}
	status := http.StatusOK
	if page.Routing == nil && page.Problem != "" {
		status = http.StatusNotFound
	}
	s.Render(w, r, status, rview.TrustView(page))
	return nil
}

// trustView reads the page for the judge ("" for the first).
func (s *Handler) trustView(r *http.Request, p *attune.Project, judge string) (rview.TrustPage, error) {
	ctx := r.Context()
	page := rview.TrustPage{Chrome: s.Chrome(r, "Trust or escalate · "+p.Name, "home"),
		ProjectURL: kit.ProjectPath(p.ID), ProjectName: p.Name, ReportURL: kit.ProjectPath(p.ID) + "/report",
		FailuresURL: kit.ProjectPath(p.ID) + "/failures", ActionURL: trustPath(p.ID), RouteURL: trustPath(p.ID) + "/route",
		GoldURL: kit.ProjectPath(p.ID) + "/gold", Judge: judge}
	raters, err := s.DB.ListProjectRaters(ctx, p.ID)
	if err != nil {
		return page, err
	}
	for _, rt := range raters {
		if rt.Kind == "judge" {
			page.Judges = append(page.Judges, rview.Choice{Value: strconv.FormatInt(rt.ID, 10), Label: rt.Name})
		}
	}
	if len(page.Judges) == 0 {
		return page, nil
	}
	if page.Judge == "" {
		page.Judge = page.Judges[0].Value
	}
	t, err := evaluation.TrustStatus(ctx, s.DB, p.ID, page.Judge)
	switch {
	case err == nil:
		page.Routing = &t
	case errors.Is(err, attune.ErrNotFound), errors.Is(err, attune.ErrInvalid):
		page.Problem = attune.PublicMessage(err)
	default:
		return page, err
	}
	return page, nil
}

// SetTrust is the trust page's form: the lead's terms, and routing on
// (which routes at once) or off. A refused term re-renders the form with
// 422; otherwise it redirects to the page, saying what routing did.
func (s *Handler) SetTrust(w http.ResponseWriter, r *http.Request) error {
	return s.trustForm(w, r, false)
}

// RouteTrust is the trust page's "route again": the rule calibrated on
// the labels there are now, and every item routed again.
func (s *Handler) RouteTrust(w http.ResponseWriter, r *http.Request) error {
	return s.trustForm(w, r, true)
}

func (s *Handler) trustForm(w http.ResponseWriter, r *http.Request, again bool) error {
	u := kit.UserFrom(r.Context())
	p, err := s.APILeadProject(r, u, "decide where its judges may be trusted")
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return attune.Invalid("form", "could not be read")
	}
	f := r.PostForm
	judge := f.Get("judge")
	var res evaluation.TrustRouting
	if again {
		res, err = evaluation.RouteTrust(r.Context(), s.DB, p.ID, judge, &u.ID)
	} else {
		var target, alpha float64
		if target, alpha, err = evaluation.ParseTrustTerms(f.Get("target"), f.Get("alpha")); err == nil {
			res, err = evaluation.SetTrustRouting(r.Context(), s.DB, evaluation.TrustChange{
				ProjectID: p.ID, ActorID: &u.ID, Judge: judge, Target: target, Alpha: alpha, On: f.Get("on") == "on"})
		}
	}
	var v *attune.ValidationError
	if errors.As(err, &v) || errors.Is(err, attune.ErrConflict) {
		page, perr := s.trustView(r, p, judge)
		if perr != nil {
			return perr
		}
		page.Target, page.Alpha = f.Get("target"), f.Get("alpha")
		if v != nil {
			page.Errors = v.Fields
		} else {
			page.Problem = attune.PublicMessage(err)
		}
		status := http.StatusUnprocessableEntity
		if v == nil {
			status = http.StatusConflict
		}
		s.Render(w, r, status, rview.TrustView(page))
		return nil
	}
	if err != nil {
		return err
	}
	done := "Trust routing is off."
	switch {
	case res.Routed != nil && !res.Guaranteed:
		done = "Trust routing is on, but no threshold is guaranteed on every rubric item: nothing was routed."
	case res.Routed != nil:
		done = "Routed: " + strconv.Itoa(res.Routed.Kept) + " items kept by the judge, " + strconv.Itoa(res.Routed.Escalated) + " escalated to people."
	}
	back := url.Values{"judge": {judge}, "done": {done}}
	http.Redirect(w, r, trustPath(p.ID)+"?"+back.Encode(), http.StatusSeeOther)
	return nil
}

// APITrustRouting is a judge's trust routing as JSON for a project's
// leads: the setting, the rule on every rubric item and the routes.
func (s *Handler) APITrustRouting(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read where its judges may be trusted")
	if err != nil {
		return 0, nil, err
	}
	res, err := evaluation.TrustStatus(r.Context(), s.DB, p.ID, r.URL.Query().Get("judge"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, res, nil
}

// APISetTrustRouting sets a judge's trust routing: {"judge", "on",
// "target", "alpha"}, the terms optional (left out, the stored ones or
// the defaults). Turning it on routes at once.
func (s *Handler) APISetTrustRouting(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "decide where its judges may be trusted")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Judge  string   `json:"judge"`
		On     *bool    `json:"on"`
		Target *float64 `json:"target"`
		Alpha  *float64 `json:"alpha"`
	}
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.On == nil {
		return 0, nil, attune.Invalid("on", "say whether routing is on: true or false")
	}
	c := evaluation.TrustChange{ProjectID: p.ID, ActorID: &u.ID, Judge: in.Judge, On: *in.On}
	for _, t := range []struct {
		v     *float64
		field string
		to    *float64
	}{{in.Target, evaluation.FieldTarget, &c.Target}, {in.Alpha, evaluation.FieldAlpha, &c.Alpha}} {
		if t.v == nil {
			continue
		}
		if !(*t.v > 0 && *t.v < 1) {
			return 0, nil, attune.Invalid(t.field, "give a share between 0 and 1 (exclusive)")
		}
		*t.to = *t.v
	}
	res, err := evaluation.SetTrustRouting(r.Context(), s.DB, c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, res, nil
}

// APIRouteTrust routes again: {"judge"}. Routing must be on.
func (s *Handler) APIRouteTrust(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "decide where its judges may be trusted")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		Judge string `json:"judge"`
	}
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	res, err := evaluation.RouteTrust(r.Context(), s.DB, p.ID, in.Judge, &u.ID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, res, nil
}
