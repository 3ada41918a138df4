package judge

import (
	"github.com/a-h/templ"

	"github.com/attune/attune/web/views/layout"
)

// PromptsPage lists a judge's prompt versions for a project's rubric.
type PromptsPage struct {
	layout.Chrome
	JudgeName   string
	ProjectName string
	ProjectURL  templ.SafeURL
	RubricRef   string
	Versions    []PromptRow
	// CanEdit says the viewer may make a new version (the judge's owner
	// or an admin).
	CanEdit bool
}

// PromptRow is one version in the list.
type PromptRow struct {
	Version int
	URL     templ.SafeURL
	Parent  int    // the version it was edited from; 0 for version 1
	Author  string // "" for version 1 (the rubric's own prompts)
	Created string
	Runs    int
	EditURL templ.SafeURL // edit a copy; "" when the viewer may not
}

// PromptPage shows one version: each rubric item's template and what it
// changed from the version it was edited from.
type PromptPage struct {
	layout.Chrome
	JudgeName   string
	ProjectName string
	ProjectURL  templ.SafeURL
	ListURL     templ.SafeURL
	Version     int
	Parent      int // 0 for version 1
	Author      string
	Created     string
	Runs        int
	Items       []PromptItem
	EditURL     templ.SafeURL // "" when the viewer may not edit
	// RunAction is where the form that runs this version posts (the
	// project's start-a-run estimate), JudgeID the judge it names.
	RunAction templ.SafeURL
	JudgeID   string
}

// PromptItem is one rubric item's template in a version, with its line
// diff against the parent version (nil for version 1).
type PromptItem struct {
	Key     string
	Label   string
	Text    string
	Changed bool
	Diff    []DiffLine
}

// DiffLine is one line of a diff: Op is " ", "-" (only in the parent) or
// "+" (only in this version).
type DiffLine struct {
	Op   string
	Text string
}

// PromptForm is the page that makes a new version from a copy of one.
type PromptForm struct {
	layout.Chrome
	JudgeName   string
	ProjectName string
	ProjectURL  templ.SafeURL
	ListURL     templ.SafeURL
	Action      templ.SafeURL
	From        int // the version edited
	Slot        string
	Items       []PromptField
	Errors      map[string]string // field → message; "prompts" for the whole form
}

// PromptField is one rubric item's template as typed.
type PromptField struct {
	Name  string // the form field, attune.PromptField(key)
	Key   string
	Label string
	Text  string
}
