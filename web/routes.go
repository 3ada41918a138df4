package web

import (
	"net/http"

	"github.com/attune/attune/internal/attune"
)

// routes is the one place that lists every URL attune answers.
func (s *Server) routes() http.Handler {
	app := http.NewServeMux()
	app.Handle("GET /login", s.h(s.loginPage))
	app.Handle("POST /login", s.h(s.login))
	app.Handle("POST /logout", s.h(s.logout))

	app.Handle("GET /{$}", s.signedIn(s.h(s.home)))

	app.Handle("GET /admin/users", s.role(attune.RoleAdmin, s.h(s.adminUsers)))
	app.Handle("POST /admin/users", s.role(attune.RoleAdmin, s.h(s.adminAddUser)))
	app.Handle("POST /admin/users/{id}/role", s.role(attune.RoleAdmin, s.h(s.adminSetRole)))
	app.Handle("POST /admin/users/{id}/disable", s.role(attune.RoleAdmin, s.h(s.adminDisable)))
	app.Handle("POST /admin/users/{id}/enable", s.role(attune.RoleAdmin, s.h(s.adminEnable)))

	// Projects (web/projects.go) and the user's own account (web/account.go).
	s.projectRoutes(app)
	s.accountRoutes(app)
	// The annotator's workspace (web/annotate.go).
	s.annotateRoutes(app)
	// Judges and their runs (web/judges.go).
	s.judgeRoutes(app)
	// Agreement reports and labels brought in from elsewhere (web/reports.go).
	s.reportRoutes(app)
	// Adjudication and gold sets (web/gold.go), and exports (web/exports.go).
	s.goldRoutes(app)
	s.exportRoutes(app)

	app.Handle("/", s.h(s.notFound))

	// Probes and static files need no session: they stay cheap and never
	// touch the session table.
	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", s.healthz)
	root.HandleFunc("GET /readyz", s.readyz)
	root.Handle("GET /static/", staticHandler())
	// The JSON API authenticates with bearer tokens only, never cookies, so
	// it sits outside the session and cross-origin layers.
	root.Handle("/api/v1/", s.apiRoutes())
	if s.opts.FakeLLM != nil {
		// The demo's model, on the app's own address: a newcomer's judge
		// runs need no API key and no second process.
		root.Handle("/fake-llm/", http.StripPrefix("/fake-llm", s.opts.FakeLLM))
	}
	root.Handle("/", s.withSession(app))
	return s.recover(s.logRequests(securityHeaders(root)))
}
