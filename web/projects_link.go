package web

import (
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/projects"
	"github.com/attune/attune/web/views/project"
)

// projectView is the project page as web/projects builds it, for the
// judge run forms that show it again with their errors. It goes once the
// judges' handlers leave this package and take the projects handler's
// ProjectPage as their own field.
func (s *Server) projectView(r *http.Request, p *attune.Project, role attune.MemberRole) (project.Page, error) {
	pj := projects.New(s.Kit, s.opts.JudgePolicy)
	pj.JudgesSection = s.judgesSection
	return pj.ProjectPage(r, p, role)
}
