package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// RunnerOptions tune a Runner. Zero values take the defaults noted.
type RunnerOptions struct {
	// Getenv reads the environment variable a judge names for its API key.
	Getenv func(string) string
	// Policy is what the admin lets judges use: a judge whose key
	// variable or base URL it does not allow is refused before any call,
	// and calls connect only to addresses it allows (see guardedClient).
	Policy attune.JudgePolicy
	Logger *slog.Logger
	// Workers is how many items this process works at once, over every
	// run (default 64). Each judge's own concurrency limits its calls.
	Workers int
	// MaxAttempts is how many times one call is tried before its answer is
	// recorded as ERROR (default 6).
	MaxAttempts int
	// BaseBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults 500ms and 30s), before jitter.
	BaseBackoff, MaxBackoff time.Duration
	// CallTimeout bounds one provider call (default 2 minutes).
	CallTimeout time.Duration
	// FetchCooldown is how soon the queue looks for new jobs after taking
	// some (default 10ms: items are short and many).
	FetchCooldown time.Duration
	// RescueInterval is how often a started Runner looks for judge jobs
	// whose worker died (its process killed, its host gone) and queues
	// them again (default 10s). Start looks at once, so a restarted
	// process resumes its own runs without waiting.
	RescueInterval time.Duration
	// Insecure allows plain-http provider URLs off this machine; off by
	// default so an API key is never sent in the clear.
	Insecure bool
	// Also adds other workers (webhook deliveries) to the runner's job
	// queue client, each with the queue it works: one client per process,
	// so whichever client leads the queue knows every job kind (the
	// queue's rescuer discards a stuck job of a kind it does not know).
	Also []AddWorkers
}

// AddWorkers registers workers on a job queue client's workers and returns
// the queue they work, with its settings.
type AddWorkers func(*river.Workers) (queue string, cfg river.QueueConfig)

func (o RunnerOptions) withDefaults() RunnerOptions {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	if o.FetchCooldown <= 0 {
		o.FetchCooldown = 10 * time.Millisecond
	}
	if o.RescueInterval <= 0 {
		o.RescueInterval = 10 * time.Second
	}
	return o
}

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

// Runner works judge runs: durable jobs in PostgreSQL that any replica
// running a Runner may take. Create it with NewRunner; Start it to work
// jobs (a Runner that only queues runs need not be started).
//
// A job's worker may die at any moment (kill -9, a lost host). A started
// Runner holds a worker lock that says it is alive; every started Runner
// queues again the jobs of workers whose lock is gone. Jobs have no time
// limit of their own: a slow provider is not a dead worker, and working one
// item twice at once would pay for its calls twice. Calls already paid for
// are in the cache, so the item's next worker repeats none.
type Runner struct {
	db     *store.DB
	opts   RunnerOptions
	client *river.Client[pgx.Tx]
	// alsoQueues are the queues of RunnerOptions.Also.
	alsoQueues []string
	worker     store.Worker
	life       sync.Mutex // guards lock, stopWatch and alive
	lock       *store.WorkerLock
	// stopWatch ends the loop that keeps the lock and rescues jobs;
	// watchDone closes when it has ended.
	stopWatch context.CancelFunc
	watchDone chan struct{}
	// alive ends when this process loses its worker lock: its jobs may
	// be queued again elsewhere, so its own work on them must stop.
	alive    context.Context
	lostLock context.CancelFunc
	limits   limiters
	rubrics  sync.Map // rubric version id → *rubric.Definition
	// schemas holds each rubric item's answer schema (schemaKey → Schema):
	// a rubric version is immutable, and encoding it cost every call.
	schemas sync.Map
	// pool runs an item's rubric items on goroutines kept between items.
	pool *goPool
	// hc carries every provider call, over the policy's dialer; it has no
	// timeout of its own (CallTimeout bounds each call).
	hc       *http.Client
	provider func(j *attune.Judge) (Provider, string, error)
	// providers keeps one client per judge endpoint and key for the life
	// of the process: a client learns what its endpoint refuses (such as
	// max_tokens) once, not once per item.
	providers sync.Map // providerKey → Provider
	// runCtx keeps each run's judge, project and rubric for a few seconds:
	// every item of a run needs them, and they change rarely (a run's
	// settings are a snapshot anyway).
	runCtx   sync.Map // run id → *runContext
	rubricMu sync.Mutex
	// calls stores the calls that come back, gathered into batches.
	calls *recorder
	// runs keeps each run as last read, for all its items to share.
	runs sync.Map // run id → *runState
	// working holds the ids of the judge jobs this process runs now: when
	// its worker lock is held again after a loss (a failover, a dropped
	// connection), its other jobs recorded as running are queued again.
	working sync.Map // job id → struct{}
}

// runStatusAge is how old a run's status may be when an item goes by it:
// a pause or a cancel stops a run's calls within it.
const runStatusAge = time.Second

// runState is a run as last read, shared by every item of the run, so
// that a run is read about once a second rather than once per item.
type runState struct {
	mu   sync.Mutex
	run  attune.JudgeRun
	read time.Time
}

// currentRun returns the run as read at most runStatusAge ago; a fresh
// read when the last one was of another generation than generation (a
// restart since), or generation is 0. The run returned is the caller's
// own copy.
func (r *Runner) currentRun(ctx context.Context, id int64, generation int) (*attune.JudgeRun, error) {
	v, _ := r.runs.LoadOrStore(id, &runState{})
	st := v.(*runState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.read.IsZero() || time.Since(st.read) >= runStatusAge || generation == 0 || st.run.Generation != generation {
		// One read for every item waiting here.
		run, err := r.db.FindRun(ctx, id)
		if err != nil {
			return nil, err
		}
		st.run, st.read = *run, time.Now()
	}
	run := st.run
	return &run, nil
}

type runContext struct {
	judge   *attune.Judge
	project *attune.Project
	def     *rubric.Definition
	loaded  time.Time
}

// context returns the run's judge, project and rubric, loading them at
// most every few seconds.
func (r *Runner) context(ctx context.Context, run *attune.JudgeRun) (*runContext, error) {
	if c, ok := r.runCtx.Load(run.ID); ok && time.Since(c.(*runContext).loaded) < 5*time.Second {
		return c.(*runContext), nil
	}
	j, err := r.db.FindJudge(ctx, run.JudgeID)
	if err != nil {
		return nil, err
	}
	p, err := r.db.FindProjectByID(ctx, run.ProjectID)
	if err != nil {
		return nil, err
	}
	def, err := r.rubric(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	// A run asks with the prompt version it recorded; a run made before
	// versions asks with the rubric's own prompts.
	if run.PromptID != nil {
		jp, err := r.db.FindJudgePromptByID(ctx, *run.PromptID)
		if err != nil {
			return nil, err
		}
		def = WithPrompts(def, jp.Prompts)
	}
	c := &runContext{judge: j, project: p, def: def, loaded: time.Now()}
	r.runCtx.Store(run.ID, c)
	return c, nil
}

type providerKey struct {
	provider, baseURL, keyHash string
}

// NewRunner builds a Runner over db.
func NewRunner(db *store.DB, opts RunnerOptions) (*Runner, error) {
	r := &Runner{db: db, opts: opts.withDefaults(), worker: store.NewWorker(), calls: newRecorder(db.RecordCalls), pool: newGoPool(10 * time.Second)}
	r.hc = guardedClient(r.opts.Policy)
	r.provider = r.newProvider
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workStart)))
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workItems)))
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workSentinel)))
	queues := map[string]river.QueueConfig{queue: {MaxWorkers: r.opts.Workers}}
	for _, add := range r.opts.Also {
		name, cfg := add(workers)
		queues[name] = cfg
		r.alsoQueues = append(r.alsoQueues, name)
	}
	// The queue listens and elects its leader on sessions of its own.
	client, err := river.NewClient(riverpgxv5.New(db.SessionPool()), &river.Config{
		ID:            r.worker.ClientID(),
		Queues:        queues,
		Workers:       workers,
		FetchCooldown: r.opts.FetchCooldown,
		// Each call has its own timeout; an item takes as long as its
		// retries. With no job timeout the queue's own rescuer, which goes
		// by time alone, leaves judge jobs be: a dead worker's jobs are
		// found by its lock (rescue).
		JobTimeout:  -1,
		MaxAttempts: 25,
		Logger:      r.opts.Logger.With("component", "queue"),
	})
	if err != nil {
		return nil, fmt.Errorf("judge: job queue: %w", err)
	}
	r.client = client
	return r, nil
}

// Start works queued judge jobs until Stop. It first queues again the jobs
// of workers that died (a process restarted after a crash resumes its runs
// at once), then takes this process's worker lock, and from then on keeps
// the lock and looks for dead workers' jobs every RescueInterval.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.takeLock(ctx); err != nil {
		return err
	}
	if err := r.client.Start(ctx); err != nil {
		r.release(ctx)
		return err
	}
	return nil
}

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

// Stop finishes the jobs under way, then stops. The worker lock is given
// up only once no job of this process runs.
func (r *Runner) Stop(ctx context.Context) error {
	if err := r.client.Stop(ctx); err != nil {
		return err
	}
	r.release(ctx)
	return nil
}

// StopAndCancel stops at once, cancelling jobs under way; they are taken
// up again by a runner later. Answers already paid for are in the cache.
func (r *Runner) StopAndCancel(ctx context.Context) error {
	err := r.client.StopAndCancel(ctx)
	r.release(ctx)
	return err
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

// Queue queues a run to start. Any running Runner will take it.
func (r *Runner) Queue(ctx context.Context, runID int64) error {
	_, err := r.client.Insert(ctx, startArgs{RunID: runID}, &river.InsertOpts{Queue: queue})
	return err
}

// Pause stops a run from making further calls; Resume queues it again.
func (r *Runner) Pause(ctx context.Context, runID int64, reason string) error {
	_, err := r.setStatus(ctx, runID, []attune.RunStatus{attune.RunQueued, attune.RunRunning}, attune.RunPaused, reason, nil)
	return err
}

// Cancel ends a run for good; its answers so far stay.
func (r *Runner) Cancel(ctx context.Context, runID int64) error {
	_, err := r.setStatus(ctx, runID, []attune.RunStatus{attune.RunQueued, attune.RunRunning, attune.RunPaused}, attune.RunCancelled, "cancelled", nil)
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
	ok, err := r.setStatus(ctx, runID, []attune.RunStatus{attune.RunPaused}, attune.RunQueued, "", nil)
	if err != nil {
		return err
	}
	if !ok {
		return attune.Conflict("only a paused run can be resumed")
	}
	return r.Queue(ctx, runID)
}

// setStatus changes a run's status and tells waiters.
func (r *Runner) setStatus(ctx context.Context, runID int64, from []attune.RunStatus, to attune.RunStatus, reason string, caps []byte) (bool, error) {
	ok, err := r.db.SetRunStatus(ctx, runID, from, to, reason, caps)
	if ok {
		r.runs.Delete(runID) // this process's items see the change at once
		r.notify(ctx, runID)
	}
	return ok, err
}

// notify wakes whoever waits for the run (Wait, possibly in another
// process).
func (r *Runner) notify(ctx context.Context, runID int64) {
	if _, err := r.db.Pool().Exec(ctx, `SELECT pg_notify('attune_judge_run', $1)`, strconv.FormatInt(runID, 10)); err != nil {
		r.opts.Logger.Warn("notify run", "run", runID, "err", err)
	}
}

// Wait blocks until the run is no longer queued or running, and returns it.
// It listens for the runners' notifications, so it reacts at once, and
// looks again every few seconds in case one was missed.
func (r *Runner) Wait(ctx context.Context, runID int64) (*attune.JudgeRun, error) {
	conn, err := r.db.SessionPool().Acquire(ctx) // LISTEN needs a session
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN attune_judge_run`); err != nil {
		return nil, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `UNLISTEN attune_judge_run`)
	for {
		run, err := r.db.FindRun(ctx, runID)
		if err != nil {
			return nil, err
		}
		if run.Status != attune.RunQueued && run.Status != attune.RunRunning {
			return run, nil
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = conn.Conn().WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// newProvider builds the client for a judge's endpoint and names the
// endpoint for the cache key. A missing key is a fatal error: the run
// pauses with the reason rather than failing every call.
func (r *Runner) newProvider(j *attune.Judge) (Provider, string, error) {
	if err := checkPolicy(r.opts.Policy, j); err != nil {
		return nil, "", err
	}
	key := ""
	if j.APIKeyEnv != "" {
		key = r.opts.Getenv(j.APIKeyEnv)
		if key == "" {
			return nil, "", &FatalError{Reason: fmt.Sprintf("the environment variable %s, which holds this judge's API key, is not set where the runner works", j.APIKeyEnv)}
		}
	}
	if err := checkBaseURL(j.BaseURL, key != "", r.opts.Insecure); err != nil {
		return nil, "", err
	}
	endpoint := j.Provider + " " + j.BaseURL
	pk := providerKey{j.Provider, j.BaseURL, HashMessages([]Message{{Content: key}})}
	if p, ok := r.providers.Load(pk); ok {
		return p.(Provider), endpoint, nil
	}
	var p Provider
	switch j.Provider {
	case "openai":
		p = NewOpenAI(j.BaseURL, key, r.hc)
	case "anthropic":
		p = NewAnthropic(j.BaseURL, key, r.hc)
	default:
		return nil, "", &FatalError{Reason: fmt.Sprintf("unknown provider %q: use openai or anthropic", j.Provider)}
	}
	p2, _ := r.providers.LoadOrStore(pk, p)
	return p2.(Provider), endpoint, nil
}

// checkBaseURL refuses to send an API key in the clear to another machine,
// by the one notion of this machine every path shares (attune.KeyInClear):
// a prefix test let http://localhost.example.com and http://127.0.0.1.nip.io
// pass as local.
func checkBaseURL(base string, withKey, insecure bool) error {
	if !withKey || insecure || base == "" || !attune.KeyInClear(base) {
		return nil
	}
	return &FatalError{Reason: "the base URL is plain http on another machine; attune will not send an API key unencrypted (use https)"}
}

func (r *Runner) rubric(ctx context.Context, id int64) (*rubric.Definition, error) {
	if d, ok := r.rubrics.Load(id); ok {
		return d.(*rubric.Definition), nil
	}
	// One parse per version, however many workers start at once.
	r.rubricMu.Lock()
	defer r.rubricMu.Unlock()
	if d, ok := r.rubrics.Load(id); ok {
		return d.(*rubric.Definition), nil
	}
	d, err := r.db.FindRubricByID(ctx, id)
	if err != nil {
		return nil, err
	}
	r.rubrics.Store(id, d)
	return d, nil
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
		_, err := r.setStatus(ctx, run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunPaused, fatal.Reason, nil)
		return err
	}
	if err != nil {
		return err // a transient failure: the queue retries the start
	}
	capsJSON, _ := json.Marshal(caps)
	ok, err := r.setStatus(ctx, run.ID, []attune.RunStatus{attune.RunQueued}, attune.RunRunning, "", capsJSON)
	if err != nil || !ok {
		return err
	}
	run, err = r.db.FindRun(ctx, run.ID)
	if err != nil {
		return err
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
		_, err := r.setStatus(ctx, run.ID, []attune.RunStatus{attune.RunRunning}, attune.RunCompleted, "", nil)
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

// errStop ends an item's work without an answer: the run was paused or
// cancelled (by a person, a fatal error or the budget).
var errStop = errors.New("run stopped")

// itemWork is the state of answering one item.
// Its fields are read-only while the rubric items are answered at once,
// except the run's spending and budget, which mu guards.
type itemWork struct {
	mu            sync.Mutex
	run           *attune.JudgeRun
	rubricVersion int64
	judge         *attune.Judge
	prov          Provider
	endpoint      string
	caps          Capabilities
	cached        map[string][]byte
	limiter       *aimd
	// fresh asks without the cache: a sentinel (see askItem).
	fresh bool
	// facts are the labelled item's (rubric.FactsOf), which an answer is
	// held to as a person's is.
	facts rubric.Facts
}

// workItems answers the job's items not answered yet, one after another,
// each stored as soon as it is done.
func (r *Runner) workItems(ctx context.Context, job *river.Job[itemArgs]) error {
	run, err := r.currentRun(ctx, job.Args.RunID, job.Args.Generation)
	if err != nil {
		return err
	}
	if run.Status != attune.RunRunning || run.Generation != job.Args.Generation {
		return nil // paused, cancelled or restarted: a later start queues what is left
	}
	first, last := job.Args.span()
	todo, err := r.db.RunItemsTodoBetween(ctx, run, first, last)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		// Every item of the stretch was answered by a job of another
		// start: if they were the run's last, this job is the one left to
		// mark it.
		return r.completeIfDone(ctx, run)
	}
	for i, id := range todo {
		if i > 0 {
			// The run as all its items share it: a pause or cancel stops
			// the rest of the stretch.
			if run, err = r.currentRun(ctx, job.Args.RunID, job.Args.Generation); err != nil {
				return err
			}
			if run.Status != attune.RunRunning || run.Generation != job.Args.Generation {
				return nil
			}
		}
		if err := r.workItem(ctx, run, id); err != nil {
			return r.stop(ctx, run, err)
		}
	}
	return nil
}

// workItem answers every rubric item of one item and stores the answers
// in one transaction. Its error is the stop handles.
func (r *Runner) workItem(ctx context.Context, run *attune.JudgeRun, itemID int64) error {
	start := time.Now()
	labels, err := r.askItem(ctx, run, itemID, false)
	if err != nil {
		return err
	}
	written, completed, err := r.db.WriteJudgeAnswers(ctx, run, itemID, labels, time.Since(start).Milliseconds())
	if err != nil {
		return err
	}
	if completed {
		// The last item: its answers and the run's mark committed together.
		r.runs.Delete(run.ID)
		r.notify(ctx, run.ID)
		return nil
	}
	if written {
		return nil
	}
	// Answered already, by a worker that died before it could see whether
	// the run was done.
	r.notify(ctx, run.ID)
	return r.completeIfDone(ctx, run)
}

// askItem asks the run's judge every rubric item of one item and returns
// its answers, in the rubric's order. Answers paid for before (the same
// prompt, model and settings) are reused, unless fresh: a sentinel asks
// afresh, since a model changed behind its name answers differently.
func (r *Runner) askItem(ctx context.Context, run *attune.JudgeRun, itemID int64, fresh bool) ([]store.JudgeLabel, error) {
	rc, err := r.context(ctx, run)
	if err != nil {
		return nil, err
	}
	j, def := rc.judge, rc.def
	item, err := r.db.FindItem(ctx, run.ProjectID, itemID)
	if err != nil {
		return nil, err
	}
	w := &itemWork{run: run, judge: j, rubricVersion: rc.project.RubricVersionID, limiter: r.limits.get(j.ID, max(run.Settings.Concurrency, 1)),
		fresh: fresh}
	if w.prov, w.endpoint, err = r.provider(j); err != nil {
		return nil, err
	}
	if len(run.Capabilities) > 0 {
		json.Unmarshal(run.Capabilities, &w.caps)
	}
	dialogue := make([]Message, len(item.Messages))
	texts := make([]string, len(item.Messages))
	for i, m := range item.Messages {
		dialogue[i] = Message{Role: m.Role, Content: m.Content}
		texts[i] = m.Content
	}
	w.facts = rubric.FactsOf(item.Turns, texts, item.Sensitive)

	// Every prompt of the item first, so the cache is asked once.
	// Each sample's cache key is kept for its call, which would otherwise
	// hash it again.
	prompts := make([]Prompt, len(def.Items))
	samples := run.Settings.SampleCount()
	keys := make([]string, 0, len(def.Items)*samples)
	for i := range def.Items {
		if prompts[i], err = Render(def, &def.Items[i], dialogue); err != nil {
			return nil, err
		}
		numeric := isNumeric(def.Allowed(&def.Items[i]))
		for s := range samples {
			keys = append(keys, r.cacheKey(w, prompts[i].Hash, numeric, s, false))
		}
	}
	if !w.fresh {
		if w.cached, err = r.db.CachedResponses(ctx, keys); err != nil {
			return nil, err
		}
	}

	// The first rubric item alone, so the provider has the shared prefix
	// (the dialogue) in its cache; then the rest at once, within the
	// judge's concurrency, so an item takes about two calls' time.
	labels := make([]store.JudgeLabel, len(def.Items))
	errs := make([]error, len(def.Items))
	labels[0], errs[0] = r.answer(ctx, w, def, &def.Items[0], item.ID, prompts[0], keys[:samples])
	if errs[0] == nil {
		var wg sync.WaitGroup
		wg.Add(len(def.Items) - 1)
		for i := 1; i < len(def.Items); i++ {
			r.pool.Go(func() {
				defer wg.Done()
				labels[i], errs[i] = r.answer(ctx, w, def, &def.Items[i], item.ID, prompts[i], keys[i*samples:(i+1)*samples])
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return labels, nil
}

type schemaKey struct {
	rubricVersion int64
	item          string
}

// schemaFor is SchemaFor, encoded once per rubric version and item. The
// schema depends on the item's key and allowed answers alone, which a
// judge's prompt version does not change.
func (r *Runner) schemaFor(rubricVersion int64, def *rubric.Definition, it *rubric.Item) Schema {
	k := schemaKey{rubricVersion, it.Key}
	if s, ok := r.schemas.Load(k); ok {
		return s.(Schema)
	}
	s := SchemaFor(def, it)
	r.schemas.Store(k, s)
	return s
}

// stop handles an error that ends an item's work: a fatal provider error
// pauses the run with its reason; errStop means it is already stopped.
func (r *Runner) stop(ctx context.Context, run *attune.JudgeRun, err error) error {
	var fatal *FatalError
	switch {
	case errors.Is(err, errStop):
		return nil
	case errors.As(err, &fatal):
		_, serr := r.setStatus(ctx, run.ID, []attune.RunStatus{attune.RunRunning}, attune.RunPaused, fatal.Reason, nil)
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
	_, err = r.setStatus(ctx, run.ID, []attune.RunStatus{attune.RunRunning}, attune.RunCompleted, "", nil)
	return err
}

// callSettings are the request settings that change an answer, for the
// cache key: the same prompt under other settings is another answer.
type callSettings struct {
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Logprobs    bool     `json:"logprobs,omitempty"`
	Structured  bool     `json:"structured,omitempty"`
	Reask       bool     `json:"reask,omitempty"`
}

// settings are the request settings for one rubric item. With log-
// probabilities on, a numeric item is asked for the score alone, as plain
// text: the score must be the first token for its probabilities to be read
// (G-Eval), which structured output would put behind the reasoning.
func (r *Runner) settings(w *itemWork, numeric, reask bool) callSettings {
	s := w.run.Settings
	logprobs := s.Logprobs && w.caps.Logprobs && numeric
	seed := s.Seed
	if !w.caps.Seed {
		seed = nil // an endpoint that refuses the option would refuse every call
	}
	return callSettings{Temperature: s.Temperature, MaxTokens: s.MaxTokens, Seed: seed,
		Logprobs: logprobs, Structured: w.caps.StructuredOutput && !logprobs, Reask: reask}
}

func (r *Runner) cacheKey(w *itemWork, promptHash string, numeric bool, sample int, reask bool) string {
	key := CacheKey(w.endpoint, w.judge.Model, r.settings(w, numeric, reask), sample, promptHash)
	if w.fresh {
		// A sentinel's call is kept under a key of its own run: the
		// record of a call paid for, never served from the cache nor
		// mistaken for the cached answer to the same prompt.
		sum := sha256.Sum256([]byte(fmt.Sprintf("sentinel %d %s", w.run.ID, key)))
		return hex.EncodeToString(sum[:])
	}
	return key
}

// answer asks for every sample of one rubric item and reduces them to one
// label, recording how it was reached. keys are the samples' cache keys.
func (r *Runner) answer(ctx context.Context, w *itemWork, def *rubric.Definition, it *rubric.Item, itemID int64, prompt Prompt, keys []string) (store.JudgeLabel, error) {
	allowed := def.Allowed(it)
	numeric := isNumeric(allowed)
	structured := r.settings(w, numeric, false).Structured
	var values []rubric.Value
	var methods []string
	var reasoning, raw string
	// why is what made the last ERROR sample one, kept with an ERROR
	// answer for the lead to read.
	var why string
	var weighted *float64
	var dist map[string]float64
	for s := range w.run.Settings.SampleCount() {
		resp, err := r.call(ctx, w, def, it, numeric, itemID, prompt.Messages, prompt, s, false, keys[s])
		if err != nil {
			if stopping(err) {
				return store.JudgeLabel{}, err
			}
			values, methods, raw, why = append(values, rubric.Error), append(methods, "error"), err.Error(), "the call failed: "+err.Error()
			continue
		}
		ans, perr := ReadAnswer(def, it, resp.Text, structured, w.facts)
		if msgs, ok := ReAskAfter(prompt, resp.Text, perr, allowed); ok {
			// One re-ask naming the problem (an unreadable reply, or an
			// answer the rubric forbids for this dialogue, which is no
			// more stored than a person's would be); then the raw text is
			// kept with an ERROR and the reason, never silently dropped.
			resp2, err := r.call(ctx, w, def, it, numeric, itemID, msgs, prompt, s, true, r.cacheKey(w, prompt.Hash, numeric, s, true))
			if err != nil {
				if stopping(err) {
					return store.JudgeLabel{}, err
				}
				values, methods, raw = append(values, rubric.Error), append(methods, "error"), resp.Text
				why = notAnswer(perr) + "; the re-ask failed: " + err.Error()
				continue
			}
			if ans, perr = ReadAnswer(def, it, resp2.Text, structured, w.facts); perr != nil {
				values, methods, raw = append(values, rubric.Error), append(methods, "error"), resp.Text+"\n---\n"+resp2.Text
				why = "re-asked once, and still " + notAnswer(perr)
				continue
			}
			ans.Method = "reasked-" + ans.Method
			resp = resp2
		} else if perr != nil {
			return store.JudgeLabel{}, perr
		}
		values, methods = append(values, ans.Value), append(methods, ans.Method)
		if reasoning == "" {
			reasoning = ans.Reasoning
		}
		raw = resp.Text
		if s == 0 && numeric && len(resp.TopLogprobs) > 0 {
			if score, d, ok := WeightedScore(resp.TopLogprobs, allowed); ok {
				weighted = &score
				dist = map[string]float64{}
				for v, p := range d {
					dist[string(v)] = p
				}
			}
		}
	}
	l := store.JudgeLabel{Key: it.Key, Rationale: reasoning, PromptHash: prompt.Hash, WeightedScore: weighted, Distribution: dist, Raw: raw}
	if len(values) == 1 {
		l.Value, l.Method = string(values[0]), methods[0]
		if weighted != nil && l.Method != "error" {
			l.Method = "logprob"
		}
		if l.Method == "error" {
			l.Reason = why
		}
		return l, nil
	}
	v, spread := Aggregate(numeric, values)
	l.Value, l.Method, l.Spread = string(v), "sampled", &spread
	for _, x := range values {
		l.Samples = append(l.Samples, string(x))
	}
	if v == rubric.Error {
		l.Method, l.Reason = "error", why
	}
	return l, nil
}

func stopping(err error) bool {
	var fatal *FatalError
	return errors.Is(err, errStop) || errors.As(err, &fatal) || errors.Is(err, context.Canceled)
}

func isNumeric(vs []rubric.Value) bool {
	for _, v := range vs {
		if _, err := strconv.Atoi(string(v)); err != nil {
			return false
		}
	}
	return len(vs) > 0
}

// call sends one request, from the cache when a valid answer exists,
// otherwise paced, within the judge's concurrency, and retried: waiting out
// Retry-After on 429, exponential backoff with jitter on timeouts and 5xx.
// A call that comes back is stored at once, before its answer is used. It
// returns errStop when the run stopped, a *FatalError that no retry can
// fix, or the last error once the attempts are spent. key is the call's
// cache key, numeric whether the item's answers are numbers.
func (r *Runner) call(ctx context.Context, w *itemWork, def *rubric.Definition, it *rubric.Item, numeric bool, itemID int64, msgs []Message, prompt Prompt, sample int, reask bool, key string) (Response, error) {
	promptHash := prompt.Hash
	if b, ok := w.cached[key]; ok {
		var resp Response
		if err := json.Unmarshal(b, &resp); err == nil {
			return resp, nil
		}
	}
	set := r.settings(w, numeric, reask)
	req := Request{Model: w.judge.Model, Messages: msgs, Temperature: set.Temperature, MaxTokens: set.MaxTokens, Seed: set.Seed}
	if set.Seed != nil && sample > 0 {
		// Each sample its own seed: the same seed would give the same answer.
		seed := *set.Seed + int64(sample)
		req.Seed = &seed
	}
	if len(def.Items) > 1 {
		// The item's other calls share the dialogue: mark it for providers
		// that cache explicitly.
		req.CachePrefix = prompt.Prefix
	}
	if set.Logprobs {
		req.Logprobs, req.TopLogprobs = true, 20
	}
	if set.Structured {
		schema := r.schemaFor(w.rubricVersion, def, it)
		req.Schema = &schema
	}
	estTokens := estimateRequestTokens(msgs, set.MaxTokens)
	var last error
	for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
		if err := r.checkRun(ctx, w); err != nil {
			return Response{}, err
		}
		if s := w.run.Settings; s.RPM > 0 || s.TPM > 0 {
			at, err := r.db.Pace(ctx, w.judge.ID, s.RPM, s.TPM, estTokens)
			if err != nil {
				return Response{}, err
			}
			if err := sleep(ctx, time.Until(at)); err != nil {
				return Response{}, err
			}
		}
		if err := w.limiter.acquire(ctx); err != nil {
			return Response{}, err
		}
		cctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		t0 := time.Now()
		resp, err := w.prov.Complete(cctx, req)
		lat := time.Since(t0)
		cancel()
		var rl *RateLimitError
		w.limiter.release(errors.As(err, &rl))
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		if err == nil {
			return resp, r.record(ctx, w, itemID, it.Key, sample, reask, key, promptHash, resp, lat)
		}
		last = err
		var fatal *FatalError
		var wait time.Duration
		switch {
		case errors.As(err, &fatal) && fatal.RequestOnly:
			// This request alone cannot be served (a prompt longer than the
			// model's context): its answer is an ERROR; the run goes on.
			attempt = r.opts.MaxAttempts
			continue
		case errors.As(err, &fatal):
			return Response{}, fatal
		case errors.As(err, &rl):
			wait = max(rl.RetryAfter, r.backoff(attempt))
		default: // transient: 5xx, timeouts, resets
			wait = r.backoff(attempt)
		}
		r.opts.Logger.Debug("judge call retry", "run", w.run.ID, "item", itemID, "rubric_item", it.Key, "attempt", attempt, "wait", wait, "err", err)
		if attempt < r.opts.MaxAttempts {
			if err := sleep(ctx, wait); err != nil {
				return Response{}, err
			}
		}
	}
	// Out of attempts: the failure is recorded, and the caller writes an
	// ERROR answer — never a silent drop, never a pass.
	if err := r.calls.record(ctx, store.JudgeCall{RunID: w.run.ID, JudgeID: w.judge.ID, ItemID: itemID, RubricItemKey: it.Key, Sample: sample,
		Reask: reask, CacheKey: key, PromptHash: promptHash, Model: w.judge.Model, OK: false, Error: last.Error()}); err != nil {
		r.opts.Logger.Error("judge call failure not recorded", "run", w.run.ID, "item", itemID, "rubric_item", it.Key, "err", err)
	}
	return Response{}, fmt.Errorf("gave up after %d attempts: %w", r.opts.MaxAttempts, last)
}

// record stores a call that came back and charges the run; a run over its
// budget is paused.
func (r *Runner) record(ctx context.Context, w *itemWork, itemID int64, key string, sample int, reask bool, cacheKey, promptHash string, resp Response, lat time.Duration) error {
	s := w.run.Settings.Prices
	cost := Cost(resp.Usage, Prices{InputPerMTok: s.InputPerMTok, CachedInputPerMTok: s.CachedInputPerMTok, OutputPerMTok: s.OutputPerMTok})
	// The cache needs the answer, its log-probabilities and usage; the
	// provider's whole body would double what each call writes.
	kept := resp
	kept.Raw = ""
	body, _ := json.Marshal(kept)
	err := r.calls.record(ctx, store.JudgeCall{RunID: w.run.ID, JudgeID: w.judge.ID, ItemID: itemID, RubricItemKey: key, Sample: sample,
		Reask: reask, CacheKey: cacheKey, PromptHash: promptHash, Model: w.judge.Model, OK: true, Raw: resp.Text, Response: body,
		InputTokens: resp.Usage.InputTokens, CachedTokens: resp.Usage.CachedInputTokens, OutputTokens: resp.Usage.OutputTokens,
		CostUSD: cost, Latency: lat})
	if err != nil {
		return err
	}
	w.mu.Lock()
	capped := w.run.BudgetUSD != nil
	w.mu.Unlock()
	if !capped {
		return nil
	}
	spent, budget, err := r.db.AddRunSpend(ctx, w.run.ID, cost)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.run.SpentUSD, w.run.BudgetUSD = spent, budget
	w.mu.Unlock()
	if budget != nil && spent >= *budget {
		if _, err := r.pauseOverBudget(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// pauseOverBudget pauses w's run if it has spent its budget as the run
// stands now, and only if w belongs to its current start: a job of an
// earlier start, finishing after the budget was raised and the run resumed,
// must not pause the new start on the budget it read. It reports whether
// it paused the run.
func (r *Runner) pauseOverBudget(ctx context.Context, w *itemWork) (bool, error) {
	paused, err := r.db.PauseRunOverBudget(ctx, w.run.ID, w.run.Generation, func(spent, budget float64) string {
		return fmt.Sprintf("the budget of $%.2f is spent ($%.4f); raise it to go on", budget, spent)
	})
	if paused {
		r.runs.Delete(w.run.ID)
		r.notify(ctx, w.run.ID)
	}
	return paused, err
}

// checkRun stops work for a run that is no longer running. It goes by the
// run as all its items share it, read at most runStatusAge ago, so a pause
// takes effect within a second without a query per call or per item.
func (r *Runner) checkRun(ctx context.Context, w *itemWork) error {
	w.mu.Lock()
	over := w.run.BudgetUSD != nil && w.run.SpentUSD >= *w.run.BudgetUSD
	w.mu.Unlock()
	generation := w.run.Generation
	if over {
		// Say why, rather than leave the run "running" with nothing moving.
		// The budget w read may have been raised since: the pause goes by
		// the run as it stands, and if it does not happen the run is read
		// afresh below.
		paused, err := r.pauseOverBudget(ctx, w)
		if err != nil {
			return err
		}
		if paused {
			return errStop
		}
		generation = 0
	}
	run, err := r.currentRun(ctx, w.run.ID, generation)
	if err != nil {
		return err
	}
	if run.Status != attune.RunRunning || run.Generation != w.run.Generation {
		return errStop
	}
	w.mu.Lock()
	// This item's own spending may be newer than the shared read.
	w.run.SpentUSD, w.run.BudgetUSD = max(w.run.SpentUSD, run.SpentUSD), run.BudgetUSD
	w.mu.Unlock()
	return nil
}

// backoff is the wait before attempt+1: exponential from BaseBackoff,
// capped, with full jitter so that workers do not retry in lockstep.
func (r *Runner) backoff(attempt int) time.Duration {
	d := r.opts.BaseBackoff << min(attempt-1, 16)
	if d <= 0 || d > r.opts.MaxBackoff {
		d = r.opts.MaxBackoff
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func estimateRequestTokens(msgs []Message, maxTokens int) int {
	n := 0
	for _, m := range msgs {
		n += EstimateTokens(m.Content)
	}
	if maxTokens <= 0 {
		maxTokens = 256
	}
	return n + maxTokens
}

// Estimate is what a run is expected to cost before it starts.
type Estimate struct {
	Items int
	// Sentinels are the project's calibration items, which every run
	// asks as well (see workSentinel); the calls and cost count them.
	Sentinels    int
	Calls        int
	InputTokens  int
	OutputTokens int
	USD          float64
}

// EstimateRun estimates a run of judge j over the first limit items of a
// project (all when limit is 0), and its sentinels (the project's
// calibration items), from the prompts of a sample of its items,
// asked with the judge's prompt version (0 or 1: the rubric's own):
// every call's prompt tokens, and max_tokens (or 256) out. Cached answers
// and re-asks are not counted; the figure is an estimate.
func (r *Runner) EstimateRun(ctx context.Context, j *attune.Judge, p *attune.Project, limit, promptVersion int) (Estimate, error) {
	def, err := r.rubric(ctx, p.RubricVersionID)
	if err != nil {
		return Estimate{}, err
	}
	if promptVersion > 1 {
		jp, err := r.db.FindJudgePrompt(ctx, j.ID, p.RubricVersionID, promptVersion)
		if err != nil {
			return Estimate{}, err
		}
		def = WithPrompts(def, jp.Prompts)
	}
	ids, err := r.db.ItemIDs(ctx, p.ID, limit)
	if err != nil {
		return Estimate{}, err
	}
	sentinels, err := r.db.CountSentinelItems(ctx, p.ID)
	if err != nil {
		return Estimate{}, err
	}
	e := Estimate{Items: len(ids), Sentinels: sentinels}
	if len(ids) == 0 {
		return e, nil
	}
	// A sample spread over the run keeps the estimate cheap for 100,000
	// items and fair when dialogue lengths drift through a file.
	step := max(1, len(ids)/50)
	var sampled, inTokens int
	for i := 0; i < len(ids); i += step {
		item, err := r.db.FindItem(ctx, p.ID, ids[i])
		if err != nil {
			return Estimate{}, err
		}
		dialogue := make([]Message, len(item.Messages))
		for k, m := range item.Messages {
			dialogue[k] = Message{Role: m.Role, Content: m.Content}
		}
		for k := range def.Items {
			pr, err := Render(def, &def.Items[k], dialogue)
			if err != nil {
				return Estimate{}, err
			}
			for _, m := range pr.Messages {
				inTokens += EstimateTokens(m.Content)
			}
		}
		sampled++
	}
	samples := j.Settings.SampleCount()
	// The sentinels' dialogues are taken to be as long as the items'.
	asked := len(ids) + sentinels
	e.Calls = asked * len(def.Items) * samples
	e.InputTokens = inTokens * asked / sampled * samples
	out := j.Settings.MaxTokens
	if out <= 0 {
		out = 256
	}
	e.OutputTokens = e.Calls * out
	pr := j.Settings.Prices
	e.USD = Cost(Usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens},
		Prices{InputPerMTok: pr.InputPerMTok, CachedInputPerMTok: pr.CachedInputPerMTok, OutputPerMTok: pr.OutputPerMTok})
	return e, nil
}
