package runs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/store"
)

// MaxProbeK is the most asks of one item a probe's retest takes.
const MaxProbeK = 20

var msgProbeK = fmt.Sprintf("Enter how many times each item is asked as it is: a whole number from %d to %d, or leave it empty for %d.",
	probe.MinRetestK, MaxProbeK, probe.MinRetestK)

// MsgNoCalibration refuses a probe of a project without calibration items.
const MsgNoCalibration = "This project has no calibration items yet: a probe asks the judge the calibration items, so add some first."

// ProbeFields are a probe's start fields as typed: the judge's id, the
// asks of each item (empty: probe.MinRetestK), the prompt version (empty:
// the rubric's own) and the budget (empty: no cap).
type ProbeFields struct {
	Judge, K, Prompt, Budget string
}

// ProbeInput is a checked probe start.
type ProbeInput struct {
	Judge  *attune.Judge
	K      int
	Prompt int
	Budget *float64
}

// ProbeKProblem reads a probe's asks of each item: probe.MinRetestK for
// empty, or the message fit to show when s is no whole number from
// probe.MinRetestK to MaxProbeK.
func ProbeKProblem(s string) (int, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return probe.MinRetestK, ""
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < probe.MinRetestK || k > MaxProbeK {
		return 0, msgProbeK
	}
	return k, ""
}

// CheckProbe reads a probe's start fields for project p, with a message
// per bad field (nil when none), as Check does a run's.
func (f *Flow) CheckProbe(ctx context.Context, p *attune.Project, in ProbeFields) (ProbeInput, map[string]string, error) {
	run, errs, err := f.Check(ctx, p, Fields{Judge: in.Judge, Budget: in.Budget, Prompt: in.Prompt})
	if err != nil {
		return ProbeInput{}, nil, err
	}
	out := ProbeInput{Judge: run.Judge, Budget: run.Budget, Prompt: run.Prompt}
	var msg string
	if out.K, msg = ProbeKProblem(in.K); msg != "" {
		if errs == nil {
			errs = map[string]string{}
		}
		errs["k"] = msg
	}
	return out, errs, nil
}

// StartProbe stores the probe in of p, started by actor (nil: the command
// line), and queues it; any process running the judge runner works it. A
// project without calibration items is an *attune.ValidationError on the
// field "judge"; a probe of the same judge and prompt version still queued
// or running is an attune.ErrConflict. A probe that cannot be queued is
// left paused with the reason, and the error returned.
func (f *Flow) StartProbe(ctx context.Context, actor *int64, p *attune.Project, in ProbeInput) (*attune.JudgeRun, error) {
	items, err := f.db.ProbeItems(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, attune.Invalid("judge", MsgNoCalibration)
	}
	run, err := f.db.CreateProbe(ctx, actor, store.NewProbe{JudgeID: in.Judge.ID, ProjectID: p.ID, PromptVersion: in.Prompt, K: in.K, BudgetUSD: in.Budget})
	if err != nil {
		return nil, err
	}
	if err := f.runner.Queue(ctx, run.ID); err != nil {
		if _, serr := f.db.SetRunStatus(context.WithoutCancel(ctx), run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunPaused,
			"the probe could not be queued; resume it to try again", nil); serr != nil {
			return nil, errors.Join(err, serr)
		}
		return nil, fmt.Errorf("queue probe %d: %w", run.ID, err)
	}
	return run, nil
}
