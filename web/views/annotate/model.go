// Package annotate renders the annotator's workspace: one dialogue beside
// its rubric, with the inputs, the engine's problems, progress, and the
// screens for an empty or paused queue. Workspace and End are the parts
// htmx swaps; Page frames either as a whole page.
package annotate

import "github.com/a-h/templ"

// Workspace is one item on screen: the dialogue, the rubric with the
// person's answers so far, and what surrounds them.
type Workspace struct {
	ProjectID   int64
	ProjectName string
	ItemID      int64
	SourceID    string
	// Editing is true when the person changes answers they submitted
	// before; Revision and SubmittedOn describe those answers.
	Editing     bool
	Revision    int
	SubmittedOn string
	// Notice says what the last action did ("Submitted. Here is the next
	// one."), or is empty.
	Notice string
	URLs   URLs
	// Owner keys the browser's own copy of the draft, so that two people
	// sharing a browser never see each other's.
	Owner    string
	Progress Progress
	Dialogue Dialogue
	Rubric   Rubric
	// Rationale is the note about the dialogue as a whole.
	Rationale string
	// ActiveMS is the active time spent on the item so far.
	ActiveMS int64
	// Base is the revision the form edits (0 when labelling afresh); the
	// draft autosave sends it back.
	Base int
	// OpenedAt is when the page was rendered (Unix ms), for the time spent
	// when no script measures it.
	OpenedAt int64
	// Restored says the form holds a draft, saved at DraftAt (Unix ms),
	// rather than what was submitted.
	Restored bool
	DraftAt  int64
	Problems Problems
	Break    *Break       // a break is due; nil otherwise
	Note     *ContentNote // the dialogue is announced first; nil otherwise
	Flags    []Flag
	// Expanded shows every rubric criterion in full (the person's
	// preference); otherwise the rubric is compact and a criterion opens
	// when it is the one in hand.
	Expanded bool
	// Evidence is the project's turn evidence setting: off, optional or
	// required. Unless off, each item whose answers may fail has a field
	// for the turns where it fails (Item.Turns).
	Evidence string
}

// URLs are the addresses the workspace links and posts to.
type URLs struct {
	Item templ.SafeURL
	// Submit is where htmx posts the answers; a page without its script
	// posts them to Item, so that a refusal re-renders at the item's own
	// address.
	Submit string
	Skip   templ.SafeURL
	Draft  string
	// OpenNote records that the content note was opened (a post).
	OpenNote  templ.SafeURL
	Project   templ.SafeURL
	Annotate  templ.SafeURL
	KeepGoing templ.SafeURL
	// Expand posts the preference between the compact rubric and every
	// criterion in full.
	Expand templ.SafeURL
	// Prev and Next are the person's own labelled items before and after
	// this one; Back returns to the item being labelled. Empty when none.
	Prev templ.SafeURL
	Next templ.SafeURL
	Back templ.SafeURL
}

// Progress is the person's own progress in the project.
type Progress struct {
	Submitted int // labelled by them
	// Left is how many more items they could still be given (an upper
	// bound: others may label them first).
	Left int
	// ProjectPercent is how much of the project's labelling is done.
	ProjectPercent int
}

// Dialogue is the conversation or reply being labelled.
type Dialogue struct {
	// Heading names what the rubric rates: a conversation, or a reply
	// (read in its conversation when there is more before it).
	Heading string
	// Rated says what the rubric rates, e.g. "the last assistant reply".
	Rated    string
	Turns    int
	Messages []Message
}

// Message is one message as shown.
type Message struct {
	// Turn numbers the user message and the reply to it alike; 0 for a
	// message before the first turn or a system message. Turn evidence
	// names these numbers.
	Turn int
	Role string // user, assistant or system
	Who  string // the role in words: User, Assistant, System
	Text string
	// Parts is Text cut where the wellbeing word list found a word, so
	// that those words are highlighted; nil when it found none.
	Parts []Part
	// Rated marks the reply under evaluation.
	Rated bool
}

// Part is a stretch of a message's text: plain, or a word of the wellbeing
// list (Term names it as the list spells it).
type Part struct {
	Text string
	Term string
}

// Rubric is the rubric beside the dialogue, shaped as the annotator reads
// it: groups (categories) of items with everything each says.
type Rubric struct {
	Ref    string // key@version
	Title  string
	Kind   string // likert, criteria or single
	About  []Section
	Groups []Group
	// Worked is the rubric's worked assessment of a whole dialogue, if it
	// has one.
	Worked *Worked
	// Pane is this rubric's pane rendered before (see RenderPane), written
	// as it is; nil, or a pane of another rubric, renders it afresh.
	Pane *Pane
}

// Section is a titled text of the rubric.
type Section struct {
	Title string
	Text  string
}

// Group is a category of criteria with its weight, or the items of a
// rubric without categories (Title empty).
type Group struct {
	Title    string
	Weight   string // e.g. "0.20"; empty without categories
	Question string
	Notes    []string
	Items    []Item
}

// Item is one dimension or criterion with its input.
type Item struct {
	Key       string
	Label     string
	Category  string // the category's label (criteria)
	Weight    string // the category's weight (criteria)
	Text      string // the definition, or what the criterion checks for
	TextTitle string // "Definition", "Checks for" or "Criterion"
	Steps     []string
	Options   []Option
	// Keys lists the shortcuts for the options, e.g. "1–5" or "Y N A".
	Keys string
	// Condition explains when the item applies, with the dialogue's own
	// facts ("Applies from 10 turns; this conversation has 12.").
	Condition string
	// NANote says why NA is not offered, or when it is right.
	NANote   string
	Boundary []Section
	Examples []Example
	Failures []string
	// Worked is this item's answer in the rubric's worked assessment.
	Worked string
	// FailsOn names the answers that fail, the only ones that take turn
	// evidence ("NO", "1 or 2"); empty when none does.
	FailsOn string
	// Turns is the turns marked where the item fails, as typed ("2, 5").
	Turns    string
	Note     string // the person's rationale for this item
	Errors   []string
	Warnings []string
}

// Option is one answer of an item, with its description beside it.
type Option struct {
	Value       string
	Key         string // the keyboard shortcut
	Name        string // e.g. "Poor", or the meaning of YES
	Description string
	Checked     bool
	// Forbidden says why the rubric does not offer this answer for this
	// dialogue (rubric.Definition.Forbids); the option is shown disabled
	// with the reason, and its shortcut does nothing. "" when offered.
	Forbidden string
	// Fails says the answer fails the item (rubric.Definition.Fails), so
	// that it may name the turns where it fails.
	Fails bool
}

// Example is a worked example of one item.
type Example struct {
	Title    string
	User     string
	Response string
	Why      string
}

// Worked is a worked assessment of a whole dialogue.
type Worked struct {
	Title   string
	Turns   []Message
	Answers []Section // item → "YES — why"
	Result  string
}

// Problems are what the engine found in the answers submitted.
type Problems struct {
	// General are errors not tied to an item on screen.
	General []string
	// Errors are the blocking problems about items, also shown beside
	// them.
	Errors []Issue
	// Warnings are the rubric's edge rules that fired; they block until
	// confirmed.
	Warnings []Issue
	// Confirm asks for the warnings to be confirmed.
	Confirm bool
}

// Any reports whether there is anything to show.
func (p Problems) Any() bool {
	return len(p.General) > 0 || len(p.Errors) > 0 || len(p.Warnings) > 0
}

// Issue is one problem about one item.
type Issue struct {
	Item    string
	Message string
}

// Break is the offer of a break after a long stretch of work.
type Break struct {
	Minutes int
}

// ContentNote announces a dialogue that mentions suicide or self-harm.
// While it shows, the dialogue is hidden and the answers are locked.
type ContentNote struct {
	// Term is the word or phrase found, or empty when a lead marked it.
	Term string
	// Refused says answers were just posted without the note opened, and
	// not stored.
	Refused bool
}

// Flag is one reason to flag an item.
type Flag struct {
	Value string
	Label string
}

// End is the workspace when there is no item to show.
type End struct {
	ProjectID   int64
	ProjectName string
	// Reason is "ready" (work waits to be claimed), "done" (nothing left
	// for the person), "paused" (the project hands out no work) or "lost"
	// (the item went to someone else).
	Reason    string
	Message   string
	Notice    string
	Submitted int
	Prev      templ.SafeURL // the person's latest labelled item, if any
	Project   templ.SafeURL
	// Annotate is the workspace's entry: a GET resumes, a POST claims.
	Annotate templ.SafeURL
}

// Resubmitted is the workspace after a second submission of an item with
// answers different from those stored first (another tab, or an earlier
// submit): nothing of it was stored. Both answer sets are shown side by
// side; the person keeps the new ones as an edit of the stored ones, or
// discards them.
type Resubmitted struct {
	ProjectName string
	ItemID      int64
	SourceID    string
	// Owner keys the browser's copy of the draft, dropped once kept.
	Owner string
	// StoredOn is when the first answers were submitted; Revision is
	// theirs, which keeping edits.
	StoredOn string
	Revision int
	// Rows compare the two answer sets item by item, then the note on the
	// whole dialogue when it differs.
	Rows []Difference
	// Keep are the fields the keep form posts to Submit: the new answers
	// as an edit.
	Keep   []Field
	Submit string
	// Discard goes on without the new answers: to the next item, or the
	// workspace's entry.
	Discard templ.SafeURL
}

// Difference is one rubric item (or, with Key empty, the note on the whole
// dialogue) in both answer sets.
type Difference struct {
	Key, Label            string
	First, Second         string // the answers; empty when none
	FirstNote, SecondNote string
	Differs               bool
}

// Field is a hidden form field.
type Field struct {
	Name, Value string
}

// FeedbackPage is the feedback on one practice (calibration) answer.
type FeedbackPage struct {
	Matched, Compared int
	Passed            bool
	PassPercent       int
	// PassedNow counts the practice items passed, this one included;
	// Qualify is how many the project asks for.
	PassedNow, Qualify int
	Items              []FeedbackItem
	Continue           templ.SafeURL
}

// FeedbackItem is one rubric item of the feedback.
type FeedbackItem struct {
	Key, Label           string
	Given, Gold          string
	Match                bool
	ChosenText, GoldText string
	Explanation          string
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
