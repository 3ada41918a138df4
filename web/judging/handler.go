// Package judging serves judges, their prompt versions for a project's
// rubric, and their runs: the pages and the JSON API.
package judging

import (
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/views/project"
)

// Handler serves judges' pages and API, their prompt versions' and their
// runs'.
type Handler struct {
	*kit.Kit
	// runs starts and changes judge runs, as the command line does.
	runs *runs.Flow
	// runner asks a judge about one item when it is tried.
	runner *judge.Runner
	// policy is what an admin lets judges use; judges are created,
	// changed and tried under it.
	policy attune.JudgePolicy
	// ProjectPage builds the project's page for the viewer's role: a
	// refused start form is shown on it again. The project page is
	// another feature's, so it is handed in rather than built here.
	ProjectPage func(r *http.Request, p *attune.Project, role attune.MemberRole) (project.Page, error)
}

// New returns the judges' handler over k, starting and changing runs
// with flow, trying judges with runner, under the admin's policy. Set
// ProjectPage before serving the run forms.
func New(k *kit.Kit, flow *runs.Flow, runner *judge.Runner, policy attune.JudgePolicy) *Handler {
	return &Handler{Kit: k, runs: flow, runner: runner, policy: policy}
}
