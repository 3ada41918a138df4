package judging

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/probes"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
)

// A judge's certification on a project: the alternative annotator test
// beside its robustness probes (docs/judges.md, "Robustness probes"), and
// the start of a probe. Only the project's leads with the global role lead
// see it, as they start runs.

func certificationPath(projectID, judgeID int64) string {
	return fmt.Sprintf("/projects/%d/judges/%d/certification", projectID, judgeID)
}

func probesPath(projectID, judgeID int64) string {
	return fmt.Sprintf("/projects/%d/judges/%d/probes", projectID, judgeID)
}

// certified is a judge's certification on a project: each prompt
// version's latest completed probe, with the report's judge items of the
// rater that stands for it.
type certified struct {
	version int
	result  *probes.Result
	items   []certifiedItem
}

type certifiedItem struct {
	key string
	ji  *report.JudgeItem // nil when the judge has no labels on it
}

// certification reads the judge's probes and the project's report.
func (s *Handler) certification(ctx context.Context, p *attune.Project, j *attune.Judge) ([]certified, []*attune.JudgeRun, error) {
	list, err := s.DB.ListProbes(ctx, p.ID, j.ID)
	if err != nil {
		return nil, nil, err
	}
	latest, err := probes.Latest(ctx, s.DB, p)
	if err != nil {
		return nil, nil, err
	}
	var out []certified
	var rep *report.Report
	for _, run := range list {
		res, ok := latest[run.RaterID]
		if !ok || res.Run.ID != run.ID {
			continue // not the latest completed of its version
		}
		if rep == nil {
			eps := p.Epsilon
			if eps == 0 {
				eps = report.DefaultEpsilon
			}
			if rep, err = report.Build(ctx, s.DB, p, report.Options{Alt: report.AltOptions{Epsilon: eps, AllowUnusualEpsilon: true}}); err != nil {
				return nil, nil, err
			}
		}
		c := certified{version: max(run.PromptVersion, 1), result: res}
		for k := range rep.RubricItems {
			it := &rep.RubricItems[k]
			ci := certifiedItem{key: it.Key}
			for i := range it.Judges {
				if it.Judges[i].Rater == run.RaterID {
					ci.ji = &it.Judges[i]
				}
			}
			c.items = append(c.items, ci)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b certified) int { return a.version - b.version })
	return out, list, nil
}

// CertificationPage shows the judge's certification and the probe form.
func (s *Handler) CertificationPage(w http.ResponseWriter, r *http.Request) error {
	p, _, j, err := s.promptAccess(r)
	if err != nil {
		return err
	}
	page, err := s.certificationView(r, p, j, judgeview.ProbeForm{})
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, judgeview.Certification(page))
	return nil
}

func (s *Handler) certificationView(r *http.Request, p *attune.Project, j *attune.Judge, form judgeview.ProbeForm) (judgeview.CertificationPage, error) {
	ctx := r.Context()
	cs, list, err := s.certification(ctx, p, j)
	if err != nil {
		return judgeview.CertificationPage{}, err
	}
	t, err := s.DB.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return judgeview.CertificationPage{}, err
	}
	page := judgeview.CertificationPage{
		Chrome: s.Chrome(r, "Certification of "+j.Name, "home"), JudgeName: j.Name, ProjectName: p.Name,
		ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), PromptsURL: templ.SafeURL(promptsPath(p.ID, j.ID)),
		StartURL: templ.SafeURL(probesPath(p.ID, j.ID)), Form: form, Thresholds: thresholdWords(t),
	}
	for _, c := range cs {
		v := judgeview.CertifiedVersion{Version: c.version, Probe: c.result.Run.ID, Items: c.result.Items, Unstable: strings.Join(c.result.Failed, ", ")}
		for _, it := range c.items {
			sub := c.result.Summary.For(it.key)
			row := judgeview.CertifiedRow{Key: it.key, Alt: "no labels of this judge", Class: "unknown"}
			row.Certification = row.Alt
			if it.ji != nil {
				row.Alt = report.AltWord(it.ji.AltTest)
				row.Certification = probe.Certify(it.ji.AltTest.Passed, row.Alt, &sub)
				switch {
				case row.Certification != row.Alt:
					row.Class = "unstable"
				case it.ji.AltTest.Passed:
					row.Class = "passed"
				case it.ji.AltTest.Result == "failed":
					row.Class = "failed"
				}
			}
			row.Probes = probeCells(sub)
			v.Rows = append(v.Rows, row)
		}
		page.Versions = append(page.Versions, v)
	}
	for _, run := range list {
		page.Probes = append(page.Probes, judgeview.ProbeRow{ID: run.ID, URL: templ.SafeURL(runPath(p.ID, run.ID)), Version: max(run.PromptVersion, 1),
			K: run.ProbeK, Status: string(run.Status), Reason: run.Reason, Created: stamp(run.CreatedAt)})
	}
	return page, nil
}

// thresholdWords says a project's probe thresholds.
func thresholdWords(t probe.Thresholds) string {
	return fmt.Sprintf("at most %s of the items change on a retest and %s move under a rewrite, on at least %d items; the judge's length slope within %s of the people's per doubling",
		strconv.FormatFloat(t.RetestChange, 'f', -1, 64), strconv.FormatFloat(t.PerturbMove, 'f', -1, 64), t.MinItems, strconv.FormatFloat(t.LengthSlope, 'f', -1, 64))
}

// probeCells are a rubric item's probes, in the order shown.
func probeCells(s probe.Summary) []judgeview.ProbeCell {
	class := func(v probe.Verdict) string {
		switch v {
		case probe.Stable:
			return "stable"
		case probe.Unstable:
			return "unstable"
		}
		return "unknown"
	}
	var out []judgeview.ProbeCell
	for _, r := range s.Retest {
		kappa := "κ undefined"
		if r.Kappa != nil {
			kappa = "κ " + strconv.FormatFloat(*r.Kappa, 'f', 2, 64)
		}
		out = append(out, judgeview.ProbeCell{Name: "retest", Figure: fmt.Sprintf("%d of %d changed, %s", r.Changed, r.Items, kappa), Verdict: string(r.Verdict), Class: class(r.Verdict)})
	}
	for _, r := range s.Perturbation {
		out = append(out, judgeview.ProbeCell{Name: r.Rewrite.Describe(), Figure: fmt.Sprintf("%d of %d moved", r.Moved, r.Items), Verdict: string(r.Verdict), Class: class(r.Verdict)})
	}
	for _, r := range s.Length {
		fig := r.Length.Reason
		if r.Length.Defined {
			fig = fmt.Sprintf("judge %+.2f, people %+.2f; difference %+.2f (%+.2f to %+.2f)", *r.Length.Judge, *r.Length.People, *r.Length.Difference, *r.Length.Low, *r.Length.High)
		}
		out = append(out, judgeview.ProbeCell{Name: "reply length", Figure: fig, Verdict: string(r.Verdict), Class: class(r.Verdict)})
	}
	return out
}

// StartProbe starts a probe of the judge from the certification page's
// form.
func (s *Handler) StartProbe(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, _, j, err := s.promptAccess(r)
	if err != nil {
		return err
	}
	form := judgeview.ProbeForm{K: r.PostFormValue("k"), Prompt: r.PostFormValue("prompt"), Budget: r.PostFormValue("budget")}
	refuse := func(errs map[string]string) error {
		form.Errors = errs
		page, err := s.certificationView(r, p, j, form)
		if err != nil {
			return err
		}
		s.Render(w, r, http.StatusUnprocessableEntity, judgeview.Certification(page))
		return nil
	}
	in, errs, err := s.runs.CheckProbe(ctx, p, runs.ProbeFields{Judge: strconv.FormatInt(j.ID, 10), K: form.K, Prompt: form.Prompt, Budget: form.Budget})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return refuse(errs)
	}
	run, err := s.runs.StartProbe(ctx, &kit.UserFrom(ctx).ID, p, in)
	if bad := kit.FieldErrors(err); len(bad) > 0 {
		return refuse(bad)
	}
	if errors.Is(err, attune.ErrConflict) {
		s.FlashError(ctx, attune.PublicMessage(err))
		http.Redirect(w, r, certificationPath(p.ID, j.ID), http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("Probe %d of %s is queued: it asks the %d calibration items %d times each and once per rewrite.", run.ID, j.Name, run.ItemsTotal, run.ProbeK))
	http.Redirect(w, r, certificationPath(p.ID, j.ID), http.StatusSeeOther)
	return nil
}

// APIProbes returns the judge's certification: every probe, the latest
// completed one of each prompt version with its results, and the report's
// alt-test word and certification per rubric item.
func (s *Handler) APIProbes(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, _, j, err := s.apiPromptsOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	cs, list, err := s.certification(ctx, p, j)
	if err != nil {
		return 0, nil, err
	}
	t, err := s.DB.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return 0, nil, err
	}
	type item struct {
		Key           string `json:"rubric_item"`
		AltTest       string `json:"alt_test"`
		Certification string `json:"certification"`
	}
	type version struct {
		Version int            `json:"prompt_version"`
		Result  *probes.Result `json:"probe"`
		Items   []item         `json:"rubric_items"`
	}
	type run struct {
		ID            int64            `json:"id"`
		PromptVersion int              `json:"prompt_version"`
		K             int              `json:"k"`
		Status        attune.RunStatus `json:"status"`
		Reason        string           `json:"reason,omitempty"`
	}
	out := struct {
		Thresholds probe.Thresholds `json:"thresholds"`
		Versions   []version        `json:"versions"`
		Probes     []run            `json:"probes"`
	}{Thresholds: t, Versions: []version{}, Probes: []run{}}
	for _, c := range cs {
		v := version{Version: c.version, Result: c.result, Items: []item{}}
		for _, it := range c.items {
			x := item{Key: it.key}
			if it.ji != nil {
				sub := c.result.Summary.For(it.key)
				x.AltTest = report.AltWord(it.ji.AltTest)
				x.Certification = probe.Certify(it.ji.AltTest.Passed, x.AltTest, &sub)
			}
			v.Items = append(v.Items, x)
		}
		out.Versions = append(out.Versions, v)
	}
	for _, r := range list {
		out.Probes = append(out.Probes, run{ID: r.ID, PromptVersion: max(r.PromptVersion, 1), K: r.ProbeK, Status: r.Status, Reason: r.Reason})
	}
	return http.StatusOK, out, nil
}

// APIStartProbe starts a probe of the judge: {"k": 3, "prompt_version": 1,
// "budget_usd": 2.5}, each optional.
func (s *Handler) APIStartProbe(r *http.Request, u *attune.User) (int, any, error) {
	p, _, j, err := s.apiPromptsOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		K      *int     `json:"k"`
		Prompt *int     `json:"prompt_version"`
		Budget *float64 `json:"budget_usd"`
	}
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	f := runs.ProbeFields{Judge: strconv.FormatInt(j.ID, 10)}
	if in.K != nil {
		f.K = strconv.Itoa(*in.K)
	}
	if in.Prompt != nil {
		f.Prompt = strconv.Itoa(*in.Prompt)
	}
	if in.Budget != nil {
		f.Budget = strconv.FormatFloat(*in.Budget, 'f', -1, 64)
	}
	checked, errs, err := s.runs.CheckProbe(r.Context(), p, f)
	if err != nil {
		return 0, nil, err
	}
	if len(errs) > 0 {
		return 0, nil, &attune.ValidationError{Fields: errs}
	}
	run, err := s.runs.StartProbe(r.Context(), &u.ID, p, checked)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, map[string]any{"id": run.ID, "status": run.Status, "k": run.ProbeK, "prompt_version": max(run.PromptVersion, 1), "items": run.ItemsTotal}, nil
}

// APIProbeThresholds sets the project's probe thresholds, any of
// retest_change, perturb_move, min_items and length_slope, the others
// kept; probe.Thresholds.Validate refuses what is out of range.
func (s *Handler) APIProbeThresholds(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "set its probe thresholds")
	if err != nil {
		return 0, nil, err
	}
	t, err := s.DB.ProbeThresholds(r.Context(), p.ID)
	if err != nil {
		return 0, nil, err
	}
	if err := kit.DecodeJSON(r, &t); err != nil {
		return 0, nil, err
	}
	if err := s.DB.SetProbeThresholds(r.Context(), &u.ID, p.ID, t); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, t, nil
}
