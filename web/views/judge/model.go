// Package judge renders the judge pages, which only leads and admins see:
// the judges with their settings, the form that creates or edits one, a
// judge tried on one item, the start of a run with its estimate, a run's
// live progress, and a judge's answers per item beside the people's.
// RunProgress is the part htmx polls; RunView frames it as a whole page, and
// Section is the block the project page shows.
//
// Everything a model or a person wrote is written as text, never as markup.
package judge

import (
	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// Option is one choice of a select.
type Option struct {
	Value, Label string
}

// ListPage lists every judge.
type ListPage struct {
	layout.Chrome
	Judges []Row
}

// Row is one judge in the list.
type Row struct {
	ID       int64
	Name     string
	Provider string
	Model    string
	BaseURL  string // "" for the provider's own
	KeyEnv   string // the variable's name; never its value
	Owner    string // "you", the owner's email, or "" for none
	Settings string // a summary: temperature, tokens, samples, limits
	Prices   string
	Totals   string // calls, tokens and cost over all runs; "" before the first
	EditURL  templ.SafeURL
}

// Form is what was typed into the judge form. Numbers stay text so that a
// refused form comes back as typed.
type Form struct {
	Name        string
	Provider    string // openai or anthropic
	BaseURL     string
	Model       string
	KeyEnv      string
	Temperature string
	MaxTokens   string
	Samples     string
	Logprobs    bool
	Seed        string
	Concurrency string
	RPM         string
	TPM         string
	PriceInput  string
	PriceCached string
	PriceOutput string
	// AskConfirmKey shows the box that confirms the key variable for
	// the endpoint ConfirmKeyFor ("provider base-url"), after an edit
	// moved the judge to another endpoint.
	AskConfirmKey     bool
	ConfirmKeyFor     string
	ConfirmKeyChecked bool
}

// endpointLabel names a base URL for the key's confirmation; "" is the
// provider's own API.
func endpointLabel(base string) string {
	if base == "" {
		return "the provider's own API"
	}
	return base
}

// FormPage creates a judge (ID 0) or edits one; an edited judge can also
// be tried on an item.
type FormPage struct {
	layout.Chrome
	ID     int64
	Form   Form
	Errors map[string]string // field → message
	Try    TryForm
	// ConnectionLocked says the viewer may not change the judge's
	// provider, base URL or key variable (only its owner or an admin).
	ConnectionLocked bool
}

// TryForm chooses the item a judge is tried on.
type TryForm struct {
	Action   templ.SafeURL
	Projects []Option // the projects the viewer leads
	Project  string   // chosen project id
	Item     string   // the dataset's item id; "" for the first item
	Errors   map[string]string
}

// Capabilities are what the probe found the endpoint supports.
type Capabilities struct {
	Known            bool // false before a run has probed
	StructuredOutput bool
	Logprobs         bool
	Seed             bool
	Notes            []string
}

// TryPage shows a judge's answers for one item, asked now and not stored.
type TryPage struct {
	layout.Chrome
	JudgeName    string
	Model        string
	EditURL      templ.SafeURL
	ProjectName  string
	SourceID     string
	Failure      string // why nothing could be asked; "" otherwise
	Capabilities Capabilities
	Results      []TryResult
	Tokens       string
	Cost         string
	Try          TryForm
}

// TryResult is one rubric item asked once.
type TryResult struct {
	Key          string
	Label        string
	Prompt       string // the prompt as sent
	PromptHash   string
	Raw          string
	ReaskRaw     string // the reply to the re-ask; "" when none was made
	Value        string
	Method       string // structured, parsed, tolerant, logprob or error
	Reasked      bool
	Reasoning    string
	Note         string
	Weighted     string // the probability-weighted score; "" when none
	Distribution []Share
	Tokens       string
	Cost         string
	Latency      string
	Error        string
}

// Share is one answer's probability.
type Share struct {
	Value   string
	Percent string
}

// ProjectSection is the Judges block of a project's page: the form that
// starts a run and the project's runs.
type ProjectSection struct {
	Action   templ.SafeURL // where the start form posts
	Judges   []Option
	Form     StartForm
	Errors   map[string]string
	Runs     []RunRow
	CanStart bool // a judge exists to start
	// Prompts link to each judge's prompt versions for the project's
	// rubric.
	Prompts []Link
	// Certifications link to each judge's certification: the alt-test
	// beside its robustness probes, and the start of a probe.
	Certifications []Link
}

// Link is a labelled URL.
type Link struct {
	Label string
	URL   templ.SafeURL
}

// StartForm is what was typed into the start-a-run form.
type StartForm struct {
	Judge  string // judge id
	Limit  string // items; "" for all
	Budget string // US dollars; "" for none
	Prompt string // the judge's prompt version; "" for the rubric's own (v1)
}

// RunRow is one run in a project's list.
type RunRow struct {
	ID      int64
	URL     templ.SafeURL
	Judge   string
	Status  string
	Reason  string
	Items   int
	Created string
}

// ConfirmPage shows a run's estimate before it starts.
type ConfirmPage struct {
	layout.Chrome
	ProjectName  string
	ProjectURL   templ.SafeURL
	Action       templ.SafeURL
	JudgeName    string
	Model        string
	Form         StartForm
	Items        int
	Sentinels    int // calibration items every run asks too
	RubricItems  int
	Samples      int
	Calls        string
	InputTokens  string
	OutputTokens string
	USD          string
	Budget       string // "" for none
	OverBudget   bool   // the estimate exceeds the budget: the run will pause
	Active       string // a run of this judge already under way here; "" when none
}

// RunPage is a run's page.
type RunPage struct {
	layout.Chrome
	ProjectName  string
	ProjectURL   templ.SafeURL
	RunID        int64
	JudgeName    string
	Model        string
	Settings     string
	Limit        string
	Created      string
	Started      string
	Finished     string
	AnswersURL   templ.SafeURL
	ErrorsURL    templ.SafeURL
	Capabilities Capabilities
	Progress     Progress
}

// Progress is the live part of a run's page. While the run is queued or
// running it asks for itself again every two seconds (Poll).
type Progress struct {
	URL       string // the partial's own address
	Poll      bool
	Status    string
	Reason    string
	Done      int
	Total     int
	Percent   int
	Labels    int
	Errors    int
	Calls     int
	Failed    int
	Reasks    int
	Input     string
	Cached    string
	Output    string
	Cost      string
	Estimate  string
	Budget    string // "" for none
	TimeLeft  string // "" when unknown
	Actions   RunActions
	ByItem    []CostRow
	ErrorsURL templ.SafeURL
}

// RunActions are the buttons a run's status allows.
type RunActions struct {
	Pause, Resume, Cancel templ.SafeURL // "" when not allowed
}

// CostRow is a run's calls for one rubric item.
type CostRow struct {
	Key    string
	Label  string
	Calls  int
	Failed int
	Reasks int
	Errors int // ERROR labels
	Input  string
	Cached string
	Output string
	Cost   string
}

// ItemsPage lists a run's items with the judge's answers, a page at a
// time.
type ItemsPage struct {
	layout.Chrome
	ProjectName string
	ProjectURL  templ.SafeURL
	RunURL      templ.SafeURL
	RunID       int64
	JudgeName   string
	Keys        []string // the rubric items, as column heads
	Items       []ItemRow
	ErrorsOnly  bool
	AllURL      templ.SafeURL
	ErrorsURL   templ.SafeURL
	Total       int
	From, To    int // the rows shown, counted from 1
	PrevURL     templ.SafeURL
	NextURL     templ.SafeURL
}

// ItemRow is one item of a run.
type ItemRow struct {
	URL      templ.SafeURL
	SourceID string
	Answered bool
	Values   []string // in the order of ItemsPage.Keys; "" when unanswered
	Errors   int
	Calls    int
	Cost     string
}

// ItemPage is a judge's answers for one item, with every call it made,
// beside the people's answers, all scored by the same engine.
type ItemPage struct {
	layout.Chrome
	ProjectName string
	ProjectURL  templ.SafeURL
	RunURL      templ.SafeURL
	ItemsURL    templ.SafeURL
	RunID       int64
	JudgeName   string
	SourceID    string
	Dialogue    []Message
	Answers     []Answer // empty before the judge answered
	Compare     Comparison
	// Notes are the rubric's errors and warnings on the judge's answers,
	// checked with the item's facts as a person's are.
	Notes []Note
	Calls []Call
}

// Note is one of the rubric's issues with a judge's answers.
type Note struct {
	Severity string // "error" or "warning"
	Message  string
}

// Message is one message of the dialogue.
type Message struct {
	Role    string
	Content string
}

// Answer is the judge's label for one rubric item and how it was reached.
type Answer struct {
	Key          string
	Label        string
	Value        string
	Method       string
	Reasked      bool
	Weighted     string
	Distribution []Share
	Samples      string // the samples' values in order; "" for one
	Spread       string
	Rationale    string
	PromptHash   string
	Raw          string
	OtherRun     string // "run 3" when an earlier run wrote it; "" for this run
	// Reason says why an ERROR is one; "" otherwise, or when not recorded.
	Reason string
}

// Comparison sets the judge's answers beside each person's, with the
// engine's score of each answer set. Column 0 is the judge.
type Comparison struct {
	Raters []string
	Rows   []CompareRow
	Score  []string
	Pass   []string
	Gate   []string
	Failed []string
}

// CompareRow is one rubric item across the raters.
type CompareRow struct {
	Key    string
	Label  string
	Values []string
	Differ []bool // the person's value differs from the judge's
}

// Call is one stored call.
type Call struct {
	ID         int64
	Run        int64
	RubricItem string
	Sample     int
	Reask      bool
	OK         bool
	Raw        string
	Error      string
	Tokens     string
	Cost       string
	Latency    string
	At         string
}
