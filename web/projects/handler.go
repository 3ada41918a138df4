// Package projects serves projects: their creation, the project page,
// editing and status, members, people (each annotator's status and
// re-qualification), item imports, the sensitive mark and webhooks, as
// pages and through the API.
package projects

import (
	"context"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
)

// Handler serves projects' pages and API.
type Handler struct {
	*kit.Kit
	// judgePolicy is what an admin lets judges use; webhooks' URLs are
	// checked against its host allow-list, as judges' are.
	judgePolicy attune.JudgePolicy
	// JudgesSection builds the Judges block of the project page for leads
	// and admins. Judges are another feature's, so it is given, not
	// imported; it must be set before the project page is served.
	JudgesSection func(ctx context.Context, p *attune.Project) (*judgeview.ProjectSection, error)
}

// New returns the projects handler over k, checking webhooks' URLs
// against judgePolicy. Its JudgesSection is for the caller to set.
func New(k *kit.Kit, judgePolicy attune.JudgePolicy) *Handler {
	return &Handler{Kit: k, judgePolicy: judgePolicy}
}
