package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
	judgeview "github.com/attune/attune/web/views/judge"
	"github.com/attune/attune/web/views/project"
)

// Limits of the start-a-run form.
const (
	maxRunItems  = 10_000_000
	maxRunBudget = 1_000_000 // US dollars
)

func runPath(projectID, runID int64) string {
	return fmt.Sprintf("/projects/%d/runs/%d", projectID, runID)
}

// active reports whether a run may still make calls without a lead's say.
func active(st attune.RunStatus) bool { return st == attune.RunQueued || st == attune.RunRunning }

// judgesSection builds the Judges block of a project's page, for a viewer
// who may use judges (a lead or admin, and a lead of the project).
func (s *Server) judgesSection(ctx context.Context, p *attune.Project) (*judgeview.ProjectSection, error) {
	judges, err := s.db.ListJudges(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := s.db.ListRuns(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	sec := &judgeview.ProjectSection{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/runs", p.ID)), CanStart: len(judges) > 0}
	for _, j := range judges {
		sec.Judges = append(sec.Judges, judgeview.Option{Value: strconv.FormatInt(j.ID, 10), Label: j.Name + " (" + j.Model + ")"})
		sec.Prompts = append(sec.Prompts, judgeview.Link{Label: j.Name, URL: templ.SafeURL(promptsPath(p.ID, j.ID))})
	}
	for _, r := range runs {
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

// runInput is a checked start-a-run form.
type runInput struct {
	judge  *attune.Judge
	limit  *int
	budget *float64
	prompt int // 0: the rubric's own prompt
}

// runFields are the start-a-run fields as typed: the form's, or the
// API's written as the form would carry them.
type runFields struct {
	Judge, Limit, Budget, Prompt string
}

func runFormFields(r *http.Request) runFields {
	return runFields{
		Judge:  strings.TrimSpace(r.PostFormValue("judge")),
		Limit:  strings.TrimSpace(r.PostFormValue("limit")),
		Budget: strings.TrimSpace(r.PostFormValue("budget")),
		Prompt: strings.TrimSpace(r.PostFormValue("prompt")),
	}
}

func (f runFields) form() judgeview.StartForm {
	return judgeview.StartForm{Judge: f.Judge, Limit: f.Limit, Budget: f.Budget, Prompt: f.Prompt}
}

// checkRunFields reads the start-a-run fields (the form, its confirmation,
// which carries the same fields, or the API's) for project p and checks
// them, with a message per bad field.
func (s *Server) checkRunFields(ctx context.Context, p *attune.Project, f runFields) (runInput, map[string]string, error) {
	var in runInput
	errs := map[string]string{}
	if id, err := strconv.ParseInt(f.Judge, 10, 64); err != nil || id <= 0 {
		errs["judge"] = "Choose a judge."
	} else if in.judge, err = s.db.FindJudge(ctx, id); isNotFound(err) {
		errs["judge"] = "That judge no longer exists; choose another."
	} else if err != nil {
		return in, nil, err
	}
	if f.Limit != "" {
		if n, err := strconv.Atoi(f.Limit); err != nil || n < 1 || n > maxRunItems {
			errs["limit"] = "Enter a whole number of items from 1 up, or leave it empty for all."
		} else {
			in.limit = &n
		}
	}
	if f.Budget != "" {
		if x, err := strconv.ParseFloat(strings.TrimPrefix(f.Budget, "$"), 64); err != nil || math.IsNaN(x) || x <= 0 || x > maxRunBudget {
			errs["budget"] = fmt.Sprintf("Enter an amount in dollars above 0 and at most %d, or leave it empty for no cap.", maxRunBudget)
		} else {
			in.budget = &x
		}
	}
	if f.Prompt != "" {
		if n, ok := promptVersionArg(f.Prompt); !ok {
			errs["prompt"] = "Enter a prompt version number from 1 up, or leave it empty for the rubric's own prompt."
		} else {
			in.prompt = n
		}
	}
	if len(errs) == 0 {
		msg, err := s.checkRunPrompt(ctx, p, in)
		if err != nil {
			return in, nil, err
		}
		if msg != "" {
			errs["prompt"] = msg
		}
	}
	return in, errs, nil
}

// checkRunPrompt says, as a form message, when the judge has no such
// prompt version for the project's rubric ("" when it has).
func (s *Server) checkRunPrompt(ctx context.Context, p *attune.Project, in runInput) (string, error) {
	if in.prompt <= 1 {
		return "", nil
	}
	_, err := s.db.FindJudgePrompt(ctx, in.judge.ID, p.RubricVersionID, in.prompt)
	if errors.Is(err, attune.ErrNotFound) {
		return fmt.Sprintf("%s has no prompt version %d for this project's rubric.", in.judge.Name, in.prompt), nil
	}
	return "", err
}

// msgNoItems refuses a run of a project without items.
const msgNoItems = "This project has no items yet: import a dataset first."

// estimateOf estimates the run in would make over p, refusing (on the
// limit field) a project without items.
func (s *Server) estimateOf(ctx context.Context, p *attune.Project, in runInput) (judge.Estimate, error) {
	limit := 0
	if in.limit != nil {
		limit = *in.limit
	}
	est, err := s.opts.Runner.EstimateRun(ctx, in.judge, p, limit, in.prompt)
	if err == nil && est.Items == 0 {
		err = attune.Invalid("limit", msgNoItems)
	}
	return est, err
}

// startRunOf stores the run in of p, started by actor, and queues it; any
// process running the judge runner takes it up. A run of the same judge
// still queued or running on p is an attune.ErrConflict, a project
// without items an *attune.ValidationError.
func (s *Server) startRunOf(ctx context.Context, actor *attune.User, p *attune.Project, in runInput) (*attune.JudgeRun, error) {
	if act, err := s.activeRun(ctx, p, in.judge.ID); err != nil {
		return nil, err
	} else if act != "" {
		return nil, attune.Conflict(act)
	}
	// The estimate stored with the run is the server's own, not the one
	// the confirmation showed: the items may have changed since.
	est, err := s.estimateOf(ctx, p, in)
	if err != nil {
		return nil, err
	}
	run, err := s.db.CreateRun(ctx, &actor.ID, store.NewRun{JudgeID: in.judge.ID, ProjectID: p.ID, ItemLimit: in.limit, BudgetUSD: in.budget,
		EstimateUSD: est.USD, PromptVersion: in.prompt})
	if err != nil {
		return nil, err
	}
	if err := s.opts.Runner.Queue(ctx, run.ID); err != nil {
		// The run exists; paused with the reason, a lead can resume it,
		// which queues it again.
		if _, serr := s.db.SetRunStatus(context.WithoutCancel(ctx), run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunPaused,
			"the run could not be queued; resume it to try again", nil); serr != nil {
			return nil, errors.Join(err, serr)
		}
		return nil, fmt.Errorf("queue run %d: %w", run.ID, err)
	}
	return run, nil
}

// refuseRunForm shows the project's page again with the start form's
// problems.
func (s *Server) refuseRunForm(w http.ResponseWriter, r *http.Request, p *attune.Project, role attune.MemberRole, f judgeview.StartForm, errs map[string]string) error {
	page, err := s.projectView(r, p, role)
	if err != nil {
		return err
	}
	if page.Judges != nil {
		page.Judges.Form, page.Judges.Errors = f, errs
	}
	s.render(w, r, http.StatusUnprocessableEntity, project.View(page))
	return nil
}

// activeRun says which run of the judge is still queued or running on the
// project, or "": two at once would answer the same items twice.
func (s *Server) activeRun(ctx context.Context, p *attune.Project, judgeID int64) (string, error) {
	runs, err := s.db.ListRuns(ctx, p.ID)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.JudgeID == judgeID && active(r.Status) {
			return fmt.Sprintf("Run %d of this judge is %s on this project; pause or cancel it, or wait for it to finish, before starting another.",
				r.ID, r.Status), nil
		}
	}
	return "", nil
}

// estimateRun shows what a run would cost, with the button that starts
// it. Nothing is stored.
func (s *Server) estimateRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, role, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	f := runFormFields(r)
	in, errs, err := s.checkRunFields(ctx, p, f)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return s.refuseRunForm(w, r, p, role, f.form(), errs)
	}
	est, err := s.estimateOf(ctx, p, in)
	if bad := fieldErrors(err); len(bad) > 0 {
		return s.refuseRunForm(w, r, p, role, f.form(), bad)
	}
	if err != nil {
		return err
	}
	def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	act, err := s.activeRun(ctx, p, in.judge.ID)
	if err != nil {
		return err
	}
	page := judgeview.ConfirmPage{
		Chrome:      s.chrome(r, "Start "+in.judge.Name, "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(projectPath(p.ID)),
		Action:    templ.SafeURL(fmt.Sprintf("/projects/%d/runs/confirm", p.ID)),
		JudgeName: in.judge.Name, Model: in.judge.Model, Form: f.form(),
		Items: est.Items, Sentinels: est.Sentinels, RubricItems: len(def.Items), Samples: in.judge.Settings.SampleCount(),
		Calls: count(int64(est.Calls)), InputTokens: count(int64(est.InputTokens)), OutputTokens: count(int64(est.OutputTokens)),
		USD: usd(est.USD), Active: act,
	}
	if in.budget != nil {
		page.Budget = usd(*in.budget)
		page.OverBudget = est.USD > *in.budget
	}
	s.render(w, r, http.StatusOK, judgeview.Confirm(page))
	return nil
}

// startRun stores the run and queues it (startRunOf).
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, role, err := s.projectAccess(r, true)
	if err != nil {
		return err
	}
	f := runFormFields(r)
	in, errs, err := s.checkRunFields(ctx, p, f)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return s.refuseRunForm(w, r, p, role, f.form(), errs)
	}
	run, err := s.startRunOf(ctx, userFrom(ctx), p, in)
	if bad := fieldErrors(err); len(bad) > 0 {
		return s.refuseRunForm(w, r, p, role, f.form(), bad)
	}
	if errors.Is(err, attune.ErrConflict) {
		s.sessions.Put(ctx, sessionFlashError, attune.PublicMessage(err))
		http.Redirect(w, r, projectPath(p.ID)+"#judges", http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, fmt.Sprintf("Run %d of %s is queued: it starts as soon as a worker takes it.", run.ID, runJudge(run)))
	http.Redirect(w, r, runPath(p.ID, run.ID), http.StatusSeeOther)
	return nil
}

// runAccess loads the project and the run named in the path, for one of
// the project's leads.
func (s *Server) runAccess(r *http.Request) (*attune.Project, *attune.JudgeRun, error) {
	p, _, err := s.projectAccess(r, true)
	if err != nil {
		return nil, nil, err
	}
	run, err := s.runOf(r, p)
	return p, run, err
}

// runOf loads the run named in the path; a run of another project than p
// is not found.
func (s *Server) runOf(r *http.Request, p *attune.Project) (*attune.JudgeRun, error) {
	id, err := pathInt(r, "run")
	if err != nil {
		return nil, err
	}
	run, err := s.db.FindRun(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if run.ProjectID != p.ID {
		return nil, attune.NotFound("run")
	}
	return run, nil
}

// progressView reads a run's progress and its calls per rubric item.
func (s *Server) progressView(ctx context.Context, p *attune.Project, run *attune.JudgeRun) (judgeview.Progress, error) {
	pr, err := s.db.RunProgress(ctx, run)
	if err != nil {
		return judgeview.Progress{}, err
	}
	byItem, err := s.db.RunTotalsByRubricItem(ctx, run.ID)
	if err != nil {
		return judgeview.Progress{}, err
	}
	def, err := s.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return judgeview.Progress{}, err
	}
	base := runPath(p.ID, run.ID)
	v := judgeview.Progress{
		URL: base + "/progress", Poll: active(run.Status), Status: string(run.Status), Reason: run.Reason,
		Done: pr.ItemsDone, Total: pr.ItemsTotal, Labels: pr.Labels, Errors: pr.Errors, Calls: pr.Calls,
		Input: count(pr.InputTokens), Cached: count(pr.CachedTokens), Output: count(pr.OutputTokens),
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
		if !budgetSpent(run) {
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
			Input: count(t.InputTokens), Cached: count(t.CachedTokens), Output: count(t.OutputTokens), Cost: usd(t.CostUSD)}
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

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	prog, err := s.progressView(ctx, p, run)
	if err != nil {
		return err
	}
	j, err := s.db.FindJudge(ctx, run.JudgeID)
	if err != nil {
		return err
	}
	base := runPath(p.ID, run.ID)
	page := judgeview.RunPage{
		Chrome:      s.chrome(r, fmt.Sprintf("Run %d · %s", run.ID, p.Name), "home"),
		ProjectName: p.Name, ProjectURL: templ.SafeURL(projectPath(p.ID)),
		RunID: run.ID, JudgeName: runJudge(run), Model: j.Model, Settings: settingsSummary(run.Settings) + " · " + pricesSummary(run.Settings.Prices),
		Limit: fmt.Sprintf("the first %s", count(int64(run.ItemsTotal))), Created: stamp(run.CreatedAt),
		AnswersURL: templ.SafeURL(base + "/items"), ErrorsURL: templ.SafeURL(base + "/items?errors=1"),
		Capabilities: capabilitiesView(run.Capabilities), Progress: prog,
	}
	if run.StartedAt != nil {
		page.Started = stamp(*run.StartedAt)
	}
	if run.FinishedAt != nil {
		page.Finished = stamp(*run.FinishedAt)
	}
	s.render(w, r, http.StatusOK, judgeview.RunView(page))
	return nil
}

// runProgress is the part of the run's page htmx polls. A browser that
// asks for it directly gets the whole page.
func (s *Server) runProgress(w http.ResponseWriter, r *http.Request) error {
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	if !isHX(r) {
		http.Redirect(w, r, runPath(p.ID, run.ID), http.StatusSeeOther)
		return nil
	}
	prog, err := s.progressView(r.Context(), p, run)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, judgeview.RunProgress(prog))
	return nil
}

func (s *Server) pauseRun(w http.ResponseWriter, r *http.Request) error {
	return s.changeRun(w, r, s.pauseRunAs)
}

func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) error {
	return s.changeRun(w, r, s.resumeRunAs)
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	return s.changeRun(w, r, s.cancelRunAs)
}

// A lead's actions on a run, for its page and the API: each says what was
// done, or refuses with an attune.ErrConflict when the run's state does
// not allow it.

func (s *Server) pauseRunAs(ctx context.Context, u *attune.User, run *attune.JudgeRun) (string, error) {
	if !active(run.Status) {
		return "", attune.Conflict("Only a queued or running run can be paused.")
	}
	return "Paused. Calls under way finish; resume to go on.", s.opts.Runner.Pause(ctx, run.ID, "paused by "+u.DisplayName())
}

// budgetSpent reports whether a run has spent its budget. Resuming it
// would stop again at its first call, so the page offers a new run with a
// larger budget instead: the items answered are skipped, their calls not
// paid for again.
func budgetSpent(run *attune.JudgeRun) bool {
	return run.BudgetUSD != nil && run.SpentUSD >= *run.BudgetUSD
}

func (s *Server) resumeRunAs(ctx context.Context, _ *attune.User, run *attune.JudgeRun) (string, error) {
	if run.Status == attune.RunPaused && budgetSpent(run) {
		return "", attune.Conflict("This run has spent its budget. Start a new run of the judge with a larger budget: " +
			"it skips the items already answered and reuses the answers paid for.")
	}
	return "Resumed: the run is queued again and goes on with the items not yet answered.", s.opts.Runner.Resume(ctx, run.ID)
}

func (s *Server) cancelRunAs(ctx context.Context, _ *attune.User, run *attune.JudgeRun) (string, error) {
	if run.Status == attune.RunCompleted || run.Status == attune.RunCancelled {
		return "", attune.Conflict("This run has ended already.")
	}
	return "Cancelled. The answers so far stay.", s.opts.Runner.Cancel(ctx, run.ID)
}

// runAction is one of a lead's actions on a run.
type runAction func(context.Context, *attune.User, *attune.JudgeRun) (string, error)

// changeRun applies a lead's action to a run and goes back to its page
// with the outcome; a refused action is a message there, not an error page.
func (s *Server) changeRun(w http.ResponseWriter, r *http.Request, act runAction) error {
	ctx := r.Context()
	p, run, err := s.runAccess(r)
	if err != nil {
		return err
	}
	msg, err := act(ctx, userFrom(ctx), run)
	switch {
	case errors.Is(err, attune.ErrConflict):
		s.sessions.Put(ctx, sessionFlashError, capitalize(attune.PublicMessage(err)))
	case err != nil:
		return err
	default:
		s.sessions.Put(ctx, sessionFlash, msg)
	}
	http.Redirect(w, r, runPath(p.ID, run.ID), http.StatusSeeOther)
	return nil
}
