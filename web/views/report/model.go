// Package report renders a project's agreement report, which only leads
// and admins see: the filters, the figures per rubric item with their
// intervals and a sentence explaining each, the matrix of rater pairs and
// a pair's confusion matrix as heatmaps drawn on the server, each
// annotator against the others, each judge against the annotators, the
// engine's outputs, and the form that brings in labels made elsewhere.
// ImportPage shows why such a file was refused.
//
// Names of raters are written as text, never as markup.
package report

import (
	"maps"
	"slices"

	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// Page is the agreement report of one project.
type Page struct {
	layout.Chrome
	ProjectName string
	ProjectURL  templ.SafeURL
	Rubric      string // key@version
	NANote      string // how NA was treated, in a sentence
	Intervals   string // how the intervals were computed, in a sentence
	// ReadFrom says where the labels were read (replica or primary) and
	// how current that is; "" when no replica is set.
	ReadFrom string
	JSONURL  templ.SafeURL
	// ExperimentURL is the judge experiment page (judge variants side
	// by side on the gold items).
	ExperimentURL templ.SafeURL
	// SystemsURL is the systems view: prediction-powered estimates per
	// system and the human-label budget.
	SystemsURL templ.SafeURL
	// FailuresURL is the failure map: where a judge parts from people by
	// kind of item.
	FailuresURL templ.SafeURL
	// TrustURL is trust routing: where a judge may label alone.
	TrustURL templ.SafeURL
	CSVURL   templ.SafeURL
	// Verdicts open the page: per judge the alt-test's answer, per rubric
	// item the annotators' agreement.
	Verdicts Verdicts
	Filters  Filters
	// Empty says no rater has labels under the filters.
	Empty bool
	// Columns head the summary table, each with its explanation.
	Columns []Column
	Summary []SummaryRow
	// Item is the rubric item the heatmaps and tables below show.
	Item       ItemDetail
	Annotators AnnotatorTable
	Judges     []JudgeBlock
	Engine     Engine
	// Calibration is each rater's standing on the calibration items,
	// shown whenever anyone has answered one (even before any label).
	Calibration []CalibrationRow
	// Definitions explain every figure.
	Definitions []Explained
	Import      ImportForm
}

// Verdicts are the report's conclusions in words, shown before any table.
type Verdicts struct {
	// Epsilon is the alt-test's ε in words: "0.15 (trained annotators)".
	Epsilon string
	// Judges are each judge's answer to "can it replace an annotator?".
	Judges []JudgeVerdict
	// JudgeNames head the per-judge columns of Items, in the order of
	// Judges.
	JudgeNames []string
	Items      []ItemVerdict
}

// JudgeVerdict is one judge's alt-test over every rubric item.
type JudgeVerdict struct {
	Name string
	// Result is the answer in words ("Can replace an annotator on every
	// rubric item"), Class passed, mixed, failed or unknown.
	Result string
	Class  string
	// Passed, Failed and Unknown count the rubric items by the alt-test's
	// answer.
	Passed, Failed, Unknown int
}

// ItemVerdict is one rubric item: the annotators' Krippendorff's alpha,
// its band, and each judge's alt-test on it.
type ItemVerdict struct {
	Key, Label string
	URL        templ.SafeURL // shows this rubric item below
	Alpha      Figure
	// Band is the alpha's reading in a word: good, tentative, poor, or
	// undefined.
	Band   string
	Judges []AltCell // one per Verdicts.JudgeNames
}

// AltCell is one judge's alt-test on one rubric item.
type AltCell struct {
	Word  string // passed, failed, cannot tell, or "" when the judge has no labels here
	Class string // passed, failed or unknown
	Rate  string // the winning rate, "0.67", or ""
	Title string // the figures in a sentence
	URL   templ.SafeURL
}

// Filters is the form that narrows the report; it reads what it shows
// from the query.
type Filters struct {
	// Summary says what the filters keep, in a line: "All raters · all
	// dates · NA an answer · ε 0.15".
	Summary    string
	Action     templ.SafeURL
	Annotators []Check
	Judges     []Check
	Rubrics    []Option
	From, To   string // YYYY-MM-DD or ""
	NAMissing  bool
	Item       string // the rubric item shown, kept across a filter change
	// Epsilon, AltScoring and Level choose the alt-test's ε and scoring
	// and Krippendorff's level.
	Epsilon    []Option
	AltScoring []Option
	Level      []Option
	// AltUnusualEpsilon and AltAllowFew are the alt-test's two explicit
	// asks, checked when the query has them: an ε outside the usual 0.05
	// to 0.3, and a verdict on one or two annotators.
	AltUnusualEpsilon bool
	AltAllowFew       bool
	// Errors are the filters of the query that could not be read and were
	// left out, each message by the query parameter's name.
	Errors map[string]string
}

// reportFilterFields are the parameters the filter form has a field for;
// the messages on others (the URL's own, like replicates) show above it.
var reportFilterFields = []string{"annotator", "judge", "rubric", "from", "to", "na", "epsilon", "alt_scoring", "level"}

// OtherErrors are the messages of Errors on parameters the form has no
// field for, by name.
func (f Filters) OtherErrors() [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(f.Errors)) {
		if !slices.Contains(reportFilterFields, k) {
			out = append(out, [2]string{k, f.Errors[k]})
		}
	}
	return out
}

// Check is one checkbox of a list.
type Check struct {
	Name, Value, Label string
	Checked            bool
}

// Option is one choice of a select.
type Option struct {
	Value, Label string
	Selected     bool
}

// Column heads one figure of the summary.
type Column struct {
	Key, Name, Explain string
}

// Explained is a figure's name and its sentence.
type Explained struct {
	Key, Name, Sentence string
}

// Figure is a number as the page shows it.
type Figure struct {
	Value    string // "0.74", or "—" when undefined
	Interval string // "0.71–0.77", or "" when none
	// NoInterval says why a defined figure has no interval although
	// intervals were computed, or ""; the page shows it in the interval's
	// place.
	NoInterval string
	Reason     string // why it is undefined, or ""
	Class      string // "good", "fair", "poor" or "" for colouring
	// URL, when set, lists the items behind the figure.
	URL templ.SafeURL
}

// SummaryRow is one rubric item in the summary table.
type SummaryRow struct {
	Key, Label string
	URL        templ.SafeURL // shows this rubric item below
	Current    bool
	Items      int
	Raters     int
	Figures    []Figure // one per Column
	Missing    string   // labels left out, e.g. "3 ERROR", or ""
}

// ItemDetail is one rubric item in depth.
type ItemDetail struct {
	Key, Label string
	Scale      string // the categories, in order
	Level      string
	Weights    string
	Tabs       []Tab
	Pairs      Heatmap
	// PairList is every pair of the heatmap, each linking to the items
	// where the two differ and to their confusion matrix.
	PairList []PairLink
	// Confusion is the chosen pair's confusion matrix, or nil when no pair
	// shares items.
	Confusion *Confusion
	// Boundaries is where the disagreement falls on a 1–5 item; nil on
	// other scales.
	Boundaries *BoundaryTable
	// Evidence is the agreement on where the item fails, on an item whose
	// answers can fail; nil on others.
	Evidence *EvidenceTable
}

// EvidenceTable is the agreement on the turns marked where a rubric item
// fails: the people among themselves, then each judge against them.
type EvidenceTable struct {
	Explain string // the figures' sentence
	Rows    []EvidenceRow
}

// EvidenceRow is one set of pairs compared.
type EvidenceRow struct {
	Who string // "The people among themselves", "gpt-judge (judge) against the people"
	// Counts says what the figures rest on: "6 items, 9 pairs, 7 with a
	// turn in common".
	Counts string
	// Overlap and Alpha are the figures, or undefined with the reason
	// (too few items, said in TooFew as well).
	Overlap, Alpha Figure
	TooFew         string // "too few: 2 items, 5 needed", or ""
	// URL lists the items where both sides gave a failing answer.
	URL templ.SafeURL
}

// BoundaryTable is the share of a 1–5 item's disagreement on each
// boundary, for the people among themselves and for each judge against
// them, beside the rubric's guidance on the boundary.
type BoundaryTable struct {
	Explain string   // the figure's sentence
	Judges  []string // the judges' names, a column each after the people
	Rows    []BoundaryRow
}

// BoundaryRow is one boundary, such as 3|4.
type BoundaryRow struct {
	Boundary string
	Shares   []Share // the people's, then each judge's
	Guidance []string
}

// Share is one share of disagreement, linking to its items.
type Share struct {
	Text  string // "41 %", or "—" when nobody disagrees
	Title string
	URL   templ.SafeURL
}

// PairLink is one pair of raters on the rubric item shown.
type PairLink struct {
	A, B         string
	N            int
	Kappa        Figure
	ItemsURL     templ.SafeURL
	ConfusionURL templ.SafeURL
}

// Tab links to one rubric item.
type Tab struct {
	Key     string
	URL     templ.SafeURL
	Current bool
}

// Heatmap is a square or rectangular grid of coloured cells, drawn as SVG.
type Heatmap struct {
	Title   string
	Caption string
	Rows    []string // row labels, top to bottom
	Cols    []string // column labels, left to right
	Cells   [][]Cell
	// RowHead and ColHead name what the rows and columns are.
	RowHead, ColHead string
}

// Cell is one cell of a heatmap.
type Cell struct {
	Text  string
	Title string        // the full figure, shown on hover and read by screen readers
	Class string        // heat-0 … heat-6, or "heat-none"
	URL   templ.SafeURL // where clicking the cell leads, or ""
}

// Confusion is two raters' confusion matrix.
type Confusion struct {
	A, B    string // the raters' names
	Heatmap Heatmap
	Figures string // n, agreement and kappa, in a line
	// ItemsURL lists the items where the two differ; each cell of the
	// heatmap links to its own items.
	ItemsURL templ.SafeURL
}

// AnnotatorTable is each annotator against the others.
type AnnotatorTable struct {
	Keys []string // the rubric items, one leniency column each
	Rows []AnnotatorRow
}

// AnnotatorRow is one annotator.
type AnnotatorRow struct {
	Name       string
	AnswerSets int
	Agreement  Figure // over every rubric item
	KappaMean  Figure // on the rubric item shown
	Leniency   []Figure
}

// JudgeBlock is one judge against the annotators.
type JudgeBlock struct {
	Name    string
	Summary string // over every rubric item, in a sentence
	Verdict string // on the rubric item shown
	Rows    []JudgeRow
}

// JudgeRow is a judge on one rubric item.
type JudgeRow struct {
	Key string
	// Items counts the items the judge answered here; Shared those of
	// them the people labelled too.
	Items          int
	Shared         int
	KappaMean      Figure
	HumanRange     string // the annotators' kappa range
	Consensus      Figure // kappa against the annotators' consensus
	Alpha          Figure
	AlphaWithJudge Figure
	// Alt is the alt-test's verdict: "passed", "failed" or "cannot tell";
	// Epsilon the ε it was run at; WinningRate and Advantage its figures.
	Alt         string
	AltClass    string // passed, failed or unknown
	Epsilon     string
	WinningRate Figure
	Advantage   Figure
	Current     bool
	// PeopleURL and GoldURL list the items where the judge differs from
	// the people and from the gold; PeopleAmongURL the items where the
	// people differ among themselves (behind HumanRange).
	PeopleURL      templ.SafeURL
	GoldURL        templ.SafeURL
	PeopleAmongURL templ.SafeURL
}

// Engine is the agreement on the engine's outputs.
type Engine struct {
	Scored     int
	Incomplete int
	Outcomes   []Outcome // pass or fail, safety gate (criteria rubrics)
	Scores     []PairRow // final-score rank agreement per pair
	JudgeScore []PairRow // judges against the annotators' median score
}

// Outcome is the agreement on one yes-or-no output.
type Outcome struct {
	Key, Name string
	Items     int
	Raters    int
	Figures   []Figure // observed agreement, alpha, AC1
	Pairs     []PairRow
	Judges    []PairRow // against the annotators' majority
}

// PairRow is two raters (or a judge and the annotators) on one output.
type PairRow struct {
	A, B    string
	N       int
	Figures []Figure
	// URL, when set, lists the items where A and B differ.
	URL templ.SafeURL
}

// ImportForm is the form that brings in labels made elsewhere.
type ImportForm struct {
	Action templ.SafeURL
	Header string // the columns a file needs
}

// ImportPage says why a labels file was refused.
type ImportPage struct {
	layout.Chrome
	ProjectName string
	ProjectURL  templ.SafeURL
	ReportURL   templ.SafeURL
	Source      string // the file's name
	Message     string // a problem not tied to a line
	Lines       []ImportLine
	More        int
	Form        ImportForm
}

// ImportLine is a problem at one line of the file.
type ImportLine struct {
	Line    int
	Field   string
	Message string
}

// CalibrationRow is one rater against gold on the calibration items.
type CalibrationRow struct {
	Rater    string
	N        int
	Accuracy string // a percentage
	Leniency Figure // signed scale points, undefined without numeric items
	// DriftingOn names the rubric items whose chart has signalled; empty
	// when none has.
	DriftingOn string
	// Runs is a judge's accuracy run by run (its sentinel), oldest first,
	// "84%, 85%, 61%"; empty for a person. Steps says on which runs it
	// stepped, "run 7 (2026-11-28)"; empty when it never did. CannotTell
	// names the runs that could not have been a step, with why, "runs 8,
	// 9: a baseline of 1 run is too short to tell a step on 5 calibration
	// items"; empty when every run after the first could.
	Runs       string
	Steps      string
	CannotTell string
}
