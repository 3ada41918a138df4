// Package runs is the one flow of a judge run for every adapter: the web
// page, the JSON API and the command line read their input into Fields and
// call Check, Estimate and Start, and act on a run with Pause, Resume and
// Cancel, so that each refuses the same input with the same verdict and
// stores the same rows. The pure rules of the start fields (LimitProblem,
// BudgetProblem, PromptProblem) are here too; the database's rule of one
// active run per judge and prompt version (migration 00044) backs Start.
package runs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
)

// Limits of a run's start fields.
const (
	MaxItems  = 10_000_000
	MaxBudget = 1_000_000 // US dollars
)

// Messages of the start fields, shown under the field on the page, as the
// field's message by the API and after the flag's name on the command line.
const (
	msgLimit    = "Enter a whole number of items from 1 up, or leave it empty for all."
	msgPrompt   = "Enter a prompt version number from 1 up, or leave it empty for the rubric's own prompt."
	msgJudge    = "Choose a judge."
	msgNoJudge  = "That judge no longer exists; choose another."
	MsgNoItems  = "This project has no items yet: import a dataset first."
	msgPausable = "Only a queued or running run can be paused."
	msgEnded    = "This run has ended already."
	msgSpent    = "This run has spent its budget. Start a new run of the judge with a larger budget: " +
		"it skips the items already answered and reuses the answers paid for."
)

var msgBudget = fmt.Sprintf("Enter an amount in dollars above 0 and at most %d, or leave it empty for no cap.", MaxBudget)

// Store is what the flow needs of the database; *store.DB satisfies it.
type Store interface {
	FindJudge(ctx context.Context, id int64) (*attune.Judge, error)
	FindJudgePrompt(ctx context.Context, judgeID, rubricVersionID int64, version int) (*attune.JudgePrompt, error)
	ListRuns(ctx context.Context, projectID int64) ([]*attune.JudgeRun, error)
	CreateRun(ctx context.Context, actorID *int64, nr store.NewRun) (*attune.JudgeRun, error)
	SetRunStatus(ctx context.Context, id int64, from []attune.RunStatus, to attune.RunStatus, reason string, capabilities []byte) (bool, error)
	ProbeItems(ctx context.Context, projectID int64) ([]int64, error)
	CreateProbe(ctx context.Context, actorID *int64, np store.NewProbe) (*attune.JudgeRun, error)
}

// Runner is what the flow needs of the judge runner; *judge.Runner
// satisfies it.
type Runner interface {
	EstimateRun(ctx context.Context, j *attune.Judge, p *attune.Project, limit, promptVersion int) (judge.Estimate, error)
	Queue(ctx context.Context, runID int64) error
	Pause(ctx context.Context, runID int64, reason string) error
	Resume(ctx context.Context, runID int64) error
	Cancel(ctx context.Context, runID int64) error
	RaiseBudget(ctx context.Context, runID int64, usd *float64) error
}

// Flow starts and changes judge runs.
type Flow struct {
	db     Store
	runner Runner
}

// New returns the flow over db and runner.
func New(db Store, runner Runner) *Flow { return &Flow{db: db, runner: runner} }

// Fields are the start fields as typed, trimmed or not: the form's, the
// API's written as the form would carry them, the command line's flags.
// Judge is the judge's id; empty Limit, Budget and Prompt are all items,
// no cap and the rubric's own prompt.
type Fields struct {
	Judge, Limit, Budget, Prompt string
}

// Input is a checked start.
type Input struct {
	Judge  *attune.Judge
	Limit  *int     // nil: every item
	Budget *float64 // nil: no cap
	Prompt int      // 0: the rubric's own prompt
}

// LimitProblem reads a run's item limit: nil for empty (every item), or
// the message fit to show when s is no whole number from 1 to MaxItems.
func LimitProblem(s string) (*int, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, ""
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("Not a whole number: %s. %s", s, msgLimit)
	case n < 1 || n > MaxItems:
		return nil, msgLimit
	}
	return &n, ""
}

// BudgetProblem reads a run's budget in US dollars, a leading "$"
// allowed: nil for empty (no cap), or the message fit to show when s is no
// amount above 0 and at most MaxBudget.
func BudgetProblem(s string) (*float64, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, ""
	}
	x, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("Not an amount: %s. %s", s, msgBudget)
	case math.IsNaN(x) || x <= 0 || x > MaxBudget:
		return nil, msgBudget
	}
	return &x, ""
}

// PromptProblem reads a run's prompt version: 0 for empty (the rubric's
// own prompt), or the message fit to show when s is no whole number from 1
// up. Whether the judge has that version is Check's to say.
func PromptProblem(s string) (int, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, ""
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, msgPrompt
	}
	return n, ""
}

// Check reads the start fields for project p, with a message per bad
// field (nil when none); the error is the database's.
func (f *Flow) Check(ctx context.Context, p *attune.Project, in Fields) (Input, map[string]string, error) {
	var out Input
	errs := map[string]string{}
	if id, err := strconv.ParseInt(strings.TrimSpace(in.Judge), 10, 64); err != nil || id <= 0 {
		errs["judge"] = msgJudge
	} else if out.Judge, err = f.db.FindJudge(ctx, id); errors.Is(err, attune.ErrNotFound) {
		errs["judge"] = msgNoJudge
	} else if err != nil {
		return out, nil, err
	}
	var msg string
	if out.Limit, msg = LimitProblem(in.Limit); msg != "" {
		errs["limit"] = msg
	}
	if out.Budget, msg = BudgetProblem(in.Budget); msg != "" {
		errs["budget"] = msg
	}
	if out.Prompt, msg = PromptProblem(in.Prompt); msg != "" {
		errs["prompt"] = msg
	}
	if len(errs) > 0 {
		return out, errs, nil
	}
	if out.Prompt > 1 {
		_, err := f.db.FindJudgePrompt(ctx, out.Judge.ID, p.RubricVersionID, out.Prompt)
		if errors.Is(err, attune.ErrNotFound) {
			errs["prompt"] = fmt.Sprintf("%s has no prompt version %d for this project's rubric.", out.Judge.Name, out.Prompt)
			return out, errs, nil
		}
		if err != nil {
			return out, nil, err
		}
	}
	return out, nil, nil
}

// Estimate estimates the run in would make over p, refusing (on the limit
// field, as an *attune.ValidationError) a project without items.
func (f *Flow) Estimate(ctx context.Context, p *attune.Project, in Input) (judge.Estimate, error) {
	limit := 0
	if in.Limit != nil {
		limit = *in.Limit
	}
	est, err := f.runner.EstimateRun(ctx, in.Judge, p, limit, in.Prompt)
	if err == nil && est.Items == 0 {
		err = attune.Invalid("limit", MsgNoItems)
	}
	return est, err
}

// Active says which run of judge j with prompt version prompt is still
// queued or running on p, as a message fit to show, or "": two at once
// would answer the same items twice as the same rater.
func (f *Flow) Active(ctx context.Context, p *attune.Project, judgeID int64, prompt int) (string, error) {
	runs, err := f.db.ListRuns(ctx, p.ID)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.JudgeID == judgeID && max(r.PromptVersion, 1) == max(prompt, 1) && IsActive(r.Status) {
			return fmt.Sprintf("Run %d of this judge is %s on this project; pause or cancel it, or wait for it to finish, before starting another.",
				r.ID, r.Status), nil
		}
	}
	return "", nil
}

// Start stores the run in of p, started by actor (nil: the command line),
// and queues it; any process running the judge runner takes it up. A run
// of the same judge and prompt version still queued or running on p is an
// attune.ErrConflict saying which, whether this check or the database's
// rule (two starts at once) finds it; a project without items is an
// *attune.ValidationError. A run that cannot be queued is left paused with
// the reason, and the error returned.
func (f *Flow) Start(ctx context.Context, actor *int64, p *attune.Project, in Input) (*attune.JudgeRun, error) {
	if act, err := f.Active(ctx, p, in.Judge.ID, in.Prompt); err != nil {
		return nil, err
	} else if act != "" {
		return nil, attune.Conflict(act)
	}
	// The estimate stored with the run is the server's own, not one shown
	// before: the items may have changed since.
	est, err := f.Estimate(ctx, p, in)
	if err != nil {
		return nil, err
	}
	run, err := f.db.CreateRun(ctx, actor, store.NewRun{JudgeID: in.Judge.ID, ProjectID: p.ID, ItemLimit: in.Limit, BudgetUSD: in.Budget,
		EstimateUSD: est.USD, PromptVersion: in.Prompt})
	if errors.Is(err, attune.ErrConflict) {
		// Another start won between the check and the insert; say which
		// run, as the check does.
		if act, aerr := f.Active(ctx, p, in.Judge.ID, in.Prompt); aerr == nil && act != "" {
			return nil, attune.Conflict(act)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := f.runner.Queue(ctx, run.ID); err != nil {
		// The run exists; paused with the reason, a lead can resume it,
		// which queues it again.
		if _, serr := f.db.SetRunStatus(context.WithoutCancel(ctx), run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunPaused,
			"the run could not be queued; resume it to try again", nil); serr != nil {
			return nil, errors.Join(err, serr)
		}
		return nil, fmt.Errorf("queue run %d: %w", run.ID, err)
	}
	return run, nil
}

// IsActive reports whether a run in status st may still make calls
// without a lead's say.
func IsActive(st attune.RunStatus) bool { return st == attune.RunQueued || st == attune.RunRunning }

// BudgetSpent reports whether a run has spent its budget. Resuming it
// would stop again at its first call, so a new run with a larger budget is
// offered instead: the items answered are skipped, their calls not paid
// for again.
func BudgetSpent(run *attune.JudgeRun) bool {
	return run.BudgetUSD != nil && run.SpentUSD >= *run.BudgetUSD
}

// Pause stops run from making further calls, saying who paused it (by:
// "paused by Ann", "paused from the command line"); what was done, or an
// attune.ErrConflict when the run is not queued or running.
func (f *Flow) Pause(ctx context.Context, run *attune.JudgeRun, by string) (string, error) {
	if !IsActive(run.Status) {
		return "", attune.Conflict(msgPausable)
	}
	return "Paused. Calls under way finish; resume to go on.", f.runner.Pause(ctx, run.ID, by)
}

// Resume queues a paused run again, first raising its budget to budget
// when that is not nil; what was done, or an attune.ErrConflict when the
// run has spent its budget (the one it would have), is not paused, or
// another run of its judge and prompt version is active on the project.
func (f *Flow) Resume(ctx context.Context, run *attune.JudgeRun, budget *float64) (string, error) {
	after := *run
	if budget != nil {
		after.BudgetUSD = budget
	}
	if run.Status == attune.RunPaused && BudgetSpent(&after) {
		return "", attune.Conflict(msgSpent)
	}
	if budget != nil && run.Status == attune.RunPaused {
		if err := f.runner.RaiseBudget(ctx, run.ID, budget); err != nil {
			return "", err
		}
	}
	return "Resumed: the run is queued again and goes on with the items not yet answered.", f.runner.Resume(ctx, run.ID)
}

// Cancel ends a run for good; its answers so far stay. What was done, or
// an attune.ErrConflict when the run has ended already.
func (f *Flow) Cancel(ctx context.Context, run *attune.JudgeRun) (string, error) {
	if run.Status == attune.RunCompleted || run.Status == attune.RunCancelled {
		return "", attune.Conflict(msgEnded)
	}
	return "Cancelled. The answers so far stay.", f.runner.Cancel(ctx, run.ID)
}
