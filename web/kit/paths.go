package kit

import "fmt"

// The addresses one feature links to in another. Each feature builds the
// rest of its own addresses itself.

// ProjectPath is a project's page.
func ProjectPath(id int64) string { return fmt.Sprintf("/projects/%d", id) }

// PeoplePath is the page of a project's annotators and their status.
func PeoplePath(projectID int64) string { return ProjectPath(projectID) + "/people" }

// FlagsPath is the page of a project's flags.
func FlagsPath(projectID int64) string { return fmt.Sprintf("/projects/%d/flags", projectID) }

// BrowseItemPath is the page of one item in the items browser.
func BrowseItemPath(projectID, itemID int64) string {
	return fmt.Sprintf("/projects/%d/browse/%d", projectID, itemID)
}
