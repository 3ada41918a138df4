// Package flag renders the Flags page, where a project's leads read the
// flags annotators raised on items (why, their note, who, when) and
// resolve them: take the item out of the pool, mark it fixed after a
// re-import, or dismiss the flag. Only a project's leads see it.
//
// Everything an annotator or a lead wrote is written as text, never as
// markup.
package flag

import (
	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// Page is the Flags page of one project.
type Page struct {
	layout.Chrome
	ProjectName string
	Project     templ.SafeURL // the project page
	Import      templ.SafeURL // the project page's import form
	Action      templ.SafeURL // this page, for the filter form

	// Reasons are the choices of the reason filter, "" (every reason)
	// first; Statuses likewise for open, resolved and all.
	Reasons  []Choice
	Statuses []Choice

	// Filter is the filter as a query string ("reason=broken&status=open"),
	// which the page's forms send back so that a lead returns to the same
	// list after acting.
	Filter string

	Counts Counts
	Rows   []Row
	// Truncated is true when more flags match than the page lists; the
	// export has them all.
	Truncated bool
	Limit     int // how many flags the page lists at most

	Pulled []PulledItem // items out of the pool, most recent first

	CSV, JSONL templ.SafeURL // the flags export
}

// Choice is one option of a filter.
type Choice struct {
	Value    string
	Label    string
	Selected bool
}

// Counts sum up the project's flags.
type Counts struct {
	Open     int
	Resolved int
	ByReason []ReasonCount // open flags, in the order reasons are offered
	Pulled   int           // items out of the pool
}

// ReasonCount is the number of open flags of one reason.
type ReasonCount struct {
	Reason string // broken, off-topic, …
	Label  string
	Open   int
}

// Row is one flag.
type Row struct {
	ID          int64
	ItemID      string // the item's id in the dataset
	ItemURL     templ.SafeURL
	Reason      string
	ReasonLabel string
	Note        string
	Annotator   string // email
	FlaggedAt   string
	// Resolution is pulled, fixed or dismissed; "" while open.
	Resolution     string
	ResolvedBy     string
	ResolvedAt     string
	ResolutionNote string
	InPool         bool
	// Labelled counts the raters with answers for the item: a re-import
	// cannot replace an item that has any.
	Labelled int
	Resolve  templ.SafeURL // the resolution form's action; empty once resolved
	Return   templ.SafeURL // puts the item back in the pool; empty while it is in
}

// PulledItem is an item out of the pool.
type PulledItem struct {
	ItemID   string
	ItemURL  templ.SafeURL
	PulledAt string
	PulledBy string
	Return   templ.SafeURL
}

// ProjectSummary is the Flags panel of the project page: open flags by
// reason and items out of the pool, with a link to the Flags page.
type ProjectSummary struct {
	Flags  templ.SafeURL
	Counts Counts
}
