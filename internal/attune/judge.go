package attune

import "time"

// Judge is a model with its settings, acting as one more rater.
type Judge struct {
	ID        int64
	Name      string
	Provider  string // "openai" (any OpenAI-compatible endpoint) or "anthropic"
	BaseURL   string
	Model     string
	APIKeyEnv string // the environment variable holding the key; the key itself is never stored
	Settings  JudgeSettings
	RaterID   int64
	// CreatedBy is the judge's owner: who created it (nil: the command
	// line, or an account since deleted). Only the owner or an admin may
	// change where it sends calls and which key it sends; see CheckChange.
	CreatedBy *int64
	// OwnerEmail is the owner's email, to show ("" when there is none).
	OwnerEmail string
	CreatedAt  time.Time
}

// JudgeSettings are how a judge calls its model and what it may spend.
type JudgeSettings struct {
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Samples     int      `json:"samples,omitempty"` // answers per prompt; 0 or 1 means one
	Logprobs    bool     `json:"logprobs,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Concurrency int      `json:"concurrency,omitempty"` // calls at once, per worker process
	RPM         int      `json:"rpm,omitempty"`         // requests per minute, across all workers
	TPM         int      `json:"tpm,omitempty"`         // tokens per minute, across all workers
	Prices      Prices   `json:"prices"`
}

// SampleCount is how many answers the judge asks for per prompt.
func (s JudgeSettings) SampleCount() int { return max(s.Samples, 1) }

// Prices are a model's prices in US dollars per million tokens.
type Prices struct {
	InputPerMTok       float64 `json:"input_per_mtok"`
	CachedInputPerMTok float64 `json:"cached_input_per_mtok"`
	OutputPerMTok      float64 `json:"output_per_mtok"`
}

// RunStatus is where a judge run stands.
type RunStatus string

// The run statuses.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunCancelled RunStatus = "cancelled"
	RunCompleted RunStatus = "completed"
)

// JudgeRun is one judge over one project.
type JudgeRun struct {
	ID           int64
	JudgeID      int64
	JudgeName    string
	ProjectID    int64
	Status       RunStatus
	Reason       string // why it is paused or cancelled
	ItemLimit    *int
	BudgetUSD    *float64
	EstimateUSD  float64
	SpentUSD     float64
	ItemsTotal   int
	Capabilities []byte // JSON, as probed at the start
	Settings     JudgeSettings
	Generation   int
	// PromptID is the prompt version the run asks with (nil: a run made
	// before prompts had versions, which asked with the rubric's own
	// prompts), PromptVersion its number (0 for nil).
	PromptID      *int64
	PromptVersion int
	// RaterID is the rater the run's answers go to: the judge's own for
	// version 1, the version's own rater for a later one, so that
	// agreement tells the judge's prompts apart.
	RaterID int64
	// Kind is RunLabel for a run that labels the project's items, RunProbe
	// for a robustness probe over its calibration items, whose answers are
	// no labels; ProbeK is a probe's asks of each item as it is (0 for a
	// run that labels).
	Kind       string
	ProbeK     int
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// The kinds of a judge run.
const (
	RunLabel = "label"
	RunProbe = "probe"
)

// RunProgress is how far a run has come.
type RunProgress struct {
	ItemsTotal   int
	ItemsDone    int
	Labels       int
	Errors       int // ERROR labels
	Calls        int
	InputTokens  int64
	CachedTokens int64
	OutputTokens int64
	CostUSD      float64
	TimeLeft     time.Duration // estimated from the pace so far; 0 when unknown
}
