package judge

import (
	"cmp"
	"context"
	"errors"
	"strconv"

	"github.com/riverqueue/river"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/store"
)

// probeArgs works a robustness probe (a run of kind attune.RunProbe): the
// project's calibration items asked k times as they are and once under
// each neutral rewrite (probe.Rewrites), through the same calls, parsing
// and retries as a run's items. Each answer is stored as soon as it is
// had; a job run again asks only what is missing, and what it had paid for
// comes back from the cache under the probe's own keys.
type probeArgs struct {
	RunID      int64 `json:"run_id"`
	Generation int   `json:"generation"`
}

func (probeArgs) Kind() string { return "judge_probe" }

// queueProbe queues the probe job of the run's current start.
func (r *Runner) queueProbe(ctx context.Context, run *attune.JudgeRun) error {
	_, err := r.client.Insert(ctx, probeArgs{RunID: run.ID, Generation: run.Generation},
		&river.InsertOpts{Queue: queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// workProbe asks what the probe has not asked yet and marks it completed
// when nothing is left.
func (r *Runner) workProbe(ctx context.Context, job *river.Job[probeArgs]) error {
	run, err := r.currentRun(ctx, job.Args.RunID, job.Args.Generation)
	if err != nil {
		return err
	}
	if run.Status != attune.RunRunning || run.Generation != job.Args.Generation {
		return nil // paused, cancelled or restarted: a later start asks what is left
	}
	rc, err := r.context(ctx, run)
	if err != nil {
		return err
	}
	items, err := r.db.ProbeItems(ctx, run.ProjectID)
	if err != nil {
		return err
	}
	had, err := r.db.ProbeAnswers(ctx, run.ID)
	if err != nil {
		return err
	}
	done := make(map[probeAsk]bool, len(had))
	for _, a := range had {
		done[probeAsk{a.ItemID, a.Variant, a.Ask}] = true
	}
	user, assistant := cmp.Or(rc.def.Judge.User, defaultUserPrefix), cmp.Or(rc.def.Judge.Assistant, defaultAssistantPrefix)
	for _, id := range items {
		item, err := r.db.FindItem(ctx, run.ProjectID, id)
		if errors.Is(err, attune.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return err
		}
		for _, a := range probeAsks(run.ProbeK) {
			if done[probeAsk{id, a.variant, a.ask}] {
				continue
			}
			v := variant{tag: a.variant + " " + strconv.Itoa(a.ask)}
			if a.variant != store.ProbeOriginal {
				rw, err := probe.Apply(probe.Rewrite(a.variant), probe.Dialogue{Turns: item.Messages, UserLabel: user, AssistantLabel: assistant})
				if errors.Is(err, probe.ErrNoUserTurn) {
					continue // nothing to add the sentence to: the item sits this rewrite out
				}
				if err != nil {
					return err
				}
				v.messages, v.user, v.assistant = rw.Turns, rw.UserLabel, rw.AssistantLabel
			}
			labels, err := r.askDialogue(ctx, run, item, v)
			if err != nil {
				return r.stop(ctx, run, err)
			}
			answers := make(map[string]string, len(labels))
			for _, l := range labels {
				answers[l.Key] = l.Value
			}
			if err := r.db.WriteProbeAnswers(ctx, store.ProbeAnswer{ItemID: id, Variant: a.variant, Ask: a.ask, Answers: answers}, run.ID); err != nil {
				return err
			}
		}
	}
	_, err = r.setStatus(ctx, run.ID, statusMove{from: []attune.RunStatus{attune.RunRunning}, to: attune.RunCompleted})
	return err
}

type probeAsk struct {
	item    int64
	variant string
	ask     int
}

type variantAsk struct {
	variant string
	ask     int
}

// probeAsks are what a probe asks of each item, in order: the item as it
// is k times, then each rewrite once.
func probeAsks(k int) []variantAsk {
	var out []variantAsk
	for i := range max(k, probe.MinRetestK) {
		out = append(out, variantAsk{store.ProbeOriginal, i})
	}
	for _, rw := range probe.Rewrites {
		out = append(out, variantAsk{string(rw), 0})
	}
	return out
}

// ProbeCalls is how many calls a probe of k asks makes per calibration
// item and rubric item, before re-asks and samples: for the estimate.
func ProbeCalls(k int) int { return len(probeAsks(k)) }
