package web

import (
	"context"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/judging"
	judgeview "github.com/attune/attune/web/views/judge"
)

// judgesSection is the Judges block of a project's page, which the
// projects page (still in this package) shows. It builds the judges'
// handler as table() does; it goes away when the projects page moves
// into its own package and is handed judging's ProjectSection instead.
func (s *Server) judgesSection(ctx context.Context, p *attune.Project) (*judgeview.ProjectSection, error) {
	return judging.New(s.Kit, s.runs, s.opts.Runner, s.opts.JudgePolicy).ProjectSection(ctx, p)
}
