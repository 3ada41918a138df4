package attune

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidFlag reports whether reason is one of Flags. Every path that takes
// a flag (the workspace's skip, the API's skip, the flags filters) asks it.
func ValidFlag(reason string) bool {
	for _, f := range Flags {
		if f == reason {
			return true
		}
	}
	return false
}

// CheckSkipFlag refuses, naming Flags, a flag given with a skip that is
// none of them; "" (no flag) is fine. The workspace's skip and the API's
// skip both ask it, so both refuse with the same words.
func CheckSkipFlag(flag string) error {
	if flag != "" && !ValidFlag(flag) {
		return Invalid("flag", "use one of "+strings.Join(Flags, ", "))
	}
	return nil
}

// ParseFlagReason reads a filter on the flag reason: "" (or "all") is no
// filter; anything else must be one of Flags, or it is an ErrInvalid error
// naming them.
func ParseFlagReason(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == "all" {
		return "", nil
	}
	if !ValidFlag(s) {
		return "", Invalid("reason", fmt.Sprintf("unknown flag reason %q: use %s", s, strings.Join(Flags, ", ")))
	}
	return s, nil
}

// FlagStatus is whether a lead has settled a flag.
type FlagStatus string

// The flag statuses.
const (
	FlagOpen     FlagStatus = "open"
	FlagResolved FlagStatus = "resolved"
)

// ParseFlagStatus reads a filter on the status: "" (or "all") is no
// filter, else open or resolved; anything else is an ErrInvalid error.
func ParseFlagStatus(s string) (FlagStatus, error) {
	switch st := FlagStatus(strings.ToLower(strings.TrimSpace(s))); st {
	case "", "all":
		return "", nil
	case FlagOpen, FlagResolved:
		return st, nil
	}
	return "", Invalid("status", fmt.Sprintf("unknown flag status %q: use open, resolved or all", s))
}

// FlagResolution is how a lead settled a flag.
type FlagResolution string

// The ways to resolve a flag.
const (
	// ResolvePulled takes the flagged item out of the pool: it is handed
	// to no annotator until a lead puts it back. Every open flag of the
	// item is resolved with it.
	ResolvePulled FlagResolution = "pulled"
	// ResolveFixed says the item was corrected (re-imported with
	// --update). Every open flag of the item is resolved with it, and an
	// item out of the pool goes back in.
	ResolveFixed FlagResolution = "fixed"
	// ResolveDismissed closes this one flag and leaves the item as it is.
	ResolveDismissed FlagResolution = "dismissed"
)

// FlagResolutions lists the resolutions in the order pages offer them.
var FlagResolutions = []FlagResolution{ResolvePulled, ResolveFixed, ResolveDismissed}

// ParseFlagResolution returns the resolution named s, or an ErrInvalid
// error naming those that exist.
func ParseFlagResolution(s string) (FlagResolution, error) {
	for _, r := range FlagResolutions {
		if string(r) == strings.ToLower(strings.TrimSpace(s)) {
			return r, nil
		}
	}
	return "", Invalid("how", fmt.Sprintf("unknown resolution %q: use pulled, fixed or dismissed", s))
}

// MaxResolutionNote bounds a lead's note on a resolution, in characters.
const MaxResolutionNote = 2000

// CheckResolutionNote returns an ErrInvalid error when a resolution note is
// too long.
func CheckResolutionNote(note string) error {
	if n := utf8.RuneCountInString(note); n > MaxResolutionNote {
		return Invalid("note", fmt.Sprintf("keep the note to %d characters or fewer (this one has %d)", MaxResolutionNote, n))
	}
	return nil
}

// Flag is an annotator's flag on an item, raised when they skipped it, and
// how a lead resolved it. Only the project's leads see flags.
type Flag struct {
	ID           int64 // the assignment that carries the flag
	ProjectID    int64
	ItemID       int64
	ItemSourceID string // the item's id in the dataset
	ItemSystem   string // the item's meta under the project's system key; "" when it names none
	Reason       string // one of Flags
	Note         string // the annotator's note
	Annotator    string // the annotator's email
	FlaggedAt    time.Time

	Resolution     FlagResolution // "" while open
	ResolvedBy     string         // the lead's email; "" while open
	ResolvedAt     time.Time      // zero while open
	ResolutionNote string

	// ItemInPool is false while the item is out of the pool.
	ItemInPool bool
	// ItemLabelled counts the raters (people and judges) with answers
	// for the item; an item with any cannot be replaced by a re-import.
	ItemLabelled int
}

// Status says whether the flag is open or resolved.
func (f Flag) Status() FlagStatus {
	if f.Resolution == "" {
		return FlagOpen
	}
	return FlagResolved
}

// FlagCounts sum up a project's flags for its page.
type FlagCounts struct {
	Open     int
	Resolved int
	// OpenByReason counts the open flags of each reason in Flags.
	OpenByReason map[string]int
	// Pulled counts the items out of the pool.
	Pulled int
}
