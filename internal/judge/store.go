package judge

import (
	"context"
	"time"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Store is what a Runner needs of the database: the methods it calls and
// no others, so that the runner speaks no SQL of its own and what it
// depends on can be read here. *store.DB satisfies it.
type Store interface {
	queueStore
	itemStore
	callStore
}

var _ Store = (*store.DB)(nil)

// queueStore is what the job queue's side of the runner uses: the queue's
// driver, the worker lock and rescue, runs' status and the notifications
// that announce it, and the runs' lists of items to queue.
type queueStore interface {
	QueueDriver() *riverpgxv5.Driver
	LockWorker(ctx context.Context, w store.Worker) (*store.WorkerLock, error)
	RequeueStrandedJobs(ctx context.Context, queue, clientID string, working []int64) (int64, error)
	RequeueJobsOfDeadWorkers(ctx context.Context, queue string) (int64, error)
	CompleteFinishedRuns(ctx context.Context, queue string) ([]int64, error)

	FindRun(ctx context.Context, id int64) (*attune.JudgeRun, error)
	SetRunStatus(ctx context.Context, id int64, from []attune.RunStatus, to attune.RunStatus, reason string, capabilities []byte) (bool, error)
	SetRunBudget(ctx context.Context, runID int64, usd *float64) error
	NotifyRun(ctx context.Context, runID int64) error
	ListenRuns(ctx context.Context) (*store.RunListener, error)

	StartRunItems(ctx context.Context, run *attune.JudgeRun) ([]int64, error)
	RunItemsTodo(ctx context.Context, run *attune.JudgeRun) ([]int64, error)
	RunItemsTodoBetween(ctx context.Context, run *attune.JudgeRun, first, last int64) ([]int64, error)
	ItemIDs(ctx context.Context, projectID int64, limit int) ([]int64, error)
	SentinelItems(ctx context.Context, run *attune.JudgeRun) ([]store.SentinelItem, error)
	CountSentinelItems(ctx context.Context, projectID int64) (int, error)
	WriteSentinel(ctx context.Context, run *attune.JudgeRun, itemID int64, answers, gold map[string]string) error

	ProbeItems(ctx context.Context, projectID int64) ([]int64, error)
	ProbeAnswers(ctx context.Context, runID int64) ([]store.ProbeAnswer, error)
	WriteProbeAnswers(ctx context.Context, a store.ProbeAnswer, runID int64) error
}

// itemStore is what answering one item uses: what the run asks with, the
// item, the answers paid for before, and the write of its answers.
type itemStore interface {
	FindJudge(ctx context.Context, id int64) (*attune.Judge, error)
	FindProjectByID(ctx context.Context, id int64) (*attune.Project, error)
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	FindJudgePromptByID(ctx context.Context, id int64) (*attune.JudgePrompt, error)
	FindJudgePrompt(ctx context.Context, judgeID, rubricVersionID int64, version int) (*attune.JudgePrompt, error)
	FindItem(ctx context.Context, projectID, itemID int64) (*attune.Item, error)
	CachedResponses(ctx context.Context, keys []string) (map[string][]byte, error)
	WriteJudgeAnswers(ctx context.Context, run *attune.JudgeRun, itemID int64, labels []store.JudgeLabel, activeMS int64) (written, completed bool, err error)
}

// callStore is what one provider call uses: the judge's shared pacing,
// the record of the call and the run's spending.
type callStore interface {
	Pace(ctx context.Context, judgeID int64, rpm, tpm, tokens int) (time.Time, error)
	RecordCalls(ctx context.Context, calls []store.JudgeCall) error
	AddRunSpend(ctx context.Context, runID int64, usd float64) (spent float64, budget *float64, err error)
	PauseRunOverBudget(ctx context.Context, id int64, generation int, reason func(spent, budget float64) string) (bool, error)
}
