package judging

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
	"github.com/attune/attune/web/views/project"
)

func runPath(projectID, runID int64) string {
	return fmt.Sprintf("/projects/%d/runs/%d", projectID, runID)
}

// ProjectSection builds the Judges block of a project's page, for a viewer
// who may use judges (a lead or admin, and a lead of the project).
func (s *Handler) ProjectSection(ctx context.Context, p *attune.Project) (*judgeview.ProjectSection, error) {
	judges, err := s.DB.ListJudges(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.DB.ListRuns(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	sec := &judgeview.ProjectSection{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/runs", p.ID)), CanStart: len(judges) > 0}
	for _, j := range judges {
		sec.Judges = append(sec.Judges, judgeview.Option{Value: strconv.FormatInt(j.ID, 10), Label: j.Name + " (" + j.Model + ")"})
		sec.Prompts = append(sec.Prompts, judgeview.Link{Label: j.Name, URL: templ.SafeURL(promptsPath(p.ID, j.ID))})
		sec.Certifications = append(sec.Certifications, judgeview.Link{Label: j.Name, URL: templ.SafeURL(certificationPath(p.ID, j.ID))})
	}
	for _, r := range list {
		sec.Runs = append(sec.Runs, judgeview.RunRow{
			ID: r.ID, URL: templ.SafeURL(runPath(p.ID, r.ID)), Judge: runJudge(r), Status: string(r.Status), Reason: r.Reason,
			Items: r.ItemsTotal, Created: stamp(r.CreatedAt),
		})
	}
	return sec, nil
}

// runJudge names a run's judge with its prompt version when that is not
// the rubric's own, as its rater is named.
func runJudge(r *attune.JudgeRun) string {
	if r.PromptVersion > 1 {
		return fmt.Sprintf("%s · prompt v%d", r.JudgeName, r.PromptVersion)
	}
	return r.JudgeName
}

// runFormFields reads the start-a-run fields of the form or of its
// confirmation, which carries the same fields.
func runFormFields(r *http.Request) runs.Fields {
	return runs.Fields{
		Judge:  strings.TrimSpace(r.PostFormValue("judge")),
		Limit:  strings.TrimSpace(r.PostFormValue("limit")),
		Budget: strings.TrimSpace(r.PostFormValue("budget")),
		Prompt: strings.TrimSpace(r.PostFormValue("prompt")),
	}
}

func startForm(f runs.Fields) judgeview.StartForm {
	return judgeview.StartForm{Judge: f.Judge, Limit: f.Limit, Budget: f.Budget, Prompt: f.Prompt}
}

// refuseRunForm shows the project's page again with the start form's
// problems.
func (s *Handler) refuseRunForm(w http.ResponseWriter, r *http.Request, p *attune.Project, role attune.MemberRole, f judgeview.StartForm, errs map[string]string) error {
	page, err := s.ProjectPage(r, p, role)
	if err != nil {
		return err
	}
	if page.Judges != nil {
		page.Judges.Form, page.Judges.Errors = f, errs
	}
	s.Render(w, r, http.StatusUnprocessableEntity, project.View(page))
	return nil
}

// EstimateRun shows what a run would cost, with the button that starts
// it. Nothing is stored.
func (s *Handler) EstimateRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, role, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	f := runFormFields(r)
	in, errs, err := s.runs.Check(ctx, p, f)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return s.refuseRunForm(w, r, p, role, startForm(f), errs)
	}
	est, err := s.runs.Estimate(ctx, p, in)
	if bad := kit.FieldErrors(err); len(bad) > 0 {
		return s.refuseRunForm(w, r, p, role, startForm(f), bad)
	}
	if err != nil {
		return err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	act, err := s.runs.Active(ctx, p, in.Judge.ID, in.Prompt)
	if err != nil {
		return err
	}
	page := judgeview.ConfirmPage{
		Chrome:      s.Chrome(r, "Start "+in.Judge.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)),
		Action:    templ.SafeURL(fmt.Sprintf("/projects/%d/runs/confirm", p.ID)),
		JudgeName: in.Judge.Name, Model: in.Judge.Model, Form: startForm(f),
		Items: est.Items, Sentinels: est.Sentinels, RubricItems: len(def.Items), Samples: in.Judge.Settings.SampleCount(),
		Calls: kit.Count(int64(est.Calls)), InputTokens: kit.Count(int64(est.InputTokens)), OutputTokens: kit.Count(int64(est.OutputTokens)),
		USD: usd(est.USD), Active: act,
	}
	if in.Budget != nil {
		page.Budget = usd(*in.Budget)
		page.OverBudget = est.USD > *in.Budget
	}
	s.Render(w, r, http.StatusOK, judgeview.Confirm(page))
	return nil
}

// StartRun stores the run and queues it (runs.Flow.Start).
func (s *Handler) StartRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, role, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	f := runFormFields(r)
	in, errs, err := s.runs.Check(ctx, p, f)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return s.refuseRunForm(w, r, p, role, startForm(f), errs)
	}
	run, err := s.runs.Start(ctx, &kit.UserFrom(ctx).ID, p, in)
	if bad := kit.FieldErrors(err); len(bad) > 0 {
		return s.refuseRunForm(w, r, p, role, startForm(f), bad)
	}
	if errors.Is(err, attune.ErrConflict) {
		s.FlashError(ctx, attune.PublicMessage(err))
		http.Redirect(w, r, kit.ProjectPath(p.ID)+"#judges", http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("Run %d of %s is queued: it starts as soon as a worker takes it.", run.ID, runJudge(run)))
	http.Redirect(w, r, runPath(p.ID, run.ID), http.StatusSeeOther)
	return nil
}

// runAccess loads the project and the run named in the path, for one of
// the project's leads.
func (s *Handler) runAccess(r *http.Request) (*attune.Project, *attune.JudgeRun, error) {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return nil, nil, err
	}
	run, err := s.runOf(r, p)
	return p, run, err
}

// runOf loads the run named in the path; a run of another project than p
// is not found.
func (s *Handler) runOf(r *http.Request, p *attune.Project) (*attune.JudgeRun, error) {
	id, err := kit.PathInt(r, "run")
	if err != nil {
		return nil, err
	}
	run, err := s.DB.FindRun(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if run.ProjectID != p.ID {
		return nil, attune.NotFound("run")
	}
	return run, nil
}

// progressView reads a run's progress and its calls per rubric item.
func (s *Handler) progressView(ctx context.Context, p *attune.Project, run *attune.JudgeRun) (judgeview.Progress, error) {
	pr, err := s.DB.RunProgress(ctx, run)
	if err != nil {
		return judgeview.Progress{}, err
	}
	byItem, err := s.DB.RunTotalsByRubricItem(ctx, run.ID)
	if err != nil {
		return judgeview.Progress{}, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return judgeview.Progress{}, err
	}
	base := runPath(p.ID, run.ID)
	v := judgeview.Progress{
		URL: base + "/progress", Poll: runs.IsActive(run.Status), Status: string(run.Status), Reason: run.Reason,
		Done: pr.ItemsDone, Total: pr.ItemsTotal, Labels: pr.Labels, Errors: pr.Errors, Calls: pr.Calls,
		Input: kit.Count(pr.InputTokens), Cached: kit.Count(pr.CachedTokens), Output: kit.Count(pr.OutputTokens),
		Cost: usd(pr.CostUSD), Estimate: usd(run.EstimateUSD),
		ErrorsURL: templ.SafeURL(base + "/items?errors=1"),
	}
	if pr.ItemsTotal > 0 {
		v.Percent = pr.ItemsDone * 100 / pr.ItemsTotal
	}
	if run.BudgetUSD != nil {
		v.Budget = usd(*run.BudgetUSD)
	}
	if pr.TimeLeft > 0 {
		v.TimeLeft = roughly(pr.TimeLeft)
	}
	switch run.Status {
	case attune.RunQueued, attune.RunRunning:
		v.Actions.Pause, v.Actions.Cancel = templ.SafeURL(base+"/pause"), templ.SafeURL(base+"/cancel")
	case attune.RunPaused:
		v.Actions.Cancel = templ.SafeURL(base + "/cancel")
		if !runs.BudgetSpent(run) {
			v.Actions.Resume = templ.SafeURL(base + "/resume")
		}
	}
	// The rubric's order, so that the table reads as the rubric does.
	at := map[string]store.RubricItemTotals{}
	for _, t := range byItem {
		at[t.Key] = t
	}
	row := func(t store.RubricItemTotals) judgeview.CostRow {
		v.Failed += t.Failed
		v.Reasks += t.Reasks
		return judgeview.CostRow{Key: t.Key, Label: itemLabel(def, t.Key), Calls: t.Calls, Failed: t.Failed, Reasks: t.Reasks, Errors: t.Errors,
			Input: kit.Count(t.InputTokens), Cached: kit.Count(t.CachedTokens), Output: kit.Count(t.OutputTokens), Cost: usd(t.CostUSD)}
	}
	for _, it := range def.Items {
		if t, ok := at[it.Key]; ok {
			v.ByItem = append(v.ByItem, row(t))
			delete(at, it.Key)
		}
	}
	for _, t := range byItem {
		if _, ok := at[t.Key]; ok {
			v.ByItem = append(v.ByItem, row(t))
		}
	}
	return v, nil
}

// RunPage shows a run: its judge and settings, what its probe found, and
// its progress.
func (s *Handler) RunPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	prog, err := s.progressView(ctx, p, run)
	if err != nil {
		return err
	}
	j, err := s.DB.FindJudge(ctx, run.JudgeID)
	if err != nil {
		return err
	}
	base := runPath(p.ID, run.ID)
	page := judgeview.RunPage{
		Chrome:      s.Chrome(r, fmt.Sprintf("Run %d · %s", run.ID, p.Name), "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)),
		RunID: run.ID, JudgeName: runJudge(run), Model: j.Model, Settings: settingsSummary(run.Settings) + " · " + pricesSummary(run.Settings.Prices),
		Limit: fmt.Sprintf("the first %s", kit.Count(int64(run.ItemsTotal))), Created: stamp(run.CreatedAt),
		AnswersURL: templ.SafeURL(base + "/items"), ErrorsURL: templ.SafeURL(base + "/items?errors=1"),
		Capabilities: capabilitiesView(run.Capabilities), Progress: prog,
	}
	if run.StartedAt != nil {
		page.Started = stamp(*run.StartedAt)
	}
	if run.FinishedAt != nil {
		page.Finished = stamp(*run.FinishedAt)
	}
	s.Render(w, r, http.StatusOK, judgeview.RunView(page))
	return nil
}

// RunProgress is the part of the run's page htmx polls. A browser that
// asks for it directly gets the whole page.
func (s *Handler) RunProgress(w http.ResponseWriter, r *http.Request) error {
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	if !kit.IsHX(r) {
		http.Redirect(w, r, runPath(p.ID, run.ID), http.StatusSeeOther)
		return nil
	}
	prog, err := s.progressView(r.Context(), p, run)
	if err != nil {
		return err
	}
	s.Render(w, r, http.StatusOK, judgeview.RunProgress(prog))
	return nil
}

// PauseRun pauses a run and goes back to its page.
func (s *Handler) PauseRun(w http.ResponseWriter, r *http.Request) error {
	return s.changeRun(w, r, s.pauseRunAs)
}

// ResumeRun resumes a paused run and goes back to its page.
func (s *Handler) ResumeRun(w http.ResponseWriter, r *http.Request) error {
	return s.changeRun(w, r, s.resumeRunAs)
}

// CancelRun cancels a run and goes back to its page.
func (s *Handler) CancelRun(w http.ResponseWriter, r *http.Request) error {
	return s.changeRun(w, r, s.cancelRunAs)
}

// A lead's actions on a run, for its page and the API: each says what was
// done, or refuses with an attune.ErrConflict when the run's state does
// not allow it (runs.Flow).

func (s *Handler) pauseRunAs(ctx context.Context, u *attune.User, run *attune.JudgeRun) (string, error) {
	return s.runs.Pause(ctx, run, "paused by "+u.DisplayName())
}

func (s *Handler) resumeRunAs(ctx context.Context, _ *attune.User, run *attune.JudgeRun) (string, error) {
	return s.runs.Resume(ctx, run, nil)
}

func (s *Handler) cancelRunAs(ctx context.Context, _ *attune.User, run *attune.JudgeRun) (string, error) {
	return s.runs.Cancel(ctx, run)
}

// runAction is one of a lead's actions on a run.
type runAction func(context.Context, *attune.User, *attune.JudgeRun) (string, error)

// changeRun applies a lead's action to a run and goes back to its page
// with the outcome; a refused action is a message there, not an error page.
func (s *Handler) changeRun(w http.ResponseWriter, r *http.Request, act runAction) error {
	ctx := r.Context()
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	msg, err := act(ctx, kit.UserFrom(ctx), run)
	switch {
	case errors.Is(err, attune.ErrConflict):
		s.FlashError(ctx, kit.Capitalize(attune.PublicMessage(err)))
	case err != nil:
		return err
	default:
		s.Flash(ctx, msg)
	}
	http.Redirect(w, r, runPath(p.ID, run.ID), http.StatusSeeOther)
	return nil
}
