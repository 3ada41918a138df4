package web

import (
	"fmt"
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
)

// access says who may use a route. The route table below states it for
// every route; register applies the parts a wrapper can decide before the
// handler runs (no session at all, a signed-in user, a global role, an API
// token), and the handlers decide the project part as they load the
// project named in the path: someone who is not a member gets 404, the
// same as for a project that does not exist; a member without the needed
// role in it gets 403 or, where even that would reveal an item, 404. The
// authorization matrix test (web/matrix_test.go) walks this table and
// holds every route to its rule for every kind of user.
type access struct {
	// bare routes are served before any session is loaded: probes and
	// static files stay cheap and never touch the session table.
	bare bool
	// session: a signed-in user is needed (signed-out GETs go to the
	// sign-in page, other methods get 401).
	session bool
	// token: a personal API token is needed (401 without one); the token
	// stands for its user, with the user's role and memberships.
	token bool
	// role is the least global role, "" for any.
	role attune.Role
	// project is the standing needed in the project of the path.
	project projectRule
	// upload marks a route whose body is a file streamed to its reader
	// (readUpload): the text check leaves the body unread, since the
	// upload's fields and the file's lines are checked as they are read.
	upload bool
}

// projectRule is the standing a route needs in the project it names.
type projectRule int

const (
	noProject projectRule = iota
	// projectMember: any member of the project; admins count as its leads.
	projectMember
	// projectAnnotator: the project's annotators only (not its leads, not
	// admins who are not annotating members). On /api/v1/assignments/{id},
	// the annotator who holds the assignment.
	projectAnnotator
	// projectLead: the project's leads; admins count as its leads.
	projectLead
)

// The access rules the table uses.
var (
	bare     = access{bare: true}
	anyone   = access{}
	signedIn = access{session: true}
	leads    = access{session: true, role: attune.RoleLead}
	admins   = access{session: true, role: attune.RoleAdmin}
	members  = access{session: true, project: projectMember}
	// annotators label the project; nobody else sees its items.
	annotators   = access{session: true, project: projectAnnotator}
	projectLeads = access{session: true, project: projectLead}
	// projectUploads are projectLeads' file uploads.
	projectUploads = access{session: true, project: projectLead, upload: true}
	// runLeads start and watch judge runs: judges are global objects, so
	// the global role lead is needed besides leading the project.
	runLeads = access{session: true, role: attune.RoleLead, project: projectLead}

	token           = access{token: true}
	tokenMembers    = access{token: true, project: projectMember}
	tokenAnnotators = access{token: true, project: projectAnnotator}
	tokenLeads      = access{token: true, project: projectLead}
	// tokenJudges and tokenRunLeads are judges and runLeads for tokens:
	// judges are global objects, so the token's user needs the global
	// role lead, and for runs also to lead the project.
	tokenJudges = access{token: true, role: attune.RoleLead}
	// tokenLeadAccounts need the global role lead (or admin): making a
	// project, as on the page.
	tokenLeadAccounts = access{token: true, role: attune.RoleLead}
	tokenRunLeads     = access{token: true, role: attune.RoleLead, project: projectLead}
)

// route is one entry of the route table: a ServeMux pattern ("METHOD
// /path/{name}"), who may use it, and its handler — handler for pages and
// forms, api for the JSON API (token routes).
type route struct {
	pattern string
	access  access
	handler handler
	api     apiHandler
}

// table is the one list of every URL attune answers. Nothing is registered
// any other way (TestRouteTableIsTheOnlyRegistration checks the source).
func (s *Server) table() []route {
	ws := newWorkspace(s)
	rs := []route{
		{"GET /healthz", bare, plain(s.healthz), nil},
		{"GET /readyz", bare, plain(s.readyz), nil},
		{"GET /static/", bare, plain(staticHandler().ServeHTTP), nil},
		{"GET /favicon.ico", bare, plain(favicon), nil},

		{"GET /login", anyone, s.loginPage, nil},
		{"POST /login", anyone, s.login, nil},
		{"POST /logout", anyone, s.logout, nil},

		{"GET /{$}", signedIn, s.home, nil},

		{"GET /admin/users", admins, s.adminUsers, nil},
		{"POST /admin/users", admins, s.adminAddUser, nil},
		{"POST /admin/users/{id}/role", admins, s.adminSetRole, nil},
		{"POST /admin/users/{id}/disable", admins, s.adminDisable, nil},
		{"POST /admin/users/{id}/enable", admins, s.adminEnable, nil},
		{"POST /admin/users/{id}/password", admins, s.adminSetPassword, nil},
		{"POST /admin/users/{id}/unlock", admins, s.adminClearSignInLock, nil},

		// The user's own account and API tokens (web/account.go).
		{"GET /account", signedIn, s.accountPage, nil},
		{"POST /account/password", signedIn, s.changePassword, nil},
		{"POST /account/tokens", signedIn, s.createToken, nil},
		{"POST /account/tokens/{id}/revoke", signedIn, s.revokeToken, nil},
		{"POST /account/rubric", signedIn, s.setRubricExpanded, nil},

		// Projects: creation, the project page with progress, members,
		// import, editing and status (web/projects.go).
		{"GET /projects/new", leads, s.newProjectPage, nil},
		{"POST /projects", leads, s.createProject, nil},
		{"GET /projects/{id}", members, s.projectPage, nil},
		{"GET /projects/{id}/edit", projectLeads, s.editProjectPage, nil},
		{"POST /projects/{id}/edit", projectLeads, s.updateProject, nil},
		{"POST /projects/{id}/members", projectLeads, s.addMember, nil},
		{"POST /projects/{id}/members/{userID}/remove", projectLeads, s.removeMember, nil},
		{"POST /projects/{id}/members/{userID}/queue", projectLeads, s.pauseQueue, nil},
		// Each annotator's status and re-qualification (web/people.go).
		{"GET /projects/{id}/people", projectLeads, s.peoplePage, nil},
		{"POST /projects/{id}/members/{userID}/requalify", projectLeads, s.requalify, nil},
		{"POST /projects/{id}/status", projectLeads, s.setProjectStatus, nil},
		{"POST /projects/{id}/import", projectUploads, s.importItems, nil},
		// A refused import is shown at the address it was posted to; the
		// address opened again (reloaded, bookmarked) leads to the form.
		{"GET /projects/{id}/import", projectLeads, s.toImportForm("#import"), nil},
		{"POST /projects/{id}/sensitive", projectLeads, s.markSensitive, nil},

		// The annotator's workspace (web/annotate.go): the entry that
		// resumes work (GET, which changes nothing) or claims it (POST),
		// the item page (labelling, or editing one's own labels), and the
		// posts that submit, skip, autosave a draft, open a content note
		// and put off a break.
		// Others get 403 at the entry and 404 on item routes, so that
		// items are not revealed.
		{"GET /projects/{id}/annotate", annotators, ws.start, nil},
		{"POST /projects/{id}/annotate", annotators, ws.claim, nil},
		{"GET /projects/{id}/items/{item}", annotators, ws.page, nil},
		{"POST /projects/{id}/items/{item}/labels", annotators, ws.submit, nil},
		// The same submit, posted by a page without its script: a refusal
		// is re-rendered at the item's own address, not at …/labels.
		{"POST /projects/{id}/items/{item}", annotators, ws.submit, nil},
		{"GET /projects/{id}/items/{item}/feedback", annotators, ws.feedback, nil},
		{"POST /projects/{id}/items/{item}/skip", annotators, ws.skip, nil},
		{"POST /projects/{id}/items/{item}/draft", annotators, ws.draft, nil},
		{"POST /projects/{id}/items/{item}/open", annotators, ws.openNote, nil},
		{"POST /projects/{id}/break", annotators, ws.keepGoing, nil},

		// Judges and their runs (web/judges*.go).
		{"GET /judges", leads, s.judgesPage, nil},
		{"GET /judges/new", leads, s.newJudgePage, nil},
		{"POST /judges", leads, s.createJudge, nil},
		{"GET /judges/{id}/edit", leads, s.editJudgePage, nil},
		{"POST /judges/{id}/edit", leads, s.updateJudge, nil},
		{"POST /judges/{id}/try", leads, s.tryJudge, nil},
		{"POST /projects/{id}/runs", runLeads, s.estimateRun, nil},
		{"POST /projects/{id}/runs/confirm", runLeads, s.startRun, nil},
		{"GET /projects/{id}/runs/{run}", runLeads, s.runPage, nil},
		{"GET /projects/{id}/runs/{run}/progress", runLeads, s.runProgress, nil},
		{"POST /projects/{id}/runs/{run}/pause", runLeads, s.pauseRun, nil},
		{"POST /projects/{id}/runs/{run}/resume", runLeads, s.resumeRun, nil},
		{"POST /projects/{id}/runs/{run}/cancel", runLeads, s.cancelRun, nil},
		{"GET /projects/{id}/runs/{run}/items", runLeads, s.runItems, nil},
		{"GET /projects/{id}/runs/{run}/items/{item}", runLeads, s.runItem, nil},
		// A judge's prompt versions for the project's rubric
		// (web/judges_prompts.go); only the judge's owner or an admin
		// makes a new one.
		{"GET /projects/{id}/judges/{judge}/prompts", runLeads, s.promptsPage, nil},
		{"GET /projects/{id}/judges/{judge}/prompts/new", runLeads, s.newPromptPage, nil},
		{"POST /projects/{id}/judges/{judge}/prompts", runLeads, s.createPrompt, nil},
		{"GET /projects/{id}/judges/{judge}/prompts/{version}", runLeads, s.promptPage, nil},

		// Agreement reports and labels brought in from elsewhere
		// (web/reports.go).
		{"GET /projects/{id}/report", projectLeads, s.reportPage, nil},
		{"GET /projects/{id}/report.json", projectLeads, s.reportJSON, nil},
		{"GET /projects/{id}/report.csv", projectLeads, s.reportCSV, nil},
		// The items behind a figure of the report (web/reports_drill.go).
		{"GET /projects/{id}/report/items", projectLeads, s.reportItems, nil},
		// Where a judge parts from people, by kind of item (web/failures.go).
		{"GET /projects/{id}/failures", projectLeads, s.failuresPage, nil},
		{"POST /projects/{id}/labels/import", projectUploads, s.importLabels, nil},
		{"GET /projects/{id}/labels/import", projectLeads, s.toImportForm("/report#labels-import"), nil},
		// Judge variants side by side on the frozen gold items
		// (web/experiment.go).
		{"GET /projects/{id}/experiment", projectLeads, s.experimentPage, nil},
		// The systems view, its budget preview and the draw that sends
		// random judge-only items to people (web/systems.go).
		{"GET /projects/{id}/systems", projectLeads, s.systemsPage, nil},
		{"GET /projects/{id}/systems/preview", projectLeads, s.systemsPreview, nil},
		{"POST /projects/{id}/draws", projectLeads, s.createDraw, nil},

		// The items browser: leads search the project's items and read
		// everything known of one (web/items.go).
		{"GET /projects/{id}/browse", projectLeads, s.browseItems, nil},
		{"GET /projects/{id}/browse/{item}", projectLeads, s.browseItem, nil},
		{"GET /projects/{id}/browse/{item}/meta.json", projectLeads, s.browseItemMeta, nil},

		// Adjudication and gold sets (web/gold.go).
		{"GET /projects/{id}/gold", projectLeads, s.goldPage, nil},
		{"POST /projects/{id}/gold/auto", projectLeads, s.applyConsensus, nil},
		{"POST /projects/{id}/gold/settings", projectLeads, s.goldSettings, nil},
		{"GET /projects/{id}/disagreements", projectLeads, s.disagreementsPage, nil},
		{"GET /projects/{id}/disagreements/{item}", projectLeads, s.adjudicatePage, nil},
		{"POST /projects/{id}/disagreements/{item}/gold", projectLeads, s.saveGold, nil},
		// The calibration set and its rules (web/calibration.go).
		{"GET /projects/{id}/calibration", projectLeads, s.calibrationPage, nil},
		{"POST /projects/{id}/calibration", projectLeads, s.addCalibration, nil},
		{"POST /projects/{id}/calibration/remove", projectLeads, s.removeCalibration, nil},
		{"POST /projects/{id}/calibration/policy", projectLeads, s.calibrationPolicy, nil},

		// Annotators' flags, read and resolved by the project's leads
		// (web/flags.go); annotators never see other people's flags.
		{"GET /projects/{id}/webhooks", projectLeads, s.webhooksPage, nil},
		{"POST /projects/{id}/webhooks", projectLeads, s.createWebhook, nil},
		{"POST /projects/{id}/webhooks/{hook}/enabled", projectLeads, s.setWebhookEnabled, nil},
		{"POST /projects/{id}/webhooks/{hook}/delete", projectLeads, s.deleteWebhook, nil},
		{"GET /projects/{id}/flags", projectLeads, s.flagsPage, nil},
		{"POST /projects/{id}/flags/{flag}/resolve", projectLeads, s.resolveFlag, nil},
		{"POST /projects/{id}/flags/items/{item}/return", projectLeads, s.returnItem, nil},

		// The JSON API (web/api.go, documented in docs/api.md).
		// The API's OpenAPI document (web/openapi.go), public.
		{"GET /api/v1/openapi.json", bare, plain(s.openAPI), nil},
		{"GET /api/v1/me", token, nil, s.apiMe},
		{"GET /api/v1/projects", token, nil, s.apiProjects},
		{"POST /api/v1/projects", tokenLeadAccounts, nil, s.apiCreateProject},
		{"GET /api/v1/projects/{id}", tokenMembers, nil, s.apiProject},
		{"PATCH /api/v1/projects/{id}", tokenLeads, nil, s.apiUpdateProject},
		{"GET /api/v1/projects/{id}/members", tokenLeads, nil, s.apiMembers},
		{"POST /api/v1/projects/{id}/members", tokenLeads, nil, s.apiAddMember},
		{"DELETE /api/v1/projects/{id}/members/{userID}", tokenLeads, nil, s.apiRemoveMember},
		{"PUT /api/v1/projects/{id}/members/{userID}/queue", tokenLeads, nil, s.apiPauseQueue},
		{"GET /api/v1/projects/{id}/people", tokenLeads, nil, s.apiPeople},
		{"POST /api/v1/projects/{id}/members/{userID}/requalify", tokenLeads, nil, s.apiRequalify},
		{"POST /api/v1/projects/{id}/sensitive", tokenLeads, nil, s.apiMarkSensitive},
		{"POST /api/v1/projects/{id}/labels", tokenLeads, nil, s.apiImportLabels},
		{"GET /api/v1/projects/{id}/webhooks", tokenLeads, nil, s.apiWebhooks},
		{"POST /api/v1/projects/{id}/webhooks", tokenLeads, nil, s.apiCreateWebhook},
		{"PATCH /api/v1/projects/{id}/webhooks/{hook}", tokenLeads, nil, s.apiUpdateWebhook},
		{"DELETE /api/v1/projects/{id}/webhooks/{hook}", tokenLeads, nil, s.apiDeleteWebhook},
		{"GET /api/v1/projects/{id}/webhooks/{hook}/deliveries", tokenLeads, nil, s.apiWebhookDeliveries},
		{"POST /api/v1/projects/{id}/items", tokenLeads, nil, s.apiImport},
		{"POST /api/v1/projects/{id}/next", tokenAnnotators, nil, s.apiNext},
		{"GET /api/v1/projects/{id}/items/{item}/labels", tokenAnnotators, nil, s.apiOwnLabels},
		{"PUT /api/v1/projects/{id}/items/{item}/labels", tokenAnnotators, nil, s.apiUpdateLabels},
		{"POST /api/v1/projects/{id}/items/{item}/content-note", tokenAnnotators, nil, s.apiOpenContentNote},
		{"POST /api/v1/assignments/{id}/labels", tokenAnnotators, nil, s.apiSubmit},
		{"POST /api/v1/assignments/{id}/skip", tokenAnnotators, nil, s.apiSkip},
		{"GET /api/v1/projects/{id}/flags", tokenLeads, nil, s.apiFlags},
		{"POST /api/v1/projects/{id}/flags/{flag}/resolve", tokenLeads, nil, s.apiResolveFlag},
		{"PUT /api/v1/projects/{id}/items/{item}/pool", tokenLeads, nil, s.apiSetInPool},
		{"POST /api/v1/projects/{id}/gold/consensus", tokenLeads, nil, s.apiApplyConsensus},
		{"GET /api/v1/projects/{id}/disagreements", tokenLeads, nil, s.apiDisagreements},
		{"GET /api/v1/projects/{id}/calibration", tokenLeads, nil, s.apiCalibration},
		{"POST /api/v1/projects/{id}/calibration", tokenLeads, nil, s.apiAddCalibration},
		{"DELETE /api/v1/projects/{id}/calibration/{item}", tokenLeads, nil, s.apiRemoveCalibration},
		{"PUT /api/v1/projects/{id}/calibration/policy", tokenLeads, nil, s.apiCalibrationPolicy},
		// The items browser's search and item (web/items_api.go).
		{"GET /api/v1/projects/{id}/items", tokenLeads, nil, s.apiItems},
		{"GET /api/v1/projects/{id}/items/{item}", tokenLeads, nil, s.apiItem},
		{"GET /api/v1/projects/{id}/items/{item}/gold", tokenLeads, nil, s.apiGold},
		{"PUT /api/v1/projects/{id}/items/{item}/gold", tokenLeads, nil, s.apiSetGold},
		// Judges, their prompt versions and runs (web/judges_api.go), by
		// the rules of the judge pages.
		{"GET /api/v1/judges", tokenJudges, nil, s.apiJudges},
		{"POST /api/v1/judges", tokenJudges, nil, s.apiCreateJudge},
		{"GET /api/v1/judges/{id}", tokenJudges, nil, s.apiJudge},
		{"PUT /api/v1/judges/{id}", tokenJudges, nil, s.apiUpdateJudge},
		{"POST /api/v1/judges/{id}/try", tokenJudges, nil, s.apiTryJudge},
		{"GET /api/v1/projects/{id}/judges/{judge}/prompts", tokenRunLeads, nil, s.apiPrompts},
		{"POST /api/v1/projects/{id}/judges/{judge}/prompts", tokenRunLeads, nil, s.apiCreatePrompt},
		{"GET /api/v1/projects/{id}/judges/{judge}/prompts/{version}", tokenRunLeads, nil, s.apiPrompt},
		{"POST /api/v1/projects/{id}/runs/estimate", tokenRunLeads, nil, s.apiEstimateRun},
		{"POST /api/v1/projects/{id}/runs", tokenRunLeads, nil, s.apiStartRun},
		{"GET /api/v1/projects/{id}/runs", tokenRunLeads, nil, s.apiRuns},
		{"GET /api/v1/projects/{id}/runs/{run}", tokenRunLeads, nil, s.apiRun},
		{"POST /api/v1/projects/{id}/runs/{run}/pause", tokenRunLeads, nil, s.apiPauseRun},
		{"POST /api/v1/projects/{id}/runs/{run}/resume", tokenRunLeads, nil, s.apiResumeRun},
		{"POST /api/v1/projects/{id}/runs/{run}/cancel", tokenRunLeads, nil, s.apiCancelRun},
		{"GET /api/v1/projects/{id}/runs/{run}/items", tokenRunLeads, nil, s.apiRunItems},
		{"GET /api/v1/projects/{id}/runs/{run}/items/{item}", tokenRunLeads, nil, s.apiRunItem},
		// The judge experiment's comparison (web/experiment.go).
		{"GET /api/v1/projects/{id}/experiment", tokenLeads, nil, s.apiExperiment},
		{"GET /api/v1/projects/{id}/report", tokenLeads, nil, s.apiReport},
		{"GET /api/v1/projects/{id}/estimates", tokenLeads, nil, s.apiEstimates},
		// Draws of items for people (web/draws_api.go).
		{"POST /api/v1/projects/{id}/draws", tokenLeads, nil, s.apiCreateDraw},
		{"GET /api/v1/projects/{id}/draws", tokenLeads, nil, s.apiDraws},
		{"GET /api/v1/projects/{id}/failures", tokenLeads, nil, s.apiFailures},
		{"GET /api/v1/projects/{id}/trust", tokenLeads, nil, s.apiTrust},
	}
	// The dataset export (web/exports.go, docs/datasets.md): one record
	// per item with its dialogue, as JSON Lines or Parquet, for leads on
	// the gold set page and for their tokens.
	for _, f := range []export.Format{export.JSONL, export.Parquet} {
		rs = append(rs, route{datasetPattern("", f), projectLeads, s.datasetHandler(f), nil},
			route{datasetPattern("/api/v1", f), tokenLeads, nil, s.apiDataset(f)})
	}
	// Exports (web/exports.go): the gold set (with ?raters=1, also every
	// rater's answers), every label in long form, every judge call and
	// every flag, each as CSV and JSONL, on the pages and for tokens.
	for _, d := range export.Datasets {
		for _, f := range []export.Format{export.CSV, export.JSONL} {
			rs = append(rs, route{"GET " + exportPattern(d, f), projectLeads, s.exportHandler(d, f), nil},
				route{"GET /api/v1" + exportPattern(d, f), tokenLeads, nil, s.apiExport(d, f)})
		}
	}
	if s.opts.FakeLLM != nil {
		// The demo's model, on the app's own address: a newcomer's judge
		// runs need no API key and no second process.
		rs = append(rs, route{"/fake-llm/", bare, plain(http.StripPrefix("/fake-llm", s.opts.FakeLLM).ServeHTTP), nil})
	}
	return rs
}

// routes builds the handler from the table: bare and token routes on the
// outer mux, the rest behind the session and cross-origin layers. The JSON
// API authenticates with bearer tokens only, never cookies, so it sits
// outside those layers.
func (s *Server) routes() http.Handler {
	root, app := http.NewServeMux(), http.NewServeMux()
	for _, rt := range s.table() {
		s.register(root, app, rt)
	}
	app.Handle("/", s.h(s.notFound))
	root.Handle("/api/v1/", s.api(func(*http.Request, *attune.User) (int, any, error) {
		return 0, nil, attune.NotFound("no such API route")
	}))
	root.Handle("/", s.withSession(app))
	return s.recover(s.logRequests(securityHeaders(root)))
}

// register adds one route with the wrappers its access rule asks for.
func (s *Server) register(root, app *http.ServeMux, rt route) {
	a := rt.access
	switch {
	case a.token:
		if rt.api == nil || rt.handler != nil {
			panic(fmt.Sprintf("route %q: a token route has an api handler", rt.pattern))
		}
		fn := rt.api
		if a.role != "" {
			fn = apiRole(a.role, fn)
		}
		root.Handle(rt.pattern, s.api(fn))
	case rt.api != nil:
		panic(fmt.Sprintf("route %q: an api handler needs token access", rt.pattern))
	case a.bare:
		root.Handle(rt.pattern, s.h(rt.handler))
	case a.role != "":
		app.Handle(rt.pattern, s.role(a.role, s.textInputs(a.upload, s.h(rt.handler))))
	case a.session:
		app.Handle(rt.pattern, s.signedIn(s.textInputs(a.upload, s.h(rt.handler))))
	case a.project != noProject:
		panic(fmt.Sprintf("route %q: a project rule needs a session", rt.pattern))
	default:
		app.Handle(rt.pattern, s.textInputs(a.upload, s.h(rt.handler)))
	}
}

// plain adapts an http.HandlerFunc that answers everything itself.
func plain(fn http.HandlerFunc) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		fn(w, r)
		return nil
	}
}
