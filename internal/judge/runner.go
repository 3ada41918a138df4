package judge

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

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
	db     Store
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

// NewRunner builds a Runner over db, which is a *store.DB (see Store).
func NewRunner(db Store, opts RunnerOptions) (*Runner, error) {
	r := &Runner{db: db, opts: opts.withDefaults(), worker: store.NewWorker(), calls: newRecorder(db.RecordCalls), pool: newGoPool(10 * time.Second)}
	r.hc = guardedClient(r.opts.Policy)
	r.provider = r.newProvider
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workStart)))
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workItems)))
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workSentinel)))
	river.AddWorker(workers, river.WorkFunc(guarded(r, r.workProbe)))
	queues := map[string]river.QueueConfig{queue: {MaxWorkers: r.opts.Workers}}
	for _, add := range r.opts.Also {
		name, cfg := add(workers)
		queues[name] = cfg
		r.alsoQueues = append(r.alsoQueues, name)
	}
	// The queue listens and elects its leader on sessions of its own.
	client, err := river.NewClient(db.QueueDriver(), &river.Config{
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
