package reports

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/ppi"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	sview "github.com/attune/attune/web/views/systems"
)

// Defaults of the budget preview: the k a lead sees first and the margin,
// in the rubric item's units (a share of YES, or points on 1–5).
const (
	previewK      = 20
	previewMargin = "0.5"
	// separatePower is the power LabelsToSeparate plans for.
	separatePower = 0.8
)

// systemsQuery is what the systems view shows: a judge, a rubric item and
// the meta key naming systems, with the defaults filled in.
type systemsQuery struct {
	judge, rubricItem, outcome, human, systemKey string
}

func systemsPath(id int64) string { return fmt.Sprintf("/projects/%d/systems", id) }

// systemsLead loads the project of the path for its leads.
func (s *Handler) systemsLead(r *http.Request) (*attune.Project, error) {
	p, _, err := s.ProjectAccess(r, true)
	if errors.Is(err, attune.ErrForbidden) {
		return nil, attune.Forbidden("Only a lead of this project can see its systems and draw items for people.")
	}
	return p, err
}

// SystemsPage is the systems view (GET /projects/{id}/systems): the
// estimates of one rubric item per system, the budget preview and the
// draw form; ?draw=ID shows what that draw sent.
func (s *Handler) SystemsPage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.systemsLead(r)
	if err != nil {
		return err
	}
	v := r.URL.Query()
	var done int64
	if d := v.Get("draw"); d != "" {
		if done, err = strconv.ParseInt(d, 10, 64); err != nil {
			return attune.Invalid("draw", "not a draw number")
		}
	}
	page, err := s.systemsView(r, p, v, done, sview.DrawPanel{})
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, sview.View(page))
	return nil
}

// SystemsPreview is the budget preview alone, for htmx as the lead types.
func (s *Handler) SystemsPreview(w http.ResponseWriter, r *http.Request) error {
	p, err := s.systemsLead(r)
	if err != nil {
		return err
	}
	q, _, est, note, err := s.systemsEstimate(r, p, r.URL.Query())
	if err != nil {
		return err
	}
	prev := previewOf(p.ID, q, est, r.URL.Query())
	if est == nil {
		prev.Error = note
	}
	s.Render(w, r, http.StatusOK, sview.PreviewPanel(prev))
	return nil
}

// CreateDraw performs a draw from the page's form (POST
// /projects/{id}/draws) and goes back to the systems view showing what
// was sent; a refused draw is shown on the view with 422.
func (s *Handler) CreateDraw(w http.ResponseWriter, r *http.Request) error {
	p, err := s.systemsLead(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return attune.Invalid("form", "could not be read")
	}
	u := kit.UserFrom(r.Context())
	f := r.PostForm
	panel := sview.DrawPanel{K: f.Get("k"), Seed: f.Get("seed"), System: f.Get("system")}
	d, err := func() (store.Draw, error) {
		k, err := strconv.Atoi(strings.TrimSpace(f.Get("k")))
		if err != nil {
			return store.Draw{}, attune.Invalid(evaluation.FieldK, fmt.Sprintf("k %q must be a whole number of items", f.Get("k")))
		}
		seed, err := evaluation.ParseSeed(strings.TrimSpace(f.Get("seed")))
		if err != nil {
			return store.Draw{}, err
		}
		return evaluation.Draw(r.Context(), s.DB, evaluation.DrawQuery{ProjectID: p.ID, ActorID: &u.ID, K: k,
			System: f.Get("system"), SystemKey: p.SystemKeyOr(strings.TrimSpace(f.Get("system_key"))), Seed: seed})
	}()
	var v *attune.ValidationError
	if errors.As(err, &v) {
		panel.Errors = v.Fields
		page, err := s.systemsView(r, p, f, 0, panel)
		if err != nil {
			return err
		}
		s.Render(w, r, http.StatusUnprocessableEntity, sview.View(page))
		return nil
	}
	if err != nil {
		return err
	}
	back := url.Values{"judge": {f.Get("judge")}, "rubric_item": {f.Get("rubric_item")}, "outcome": {f.Get("outcome")}, "human": {f.Get("human")}, "system_key": {f.Get("system_key")},
		"draw": {strconv.FormatInt(d.ID, 10)}}
	http.Redirect(w, r, systemsPath(p.ID)+"?"+back.Encode(), http.StatusSeeOther)
	return nil
}

// systemsEstimate reads the judges and the rubric, fills in the query's
// defaults from v and estimates. When there is nothing to estimate (no
// judge has answered, the query is refused) est is nil and note says why.
func (s *Handler) systemsEstimate(r *http.Request, p *attune.Project, v url.Values) (q systemsQuery, opts [2][]sview.Option, est *ppi.SystemEstimates, note string, err error) {
	q, opts, est, note, _, err = s.systemsEstimateConcluded(r, p, v)
	return q, opts, est, note, err
}

// systemsEstimateConcluded is systemsEstimate with the conclusion check
// of the estimates (nil without estimates).
func (s *Handler) systemsEstimateConcluded(r *http.Request, p *attune.Project, v url.Values) (q systemsQuery, opts [2][]sview.Option, est *ppi.SystemEstimates, note string, conclusions *ppi.Conclusion, err error) {
	ctx := r.Context()
	judges, err := s.DB.EstimateJudges(ctx, p.ID)
	if err != nil {
		return q, opts, nil, "", nil, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return q, opts, nil, "", nil, err
	}
	q = systemsQuery{judge: v.Get("judge"), rubricItem: v.Get("rubric_item"), outcome: v.Get("outcome"), human: v.Get("human"), systemKey: strings.TrimSpace(v.Get("system_key"))}
	if q.judge == "" && len(judges) > 0 {
		q.judge = judges[0]
	}
	if q.rubricItem == "" && len(def.Items) > 0 {
		q.rubricItem = def.Items[0].Key
	}
	q.systemKey = p.SystemKeyOr(q.systemKey)
	for _, j := range judges {
		opts[0] = append(opts[0], sview.Option{Value: j, Label: j, Selected: j == q.judge})
	}
	for _, it := range def.Items {
		opts[1] = append(opts[1], sview.Option{Value: it.Key, Label: it.Key + " · " + it.Label, Selected: it.Key == q.rubricItem})
	}
	if len(judges) == 0 {
		return q, opts, nil, "No judge has answered in this project yet: run a judge or import its labels first.", nil, nil
	}
	eq := evaluation.Query{ProjectID: p.ID, Judge: q.judge, RubricItem: q.rubricItem, Outcome: q.outcome, Human: q.human, SystemKey: q.systemKey}
	if q.outcome != "" {
		// An outcome asked for stands in for the rubric item the form
		// always sends.
		eq.RubricItem = ""
	}
	e, err := evaluation.Estimate(ctx, s.DB, eq)
	var ve *attune.ValidationError
	if errors.As(err, &ve) || errors.Is(err, attune.ErrNotFound) {
		return q, opts, nil, attune.PublicMessage(err), nil, nil
	}
	if err != nil {
		return q, opts, nil, "", nil, err
	}
	if len(e.Systems) == 0 && e.Overall == nil {
		return q, opts, nil, fmt.Sprintf("No item has both the judge's answer and a person's on %s yet.", q.rubricItem), nil, nil
	}
	conclusions = &e.Conclusion
	return q, opts, &e.SystemEstimates, "", conclusions, nil
}

// systemsView assembles the page; done is a draw to show as just made (0
// for none) and panel the draw form's values and problems.
func (s *Handler) systemsView(r *http.Request, p *attune.Project, v url.Values, done int64, panel sview.DrawPanel) (sview.Page, error) {
	ctx := r.Context()
	q, opts, est, note, concl, err := s.systemsEstimateConcluded(r, p, v)
	if err != nil {
		return sview.Page{}, err
	}
	page := sview.Page{
		Chrome:      s.Chrome(r, "Systems · "+p.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), ReportURL: reportURL(p.ID, nil),
		Form: sview.Form{Action: templ.SafeURL(systemsPath(p.ID)), Judges: opts[0], RubricItems: opts[1], SystemKey: q.systemKey,
			Outcomes: systemsChoices([][2]string{{"", "the rubric item"}, {evaluation.OutcomeFinal, "final score"}, {evaluation.OutcomePass, "pass rate"}, {evaluation.OutcomeSafety, "safety-gate failures"}}, q.outcome),
			Humans:   systemsChoices([][2]string{{evaluation.HumanPeople, "the people's mean"}, {evaluation.HumanGold, "the gold answers"}}, q.human)},
		Note: note,
	}
	if est != nil {
		page.Result = resultView(est)
		if concl != nil {
			page.Result.Conclusion, page.Result.Changed = concl.Summary, concl.Changed
			if g := concl.SafetyGate; g != nil {
				page.Result.SafetyGate = g.Summary
			}
		}
		page.Preview = previewOf(p.ID, q, est, v)
	}
	draws, err := s.DB.ListDraws(ctx, p.ID)
	if err != nil {
		return sview.Page{}, err
	}
	pools, err := s.DB.DrawPool(ctx, p.ID, q.systemKey)
	if err != nil {
		return sview.Page{}, err
	}
	panel.Action = templ.SafeURL(fmt.Sprintf("/projects/%d/draws", p.ID))
	panel.Judge, panel.Rubric, panel.Outcome, panel.Human, panel.SystemKey = q.judge, q.rubricItem, q.outcome, q.human, q.systemKey
	panel.HeldBack = len(draws) > 0
	if panel.K == "" {
		panel.K = strconv.Itoa(previewK)
	}
	names := make([]string, 0, len(pools))
	for name, n := range pools {
		names = append(names, name)
		panel.Pool += n
	}
	sort.Strings(names)
	for _, name := range names {
		panel.Systems = append(panel.Systems, sview.Option{Value: name, Label: fmt.Sprintf("%s (%d judge-only items)", name, pools[name]), Selected: name == panel.System})
	}
	for i := len(draws) - 1; i >= 0; i-- {
		d := draws[i]
		who := d.Actor
		if who == "" {
			who = "(account removed)"
		}
		sys := d.System
		if sys == "" {
			sys = "every system"
		}
		panel.History = append(panel.History, sview.DrawRow{ID: d.ID, When: kit.FormatTime(d.CreatedAt), Who: who, Seed: strconv.FormatUint(d.Seed, 10), K: d.K, System: sys})
		if d.ID == done {
			dd := &sview.DrawDone{ID: d.ID, Seed: strconv.FormatUint(d.Seed, 10), K: d.K}
			for _, it := range d.Items {
				dd.Items = append(dd.Items, it.SourceID)
			}
			panel.Done = dd
		}
	}
	page.Draw = panel
	return page, nil
}

// interval writes an interval as the page shows it.
func interval(i ppi.Interval) string {
	return fmt.Sprintf("%.2f [%.2f, %.2f]", i.Mean, i.Low, i.High)
}

func resultView(est *ppi.SystemEstimates) *sview.Result {
	res := &sview.Result{Sample: est.Sample, Drawn: est.Sample != ppi.SampleCaveat}
	row := func(name string, e ppi.Estimate) sview.Row {
		return sview.Row{System: name, NLabelled: e.NLabelled, NUnlabelled: e.NUnlabelled, Human: interval(e.Human), Judge: interval(e.Judge),
			PPI: interval(e.PPI.Interval), Lambda: fmt.Sprintf("%.2f", e.PPI.Lambda), Effective: fmt.Sprintf("%.1f", e.EffectiveHumanLabels)}
	}
	for _, se := range est.Systems {
		res.Rows = append(res.Rows, row(se.System, se.Estimate))
	}
	if est.Overall != nil {
		o := row("every item", est.Overall.Estimate)
		o.Overall = true
		res.Rows = append(res.Rows, o)
	}
	for _, d := range est.Differences {
		paired, lambda := "independent", "each side's"
		if d.Paired {
			paired = "paired"
		}
		if d.PPI.Lambda != nil {
			lambda = fmt.Sprintf("%.2f", *d.PPI.Lambda)
		}
		res.Differences = append(res.Differences, sview.Row{System: d.A + " − " + d.B, NLabelled: d.NLabelled, NUnlabelled: d.NUnlabelled,
			Human: interval(d.Human), Judge: interval(d.Judge), PPI: interval(d.PPI.Interval), Lambda: lambda,
			Effective: fmt.Sprintf("%.1f", d.EffectiveHumanLabels), Paired: paired})
	}
	for _, sk := range est.Skipped {
		res.Skipped = append(res.Skipped, sk.System+": "+sk.Reason)
	}
	return res
}

// previewOf forecasts, for the k and margin of v, each system's interval
// half-widths with k more labels (ppi Project) and the labels needed to
// tell each pair apart at the margin (LabelsToSeparate).
func previewOf(projectID int64, q systemsQuery, est *ppi.SystemEstimates, v url.Values) sview.Preview {
	p := sview.Preview{URL: templ.SafeURL(systemsPath(projectID) + "/preview"), PageURL: templ.SafeURL(systemsPath(projectID)),
		Judge: q.judge, Rubric: q.rubricItem, Outcome: q.outcome, Human: q.human, SystemKey: q.systemKey, K: v.Get("k"), Margin: v.Get("margin")}
	if p.K == "" {
		p.K = strconv.Itoa(previewK)
	}
	if p.Margin == "" {
		p.Margin = previewMargin
	}
	if est == nil {
		return p
	}
	k, err := strconv.Atoi(strings.TrimSpace(p.K))
	if err != nil || k < 0 {
		p.Error = fmt.Sprintf("k %q must be a whole number of labels, 0 or more", p.K)
		return p
	}
	margin, err := strconv.ParseFloat(strings.TrimSpace(p.Margin), 64)
	if err != nil || margin == 0 || math.IsInf(margin, 0) || math.IsNaN(margin) {
		p.Error = fmt.Sprintf("the margin %q must be a number other than 0", p.Margin)
		return p
	}
	half := func(e ppi.Estimate) (human, pp float64) {
		pr, err := e.Project(0)
		if err != nil {
			return math.NaN(), math.NaN()
		}
		return pr.Human, pr.PPI
	}
	all := est.Systems
	if est.Overall != nil {
		all = append(all[:len(all):len(all)], *est.Overall)
	}
	for _, se := range all {
		name := se.System
		if name == ppi.Overall {
			name = "every item"
		}
		hn, pn := half(se.Estimate)
		row := sview.PreviewRow{System: name, HumanNow: fmt.Sprintf("%.3f", hn), PPINow: fmt.Sprintf("%.3f", pn)}
		kk := min(k, se.NUnlabelled)
		if kk < k {
			row.Note = fmt.Sprintf("(only %d judge-only items)", se.NUnlabelled)
		}
		if pr, err := se.Project(kk); err == nil {
			row.HumanThen, row.PPIThen = fmt.Sprintf("%.3f", pr.Human), fmt.Sprintf("%.3f", pr.PPI)
		} else {
			row.HumanThen, row.PPIThen = "—", "—"
		}
		p.Rows = append(p.Rows, row)
	}
	for _, d := range est.Differences {
		sr := sview.SeparateRow{A: d.A, B: d.B}
		n, err := d.LabelsToSeparate(margin, separatePower)
		switch {
		case errors.Is(err, ppi.ErrCannotSeparate):
			sr.Needs = "not even with every judge-only item labelled"
		case err != nil:
			sr.Needs = "cannot tell from the labels there are"
		case n == 0:
			sr.Needs = "the labels there are already suffice"
		default:
			sr.Needs = fmt.Sprintf("%d more labels", n)
		}
		p.Separate = append(p.Separate, sr)
	}
	return p
}

// systemsChoices are the options of a select, the one of value selected ("" and
// the first option match when value is "").
func systemsChoices(opts [][2]string, value string) []sview.Option {
	out := make([]sview.Option, len(opts))
	for i, o := range opts {
		out[i] = sview.Option{Value: o[0], Label: o[1], Selected: o[0] == value || (value == "" && i == 0)}
	}
	return out
}
