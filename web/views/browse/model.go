// Package browse renders the lead's items browser: the search over a
// project's items and the page of one item with everything known of it.
package browse

import (
	"fmt"
	"maps"
	"slices"

	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// SearchPage is the items browser: the search form, as the URL states it,
// and one page of the items found.
type SearchPage struct {
	layout.Chrome
	ProjectName string
	ProjectURL  templ.SafeURL
	Form        Form
	// Summary says in a sentence what the list holds.
	Summary string
	// ReadFrom says where the list was read (replica or primary) and how
	// current that is; "" when no replica is set.
	ReadFrom string
	// Matches says how many items the search keeps on all its pages:
	// "37 items match", "More than 1000 items match".
	Matches string
	// TextSearch: the rows show where the text matched, not the opening.
	TextSearch bool
	// Columns are the meta keys the lead chose to see as columns, in the
	// order chosen; the rows' other meta fields fold into one cell.
	Columns []string
	// SystemKey is the project's system key: the System column shows each
	// item's meta under it.
	SystemKey string
	Rows      []Row
	NextURL   templ.SafeURL // "" on the last page
	FirstURL  templ.SafeURL // the first page, when this is a later one
}

// Form is the search form; every field is a query parameter of a GET.
type Form struct {
	Action   templ.SafeURL
	Text     string
	ID       string
	Meta     []string // "key=value", one per field, an empty one last
	Min, Max string
	Gold     []Option
	Safety   bool
	Flagged  bool
	Disagree []Option // rubric items, for judge-against-people disagreement
	Rater    []Option
	Sort     []Option
	// Columns offers the meta keys seen on the page and those chosen, to
	// show as columns (query parameter col).
	Columns []Check
	// Summary says what the filters keep, in a line, for the folded form.
	Summary string
	// Errors are the query's parameters that could not be read, each
	// message by its name; the search ran without them.
	Errors map[string]string
}

// Check is one checkbox of a list.
type Check struct {
	Value   string
	Checked bool
}

// browseFormFields are the parameters the form has a field for; messages
// on others (a cursor) show above it.
var browseFormFields = []string{"q", "id", "meta", "min", "max", "gold", "disagree", "rater", "sort", "col"}

// OtherErrors are the messages of Errors on parameters the form has no
// field for, by name.
func (f Form) OtherErrors() [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(f.Errors)) {
		if !slices.Contains(browseFormFields, k) {
			out = append(out, [2]string{k, f.Errors[k]})
		}
	}
	return out
}

// Option is one choice of a select.
type Option struct {
	Value, Label string
	Selected     bool
}

// Row is one item found.
type Row struct {
	URL      templ.SafeURL
	SourceID string
	Opening  string
	// Snippet is, for a text search, where the dialogue matched.
	Snippet []Mark
	// Cells are the values of SearchPage.Columns ("" where the item has
	// no such field); Meta is its other fields, MetaMore how many more
	// are left out of Meta.
	Cells    []string
	Meta     []MetaField
	MetaMore int
	// System is the item's meta under the project's system key, as text;
	// "" when the item names no system.
	System string
	People int
	Judges int
	Gold   string // "automatic", "adjudicated" or ""
	Flags  int
	Pulled bool
}

// Mark is a run of a snippet's text; Match marks what the query matched.
type Mark struct {
	Text  string
	Match bool
}

// MetaField is one field of an item's meta, its value as text (a string
// as it is, anything else as JSON), cut short when long.
type MetaField struct{ Key, Value string }

// ItemPage is one item with its dialogue, every rater's answers with the
// engine's scores, its gold and the gold's history, its flags and what
// happened to it.
type ItemPage struct {
	layout.Chrome
	ProjectName string
	ProjectURL  templ.SafeURL
	BrowserURL  templ.SafeURL
	// AdjudicateURL is the item's adjudication page.
	AdjudicateURL templ.SafeURL
	SourceID      string
	ItemID        int64
	Kind          string
	Meta          string // the meta object, indented: at most its first 16 KiB
	// MetaMore says how much of meta Meta leaves out, "" when none;
	// MetaURL is then the download of the whole of it.
	MetaMore      string
	MetaURL       templ.SafeURL
	Sensitive     bool
	Pulled        bool
	Dialogue      []Turn
	Raters        []Rater
	Rows          []AnswerRow
	Gold          *Gold
	Adjudications []Adjudication
	Flags         []Flag
	History       []Event
}

// Turn is one message of the dialogue.
type Turn struct{ Role, Content string }

// Rater is one answer set: who, when, the engine's result.
type Rater struct {
	Name      string
	Judge     bool
	Model     string
	Submitted string
	Rationale string // about the dialogue as a whole
	Score     Score
	// Concern: these answers show a safety concern.
	Concern bool
}

// Score is the engine's result in words.
type Score struct {
	Score  string // "0.85", "4", or "—"
	Pass   string // "pass", "fail", or ""
	Gate   string // "failed", "passed", or ""
	Failed string // failed checks
	Mean   string // a likert rubric's dimension mean; "" otherwise
}

// AnswerRow is one rubric item across the raters, and its gold.
type AnswerRow struct {
	Key, Label string
	Cells      []Cell // in the order of ItemPage.Raters
	Gold       string
}

// Cell is one rater's answer on one rubric item.
type Cell struct{ Value, Rationale, Method string }

// Gold is the item's gold as it stands.
type Gold struct {
	Method, By, At, Note string
	Score                Score
}

// Adjudication is one entry of the gold's history.
type Adjudication struct{ By, At, Answers, Note string }

// Flag is an annotator's flag and how it was resolved.
type Flag struct {
	Reason, Note, Annotator, At string
	Resolution                  string // "" while open
}

// Event is one entry of the item's history.
type Event struct{ At, Who, What, Detail string }

// fieldCount is "1 field", "3 fields".
func fieldCount(n int) string {
	if n == 1 {
		return "1 field"
	}
	return fmt.Sprintf("%d fields", n)
}
