// Package gold renders the pages where leads settle gold labels: the queue
// of disagreements, one item adjudicated beside its raters' answers and the
// rubric, and the gold set with its counts, consensus setting and exports.
// Only a project's leads see them.
//
// Everything a person or a model wrote is written as text, never as markup.
package gold

import (
	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/annotate"
	"github.com/attune/attune/web/views/layout"
)

// Links are the addresses the gold pages share.
type Links struct {
	Project templ.SafeURL
	Queue   templ.SafeURL
	Gold    templ.SafeURL
	// Apply runs the consensus rule over the items it has not judged.
	Apply templ.SafeURL
	// Calibration is the calibration set and its people's standing.
	Calibration templ.SafeURL
}

// Counts say where the project's items stand.
type Counts struct {
	Items       int
	Labelling   int // fewer human answer sets than the overlap
	Automatic   int // gold by the consensus rule
	Adjudicated int // gold set by a lead
	Queue       int // waiting for a lead
	Pending     int // complete, but the rule has not judged them as they are
	Open        int // no gold yet
}

// SetPage is the gold set: counts, the consensus setting and the exports.
type SetPage struct {
	layout.Chrome
	ProjectName string
	Rubric      string // key@version
	Links       Links
	Counts      Counts
	// Numeric is true when the rubric has items on a numeric scale, where
	// the maximum spread applies.
	Numeric     bool
	Settings    templ.SafeURL
	MaxSpread   string // as stored or as typed
	SpreadLimit int    // the widest a project may set (gold.MaxSpreadLimit)
	SpreadError string
	Exports     []Export
	// Datasets are the downloads of the dataset export, for training and
	// evaluation pipelines.
	Datasets []DatasetExport
}

// Export is one dataset to download.
type Export struct {
	Key   string // gold, labels, judge-calls; for test ids
	Title string
	Help  string
	CSV   templ.SafeURL
	JSONL templ.SafeURL
	// WithRaters downloads the gold set with every rater's answers; empty
	// for other datasets.
	WithRaters templ.SafeURL
}

// DatasetExport is one selection of the dataset export, in both formats,
// with and without soft labels.
type DatasetExport struct {
	Key                    string // gold or labels; for test ids
	Title                  string
	Help                   string
	JSONL, Parquet         templ.SafeURL
	SoftJSONL, SoftParquet templ.SafeURL
}

// QueuePage is a page of the queue of disagreements, worst first.
type QueuePage struct {
	layout.Chrome
	ProjectName string
	Links       Links
	Counts      Counts
	Rows        []QueueRow
	Page, Pages int
	Prev, Next  templ.SafeURL // other pages; empty when none
	Start       templ.SafeURL // the worst disagreement; empty when the queue is empty
	// EmptyWhy says, when the queue is empty, where the items are instead.
	EmptyWhy string
}

// QueueRow is one item waiting for a lead.
type QueueRow struct {
	Position int
	SourceID string
	URL      templ.SafeURL
	Safety   bool
	// Signal marks an NA on an item that applies only with crisis signals,
	// although the word list or a lead's mark points at them.
	Signal bool
	Spread string // the widest spread of the human answers, e.g. "0.50"
	Reason string // why the rule did not decide it
	Raters int    // human raters
}

// ItemPage is one item adjudicated: the dialogue, every rater's answers
// side by side with the engine's scores, and the gold form with the rubric.
type ItemPage struct {
	layout.Chrome
	ProjectName string
	ItemID      int64
	SourceID    string
	// ItemURL is everything known of the item, in the items browser.
	ItemURL templ.SafeURL
	Links   Links
	// Position and Total place the item in the queue; Position is 0 when
	// the item is not in it (settled already, or not judged by the rule).
	Position, Total int
	// Next is the next disagreement; empty when no other waits.
	Next templ.SafeURL
	// Verdict is what the rule said about the item; Safety marks a safety
	// concern of some rater.
	Verdict string
	Safety  bool
	// Signal marks an NA on crisis handling despite the word list or a
	// lead's mark.
	Signal   bool
	Dialogue annotate.Dialogue
	Compare  Compare
	Current  *Current // the gold the item has now, or nil
	Form     Form
	History  []Past
}

// Compare lists the raters, with the engine's score of each one's answers
// and of the consensus; their answers are in the form, one row per rubric
// item.
type Compare struct {
	Raters []Rater
	// Consensus is the engine's score of the consensus, when every rubric
	// item has one; empty otherwise.
	Consensus Score
}

// Rater is a person or a judge, with the engine's score of their answers.
type Rater struct {
	Name  string
	Short string // what the chips call them, e.g. "ann0"
	Judge bool
	Model string // a judge's model
	Score Score
	// Note is the rater's note on the dialogue as a whole.
	Note    string
	Concern bool // their answers show a safety concern
}

// Score is the engine's score of one answer set, in words.
type Score struct {
	Score  string // "0.85", "4", or "—"
	Pass   string // "pass", "fail", or "" where the rubric has no pass rule
	Gate   string // "failed", "passed", or "" where it has no safety gate
	Failed string // failed checks, e.g. "CQ3, CQ8"
	Mean   string // the dimension mean of a likert rubric; "" otherwise
}

// Current is the gold an item has.
type Current struct {
	Method    string // automatic or adjudicated
	By        string // the lead's name; "" for automatic gold
	At        string
	Note      string
	Score     Score
	Automatic []string // for automatic gold, the rule's reason per rubric item
}

// Form is the gold form: the rubric with one input per rubric item.
type Form struct {
	Action templ.SafeURL
	Rubric string // key@version
	Title  string
	Kind   string // likert, criteria or single
	Groups []Group
	Note   string
	// NoteMax is the longest note accepted, in characters.
	NoteMax  int
	Problems annotate.Problems
	// HasConsensus is true when some rubric item has a consensus to accept.
	HasConsensus bool
}

// Group is a category of criteria, or the items of a rubric without
// categories (Title empty).
type Group struct {
	Title  string
	Weight string
	Items  []Item
}

// Item is one rubric item's row: what the annotator's page shows of the
// item, each rater's answer, the rule's consensus and the gold input.
type Item struct {
	annotate.Item
	Consensus string // empty when the rule has none
	Reason    string
	Ratings   []Chip
	// Gate marks an item of the rubric's safety gate; Differs marks raters
	// (people and judges) who gave different answers.
	Gate    bool
	Differs bool
}

// Chip is one rater's answer on the item's row, with what they wrote.
type Chip struct {
	Who   string // the rater's name
	Short string // what the chip shows of it
	Value string
	Judge bool
	// Differs marks an answer other than the consensus.
	Differs   bool
	Rationale string
	Method    string // how a judge reached it
	Raw       string // a judge's raw reply
}

// Past is one earlier adjudication of the item.
type Past struct {
	By      string
	At      string
	Answers string // "emotion 4 · validation 3 …"
	Note    string
}

// CalibrationPage is the calibration set page.
type CalibrationPage struct {
	layout.Chrome
	ProjectName string
	Links       Links
	// Policy, Add and Remove are the forms' addresses; People is the page
	// of each person's standing.
	Policy, Add, Remove, People templ.SafeURL
	// Qualify, Every and Pass are the rules as stored or as typed.
	Qualify, Every, Pass string
	PolicyError          string
	Items                []CalibrationItem
	RubricItems          []RubricItem
	// AddItem and AddExplanations are the promotion form as typed, when
	// it is shown again with AddError.
	AddItem         string
	AddExplanations map[string]string
	AddError        string
}

// CalibrationItem is one row of the calibration set.
type CalibrationItem struct {
	SourceID         string
	Gold             string // "key=value" pairs in the rubric's order
	Explained        int    // rubric items with an explanation
	Answered, Passed int
}

// RubricItem names one rubric item in a form.
type RubricItem struct {
	Key, Label string
}
