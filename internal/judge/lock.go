package judge

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/attune/attune/internal/store"
)

// takeLock queues again the jobs of dead workers, then takes this
// process's worker lock and starts the loop that keeps it. It does nothing
// when the lock is held already.
func (r *Runner) takeLock(ctx context.Context) error {
	r.life.Lock()
	defer r.life.Unlock()
	if r.lock != nil {
		return nil
	}
	// Before the lock: jobs left running under this worker's id by a dead
	// process that had the same key count as dead too.
	if err := r.rescue(ctx); err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	lock, err := r.db.LockWorker(ctx, r.worker)
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	r.lock = lock
	r.alive, r.lostLock = context.WithCancel(context.WithoutCancel(ctx))
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stopWatch, r.watchDone = stop, make(chan struct{})
	go r.watch(wctx, lock, r.watchDone)
	return nil
}

// release ends the watch loop and gives up the worker lock.
func (r *Runner) release(ctx context.Context) {
	r.life.Lock()
	lock, stop, done := r.lock, r.stopWatch, r.watchDone
	r.lock = nil
	r.life.Unlock()
	if lock == nil {
		return
	}
	stop()
	<-done // the loop takes r.life: wait for it unlocked
	r.life.Lock()
	r.lostLock()
	r.life.Unlock()
	lock.Close(context.WithoutCancel(ctx))
}

// lockCheckTimeout bounds one look at the worker lock, a new connection
// included when the old one was lost.
const lockCheckTimeout = 5 * time.Second

// watch keeps the worker lock and rescues dead workers' jobs until ctx
// ends.
func (r *Runner) watch(ctx context.Context, lock *store.WorkerLock, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.opts.RescueInterval)
	defer t.Stop()
	var regained bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// The check may have to connect anew and take the lock again: it
		// gets the time a connection needs, however often it runs.
		cctx, cancel := context.WithTimeout(ctx, lockCheckTimeout)
		err := lock.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		r.life.Lock()
		switch {
		case err != nil && r.alive.Err() == nil:
			r.opts.Logger.Error("judge worker lock lost: stopping the jobs under way", "err", err)
			r.lostLock()
		case err == nil && r.alive.Err() != nil:
			r.opts.Logger.Info("judge worker lock held again")
			r.alive, r.lostLock = context.WithCancel(context.WithoutCancel(ctx))
			regained = true
		}
		r.life.Unlock()
		if regained {
			// While the lock was lost the database may have changed under
			// this process (a standby promoted): a job whose end was never
			// recorded shows as running under this worker, alive again,
			// and no rescue would ever take it.
			if err := r.requeueStranded(ctx); err != nil && ctx.Err() == nil {
				r.opts.Logger.Warn("judge: queue stranded jobs again", "err", err)
				continue // the lock is taken for lost at the next look
			}
			regained = false
		}
		if err := r.rescue(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.Warn("judge rescue", "err", err)
		}
	}
}

// requeueStranded queues again this worker's judge jobs recorded as
// running that this process does not run.
func (r *Runner) requeueStranded(ctx context.Context) error {
	var ids []int64
	r.working.Range(func(k, _ any) bool {
		ids = append(ids, k.(int64))
		return true
	})
	n, err := r.db.RequeueStrandedJobs(ctx, queue, r.worker.ClientID(), ids)
	if n > 0 {
		r.opts.Logger.Info("judge: queued again the jobs this worker had left running", "jobs", n)
	}
	return err
}

// rescue queues again the judge jobs of workers that died, and completes
// the runs that have nothing left to do but were never marked completed.
func (r *Runner) rescue(ctx context.Context) error {
	n, err := r.db.RequeueJobsOfDeadWorkers(ctx, queue)
	if n > 0 {
		r.opts.Logger.Info("judge jobs of dead workers queued again", "jobs", n)
	}
	if err != nil {
		return err
	}
	if err := r.completeFinished(ctx); err != nil {
		return err
	}
	// The other queues' jobs were taken by the same workers, under the
	// same locks.
	for _, q := range r.alsoQueues {
		n, err := r.db.RequeueJobsOfDeadWorkers(ctx, q)
		if n > 0 {
			r.opts.Logger.Info("jobs of dead workers queued again", "queue", q, "jobs", n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// completeFinished marks completed the runs whose jobs have all ended
// with every item answered: the last item's answers and the mark commit
// together (store.WriteJudgeAnswers), but a run can still be left running
// with nothing to work it, by a release that marked runs in a step of its
// own, say, or a job given up while the database was away.
func (r *Runner) completeFinished(ctx context.Context) error {
	ids, err := r.db.CompleteFinishedRuns(ctx, queue)
	for _, id := range ids {
		r.opts.Logger.Info("judge run completed: every item was answered and no job was left", "run", id)
		r.runs.Delete(id)
		r.notify(ctx, id)
	}
	return err
}

// guarded wraps a job's work so that it stops when this process loses its
// worker lock: other processes may then queue the job again, and two
// workers on one item would pay for its calls twice. While the lock is
// lost, jobs wait (snoozed, spending no attempt).
func guarded[T river.JobArgs](r *Runner, work func(context.Context, *river.Job[T]) error) func(context.Context, *river.Job[T]) error {
	return func(ctx context.Context, job *river.Job[T]) error {
		r.life.Lock()
		alive := r.alive
		r.life.Unlock()
		if alive == nil {
			return work(ctx, job) // never started: a worker called directly
		}
		if alive.Err() != nil {
			return river.JobSnooze(r.opts.RescueInterval)
		}
		r.working.Store(job.ID, struct{}{})
		defer r.working.Delete(job.ID)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(alive, cancel)()
		err := work(ctx, job)
		if err != nil && alive.Err() != nil {
			return river.JobSnooze(r.opts.RescueInterval)
		}
		if store.Unavailable(err) {
			// The database is away (a failover): the job is tried again
			// soon, without using up an attempt or backing off for minutes.
			return river.JobSnooze(time.Second)
		}
		return err
	}
}
