package judge

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

// queue is the job queue's queue for judge work.
const queue = "judge"

// startArgs starts (or resumes) a run: probe the endpoint, then queue the
// jobs that answer the items still to answer.
type startArgs struct {
	RunID int64 `json:"run_id"`
}

func (startArgs) Kind() string { return "judge_start" }

// itemArgs answers the items of one run with ids from First to Last, one
// after another: a stretch of the run's items rather than one item, so the
// job queue's own work (taking, completing, inserting a job) is shared by
// several items. Each item's answers are stored as soon as it is done; a
// job run again skips the items answered already. The stretches of a start
// are fixed by the run's items alone (see chunks), so queueing what is left
// again queues the same jobs, which the queue's uniqueness keeps single.
type itemArgs struct {
	RunID int64 `json:"run_id"`
	// ItemID is a job queued before stretches: that one item.
	ItemID      int64 `json:"item_id,omitempty"`
	First, Last int64 `json:",omitempty"`
	Generation  int   `json:"generation"`
}

// span is the stretch of items the job answers.
func (a itemArgs) span() (first, last int64) {
	if a.First == 0 {
		return a.ItemID, a.ItemID
	}
	return a.First, a.Last
}

func (itemArgs) Kind() string { return "judge_item" }

// sentinelArgs asks a run's judge the project's calibration items afresh
// (the judge sentinel), then queues the jobs of the run's items: asked
// first, the sentinel cannot be cut short by the run's end, and its calls
// count toward the run's cost and budget like any other.
type sentinelArgs struct {
	RunID      int64 `json:"run_id"`
	Generation int   `json:"generation"`
}

func (sentinelArgs) Kind() string { return "judge_sentinel" }

// Queue queues a run to start. Any running Runner will take it.
func (r *Runner) Queue(ctx context.Context, runID int64) error {
	_, err := r.client.Insert(ctx, startArgs{RunID: runID}, &river.InsertOpts{Queue: queue})
	return err
}

// Pause stops a run from making further calls; Resume queues it again.
func (r *Runner) Pause(ctx context.Context, runID int64, reason string) error {
	_, err := r.setStatus(ctx, runID, statusMove{from: []attune.RunStatus{attune.RunQueued, attune.RunRunning}, to: attune.RunPaused, reason: reason})
	return err
}

// Cancel ends a run for good; its answers so far stay.
func (r *Runner) Cancel(ctx context.Context, runID int64) error {
	_, err := r.setStatus(ctx, runID, statusMove{from: []attune.RunStatus{attune.RunQueued, attune.RunRunning, attune.RunPaused}, to: attune.RunCancelled, reason: "cancelled"})
	return err
}

// RaiseBudget sets a new budget cap on a run (paused at its budget, say)
// before it is resumed; nil removes the cap.
func (r *Runner) RaiseBudget(ctx context.Context, runID int64, usd *float64) error {
	return r.db.SetRunBudget(ctx, runID, usd)
}

// Resume queues a paused run again; it continues with the items not yet
// answered, repeating no paid call.
func (r *Runner) Resume(ctx context.Context, runID int64) error {
	ok, err := r.setStatus(ctx, runID, statusMove{from: []attune.RunStatus{attune.RunPaused}, to: attune.RunQueued})
	if err != nil {
		return err
	}
	if !ok {
		return attune.Conflict("only a paused run can be resumed")
	}
	return r.Queue(ctx, runID)
}

// statusMove is a change of a run's status: to to, from one of from, with
// the reason shown to the lead and, on a start, the capabilities probed
// (JSON).
type statusMove struct {
	from   []attune.RunStatus
	to     attune.RunStatus
	reason string
	caps   []byte
}

// setStatus makes move on a run, reports whether it was made, and tells
// waiters when it was.
func (r *Runner) setStatus(ctx context.Context, runID int64, move statusMove) (bool, error) {
	ok, err := r.db.SetRunStatus(ctx, runID, move.from, move.to, move.reason, move.caps)
	if ok {
		r.runs.Delete(runID) // this process's items see the change at once
		r.notify(ctx, runID)
	}
	return ok, err
}

// notify wakes whoever waits for the run (Wait, possibly in another
// process).
func (r *Runner) notify(ctx context.Context, runID int64) {
	if err := r.db.NotifyRun(ctx, runID); err != nil {
		r.opts.Logger.Warn("notify run", "run", runID, "err", err)
	}
}

// Wait blocks until the run is no longer queued or running, and returns it.
// It listens for the runners' notifications, so it reacts at once, and
// looks again every few seconds in case one was missed. A listening
// session the database dropped (a failover, a restart) is opened again
// at the next look rather than ending the wait: until it is, the wait
// only looks every few seconds.
func (r *Runner) Wait(ctx context.Context, runID int64) (*attune.JudgeRun, error) {
	var l *store.RunListener
	defer func() {
		if l != nil {
			l.Close(ctx)
		}
	}()
	for {
		run, err := r.db.FindRun(ctx, runID)
		switch {
		case err != nil && !store.Unavailable(err):
			return nil, err
		case err != nil:
			// The database is away (a failover, a restart): the run goes
			// on without it, so the wait looks again at the next turn.
			r.opts.Logger.Warn("read the run; looking again shortly", "run", runID, "err", err)
		case run.Status != attune.RunQueued && run.Status != attune.RunRunning:
			return run, nil
		}
		if l == nil && err == nil {
			if l, err = r.db.ListenRuns(ctx); err != nil {
				r.opts.Logger.Warn("listen for runs; looking every few seconds instead", "run", runID, "err", err)
				l = nil
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if l != nil {
			// Any run's news, or none in time: look again either way.
			if err := l.Wait(wctx); err != nil && wctx.Err() == nil {
				l.Close(ctx) // the session broke: listen afresh next time
				l = nil
				<-wctx.Done()
			}
		} else {
			<-wctx.Done()
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// workStart probes the endpoint, marks the run running, and queues jobs
// for the items the judge has not answered yet.
func (r *Runner) workStart(ctx context.Context, job *river.Job[startArgs]) error {
	run, err := r.db.FindRun(ctx, job.Args.RunID)
	if err != nil {
		return err
	}
	switch run.Status {
	case attune.RunQueued:
	case attune.RunRunning:
		// The worker of this start died after the run began, perhaps
		// before it had queued every item: queue what is left. A job
		// queued already is not queued twice, and items answered meanwhile
		// are not left to do.
		if run.Kind == attune.RunProbe {
			return r.queueProbe(ctx, run)
		}
		return r.queueSentinel(ctx, run)
	default:
		return nil // paused or cancelled before it started
	}
	j, err := r.db.FindJudge(ctx, run.JudgeID)
	if err != nil {
		return err
	}
	prov, _, err := r.provider(j)
	var caps Capabilities
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		caps, err = Probe(pctx, prov, j.Model)
		cancel()
	}
	var fatal *FatalError
	if errors.As(err, &fatal) {
		_, err := r.setStatus(ctx, run.ID, statusMove{from: []attune.RunStatus{attune.RunQueued}, to: attune.RunPaused, reason: fatal.Reason})
		return err
	}
	if err != nil {
		return err // a transient failure: the queue retries the start
	}
	capsJSON, _ := json.Marshal(caps)
	ok, err := r.setStatus(ctx, run.ID, statusMove{from: []attune.RunStatus{attune.RunQueued}, to: attune.RunRunning, caps: capsJSON})
	if err != nil || !ok {
		return err
	}
	run, err = r.db.FindRun(ctx, run.ID)
	if err != nil {
		return err
	}
	if run.Kind == attune.RunProbe {
		return r.queueProbe(ctx, run)
	}
	if _, err := r.db.StartRunItems(ctx, run); err != nil {
		return err
	}
	return r.queueSentinel(ctx, run)
}

// queueSentinel queues the sentinel job of the run's current start, which
// queues the items' jobs when it is done.
func (r *Runner) queueSentinel(ctx context.Context, run *attune.JudgeRun) error {
	_, err := r.client.Insert(ctx, sentinelArgs{RunID: run.ID, Generation: run.Generation},
		&river.InsertOpts{Queue: queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// workSentinel asks the judge each calibration item the run has not asked
// yet, from no cache, and keeps its answers beside the gold of now
// (store.WriteSentinel); then it queues the jobs of the run's items still
// to answer, or ends a run that has none.
func (r *Runner) workSentinel(ctx context.Context, job *river.Job[sentinelArgs]) error {
	run, err := r.currentRun(ctx, job.Args.RunID, job.Args.Generation)
	if err != nil {
		return err
	}
	if run.Status != attune.RunRunning || run.Generation != job.Args.Generation {
		return nil // paused, cancelled or restarted: a later start asks what is left
	}
	items, err := r.db.SentinelItems(ctx, run)
	if err != nil {
		return err
	}
	for _, it := range items {
		labels, err := r.askItem(ctx, run, it.ItemID, true)
		if err != nil {
			return r.stop(ctx, run, err)
		}
		answers := make(map[string]string, len(labels))
		for _, l := range labels {
			answers[l.Key] = l.Value
		}
		if err := r.db.WriteSentinel(ctx, run, it.ItemID, answers, it.Gold); err != nil {
			return err
		}
	}
	todo, err := r.db.RunItemsTodo(ctx, run)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		_, err := r.setStatus(ctx, run.ID, statusMove{from: []attune.RunStatus{attune.RunRunning}, to: attune.RunCompleted})
		return err
	}
	return r.queueItems(ctx, run, todo)
}

// maxChunk bounds the items of one job; chunkJobs is how many jobs a run
// is cut into at least (when it has that many items), so that a small run
// is still worked by many workers at once.
const (
	maxChunk  = 16
	chunkJobs = 64
)

// chunks cuts the run's items (by id, in order) into stretches of at most
// maxChunk, and returns those that hold an item of todo. The cut depends
// on the run's items alone, never on what is left to do, so every start
// of the same generation queues the same jobs.
func chunks(scope, todo []int64) [][2]int64 {
	size := min(maxChunk, max(1, (len(scope)+chunkJobs-1)/chunkJobs))
	left := make(map[int64]bool, len(todo))
	for _, id := range todo {
		left[id] = true
	}
	var out [][2]int64
	for i := 0; i < len(scope); i += size {
		part := scope[i:min(i+size, len(scope))]
		for _, id := range part {
			if left[id] {
				out = append(out, [2]int64{part[0], part[len(part)-1]})
				break
			}
		}
	}
	return out
}

// queueItems queues the jobs that answer todo for the run's current start.
func (r *Runner) queueItems(ctx context.Context, run *attune.JudgeRun, todo []int64) error {
	scope, err := r.db.ItemIDs(ctx, run.ProjectID, run.ItemsTotal)
	if err != nil {
		return err
	}
	spans := chunks(scope, todo)
	const batch = 1000
	for i := 0; i < len(spans); i += batch {
		params := make([]river.InsertManyParams, 0, batch)
		for _, sp := range spans[i:min(i+batch, len(spans))] {
			params = append(params, river.InsertManyParams{
				Args:       itemArgs{RunID: run.ID, First: sp[0], Last: sp[1], Generation: run.Generation},
				InsertOpts: &river.InsertOpts{Queue: queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true}},
			})
		}
		if _, err := r.client.InsertMany(ctx, params); err != nil {
			return err
		}
	}
	return nil
}

// stop handles an error that ends an item's work: a fatal provider error
// pauses the run with its reason; errStop means it is already stopped.
func (r *Runner) stop(ctx context.Context, run *attune.JudgeRun, err error) error {
	var fatal *FatalError
	switch {
	case errors.Is(err, errStop):
		return nil
	case errors.As(err, &fatal):
		_, serr := r.setStatus(ctx, run.ID, statusMove{from: []attune.RunStatus{attune.RunRunning}, to: attune.RunPaused, reason: fatal.Reason})
		return serr
	}
	return err
}

// completeIfDone marks the run completed once no item is left. The
// workers' count says when to look; the look itself is exact, since a job
// of an earlier start finishing late can make the count run ahead.
func (r *Runner) completeIfDone(ctx context.Context, run *attune.JudgeRun) error {
	todo, err := r.db.RunItemsTodo(ctx, run)
	if err != nil || len(todo) > 0 {
		return err
	}
	_, err = r.setStatus(ctx, run.ID, statusMove{from: []attune.RunStatus{attune.RunRunning}, to: attune.RunCompleted})
	return err
}
