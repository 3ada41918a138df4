package web

import "github.com/attune/attune/internal/attune"

// RouteRule is one route of the table as the matrix test sees it.
type RouteRule struct {
	Pattern string // the ServeMux pattern, "METHOD /path/{name}"
	Bare    bool   // served without a session
	Session bool   // a signed-in user is needed
	Token   bool   // an API token is needed
	Role    attune.Role
	// Project is the standing needed in the project of the path: "",
	// "member", "annotator" or "lead".
	Project string
}

// RouteRules lists the server's route table.
func (s *Server) RouteRules() []RouteRule {
	var out []RouteRule
	for _, rt := range s.table() {
		a := rt.access
		out = append(out, RouteRule{Pattern: rt.pattern, Bare: a.bare, Session: a.session, Token: a.token, Role: a.role,
			Project: [...]string{noProject: "", projectMember: "member", projectAnnotator: "annotator", projectLead: "lead"}[a.project]})
	}
	return out
}
