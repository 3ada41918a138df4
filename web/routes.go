package web

import (
	"fmt"
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/account"
	"github.com/attune/attune/web/annotate"
	"github.com/attune/attune/web/judging"
	"github.com/attune/attune/web/kit"
	"github.com/attune/attune/web/projects"
	"github.com/attune/attune/web/reports"
	"github.com/attune/attune/web/review"
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
	handler kit.Handler
	api     kit.APIHandler
}

// table is the one list of every URL attune answers. Nothing is registered
// any other way (TestRouteTableIsTheOnlyRegistration checks the source).
func (s *Server) table() []route {
	// The features of the web layer, each serving its pages and its API
	// side by side; the blocks of the table below follow them.
	//
	// The annotator's workspace and the labeling API:
	ws := annotate.New(s.Kit, s.labeling, s.opts.BreakAfter)
	// Signing in, the user's own account, the admins' users:
	ac := account.New(s.Kit, s.hasher, s.pace, store.SignInLimits{
		Window:            s.opts.SignInWindow,
		PerAccount:        s.opts.SignInMaxPerAccount,
		PerAddressAccount: s.opts.SignInMaxPerAddressAccount,
		PerAddress:        s.opts.SignInMaxPerAddress,
	}, s.opts.TrustedProxies)
	// Projects, their members, people, imports and webhooks:
	pj := projects.New(s.Kit, s.opts.JudgePolicy)
	// Judges, their prompt versions and runs:
	jd := judging.New(s.Kit, s.runs, s.opts.Runner, s.opts.JudgePolicy)
	// The project page shows the judges' block, and the judges' run form,
	// refused, shows the project page again: each is handed the other's
	// part, so that neither feature imports the other.
	pj.JudgesSection, jd.ProjectPage = jd.ProjectSection, pj.ProjectPage
	// Reports, failures, systems, estimates and the judge experiment:
	rp := reports.New(s.Kit, s.experiments)
	// Gold sets, adjudication, calibration, the items browser, flags and
	// exports:
	rv := review.New(s.Kit, s.adjudication)

	rs := []route{
		// Probes and static files (this package).
		{"GET /healthz", bare, plain(s.healthz), nil},
		{"GET /readyz", bare, plain(s.readyz), nil},
		{"GET /static/", bare, plain(staticHandler().ServeHTTP), nil},
		{"GET /favicon.ico", bare, plain(favicon), nil},
		{"GET /{$}", signedIn, s.home, nil},
		// The API's OpenAPI document, public.
		{"GET /api/v1/openapi.json", bare, plain(s.openAPI), nil},

		// Signing in and out, the user's own account and API tokens, and
		// the admins' users.
		{"GET /login", anyone, ac.LoginPage, nil},
		{"POST /login", anyone, ac.Login, nil},
		{"POST /logout", anyone, ac.Logout, nil},
		{"GET /admin/users", admins, ac.AdminUsers, nil},
		{"POST /admin/users", admins, ac.AdminAddUser, nil},
		{"POST /admin/users/{id}/role", admins, ac.AdminSetRole, nil},
		{"POST /admin/users/{id}/disable", admins, ac.AdminDisable, nil},
		{"POST /admin/users/{id}/enable", admins, ac.AdminEnable, nil},
		{"POST /admin/users/{id}/password", admins, ac.AdminSetPassword, nil},
		{"POST /admin/users/{id}/unlock", admins, ac.AdminClearSignInLock, nil},
		{"GET /account", signedIn, ac.AccountPage, nil},
		{"POST /account/password", signedIn, ac.ChangePassword, nil},
		{"POST /account/tokens", signedIn, ac.CreateToken, nil},
		{"POST /account/tokens/{id}/revoke", signedIn, ac.RevokeToken, nil},
		{"POST /account/rubric", signedIn, ac.SetRubricExpanded, nil},
		{"GET /api/v1/me", token, nil, ac.APIMe},

		// Projects: creation, the project page with progress, members,
		// each annotator's status and re-qualification, imports, editing,
		// status, and the project's webhooks.
		{"GET /projects/new", leads, pj.NewProjectPage, nil},
		{"POST /projects", leads, pj.CreateProject, nil},
		{"GET /projects/{id}", members, pj.ViewProject, nil},
		{"GET /projects/{id}/edit", projectLeads, pj.EditProjectPage, nil},
		{"POST /projects/{id}/edit", projectLeads, pj.UpdateProject, nil},
		{"POST /projects/{id}/members", projectLeads, pj.AddMember, nil},
		{"POST /projects/{id}/members/{userID}/remove", projectLeads, pj.RemoveMember, nil},
		{"POST /projects/{id}/members/{userID}/queue", projectLeads, pj.PauseQueue, nil},
		{"GET /projects/{id}/people", projectLeads, pj.PeoplePage, nil},
		{"POST /projects/{id}/members/{userID}/requalify", projectLeads, pj.Requalify, nil},
		{"POST /projects/{id}/status", projectLeads, pj.SetProjectStatus, nil},
		{"POST /projects/{id}/import", projectUploads, pj.ImportItems, nil},
		// A refused import is shown at the address it was posted to; the
		// address opened again (reloaded, bookmarked) leads to the form.
		{"GET /projects/{id}/import", projectLeads, s.ToProjectPage("#import"), nil},
		{"POST /projects/{id}/sensitive", projectLeads, pj.MarkSensitive, nil},
		{"GET /projects/{id}/webhooks", projectLeads, pj.WebhooksPage, nil},
		{"POST /projects/{id}/webhooks", projectLeads, pj.CreateWebhook, nil},
		{"POST /projects/{id}/webhooks/{hook}/enabled", projectLeads, pj.SetWebhookEnabled, nil},
		{"POST /projects/{id}/webhooks/{hook}/delete", projectLeads, pj.DeleteWebhook, nil},
		{"GET /api/v1/projects", token, nil, pj.APIProjects},
		{"POST /api/v1/projects", tokenLeadAccounts, nil, pj.APICreateProject},
		{"GET /api/v1/projects/{id}", tokenMembers, nil, pj.APIProject},
		{"PATCH /api/v1/projects/{id}", tokenLeads, nil, pj.APIUpdateProject},
		{"GET /api/v1/projects/{id}/members", tokenLeads, nil, pj.APIMembers},
		{"POST /api/v1/projects/{id}/members", tokenLeads, nil, pj.APIAddMember},
		{"DELETE /api/v1/projects/{id}/members/{userID}", tokenLeads, nil, pj.APIRemoveMember},
		{"PUT /api/v1/projects/{id}/members/{userID}/queue", tokenLeads, nil, pj.APIPauseQueue},
		{"GET /api/v1/projects/{id}/people", tokenLeads, nil, pj.APIPeople},
		{"POST /api/v1/projects/{id}/members/{userID}/requalify", tokenLeads, nil, pj.APIRequalify},
		{"POST /api/v1/projects/{id}/sensitive", tokenLeads, nil, pj.APIMarkSensitive},
		{"POST /api/v1/projects/{id}/items", tokenLeads, nil, pj.APIImport},
		{"GET /api/v1/projects/{id}/webhooks", tokenLeads, nil, pj.APIWebhooks},
		{"POST /api/v1/projects/{id}/webhooks", tokenLeads, nil, pj.APICreateWebhook},
		{"PATCH /api/v1/projects/{id}/webhooks/{hook}", tokenLeads, nil, pj.APIUpdateWebhook},
		{"DELETE /api/v1/projects/{id}/webhooks/{hook}", tokenLeads, nil, pj.APIDeleteWebhook},
		{"GET /api/v1/projects/{id}/webhooks/{hook}/deliveries", tokenLeads, nil, pj.APIWebhookDeliveries},

		// The annotator's workspace: the entry that resumes work (GET,
		// which changes nothing) or claims it (POST), the item page
		// (labelling, or editing one's own labels), and the posts that
		// submit, skip, autosave a draft, open a content note and put off
		// a break; and the same for tokens. Others get 403 at the entry
		// and 404 on item routes, so that items are not revealed.
		{"GET /projects/{id}/annotate", annotators, ws.Start, nil},
		{"POST /projects/{id}/annotate", annotators, ws.Claim, nil},
		{"GET /projects/{id}/items/{item}", annotators, ws.Page, nil},
		{"POST /projects/{id}/items/{item}/labels", annotators, ws.Submit, nil},
		// The same submit, posted by a page without its script: a refusal
		// is re-rendered at the item's own address, not at …/labels.
		{"POST /projects/{id}/items/{item}", annotators, ws.Submit, nil},
		{"GET /projects/{id}/items/{item}/feedback", annotators, ws.Feedback, nil},
		{"POST /projects/{id}/items/{item}/skip", annotators, ws.Skip, nil},
		{"POST /projects/{id}/items/{item}/draft", annotators, ws.Draft, nil},
		{"POST /projects/{id}/items/{item}/open", annotators, ws.OpenNote, nil},
		{"POST /projects/{id}/break", annotators, ws.KeepGoing, nil},
		{"POST /api/v1/projects/{id}/next", tokenAnnotators, nil, ws.APINext},
		{"GET /api/v1/projects/{id}/items/{item}/labels", tokenAnnotators, nil, ws.APIOwnLabels},
		{"PUT /api/v1/projects/{id}/items/{item}/labels", tokenAnnotators, nil, ws.APIUpdateLabels},
		{"POST /api/v1/projects/{id}/items/{item}/content-note", tokenAnnotators, nil, ws.APIOpenContentNote},
		{"POST /api/v1/assignments/{id}/labels", tokenAnnotators, nil, ws.APISubmit},
		{"POST /api/v1/assignments/{id}/skip", tokenAnnotators, nil, ws.APISkip},

		// Judges, their runs and, for the project's rubric, their prompt
		// versions (only the judge's owner or an admin makes a new one),
		// on the pages and for tokens by the pages' rules.
		{"GET /judges", leads, jd.JudgesPage, nil},
		{"GET /judges/new", leads, jd.NewJudgePage, nil},
		{"POST /judges", leads, jd.CreateJudge, nil},
		{"GET /judges/{id}/edit", leads, jd.EditJudgePage, nil},
		{"POST /judges/{id}/edit", leads, jd.UpdateJudge, nil},
		{"POST /judges/{id}/try", leads, jd.TryJudge, nil},
		{"POST /projects/{id}/runs", runLeads, jd.EstimateRun, nil},
		{"POST /projects/{id}/runs/confirm", runLeads, jd.StartRun, nil},
		{"GET /projects/{id}/runs/{run}", runLeads, jd.RunPage, nil},
		{"GET /projects/{id}/runs/{run}/progress", runLeads, jd.RunProgress, nil},
		{"POST /projects/{id}/runs/{run}/pause", runLeads, jd.PauseRun, nil},
		{"POST /projects/{id}/runs/{run}/resume", runLeads, jd.ResumeRun, nil},
		{"POST /projects/{id}/runs/{run}/cancel", runLeads, jd.CancelRun, nil},
		{"GET /projects/{id}/runs/{run}/items", runLeads, jd.RunItems, nil},
		{"GET /projects/{id}/runs/{run}/items/{item}", runLeads, jd.RunItem, nil},
		{"GET /projects/{id}/judges/{judge}/prompts", runLeads, jd.PromptsPage, nil},
		{"GET /projects/{id}/judges/{judge}/prompts/new", runLeads, jd.NewPromptPage, nil},
		{"POST /projects/{id}/judges/{judge}/prompts", runLeads, jd.CreatePrompt, nil},
		{"GET /projects/{id}/judges/{judge}/prompts/{version}", runLeads, jd.PromptPage, nil},
		// A judge's certification: the alt-test beside its robustness
		// probes, and the start of a probe.
		{"GET /projects/{id}/judges/{judge}/certification", runLeads, jd.CertificationPage, nil},
		{"POST /projects/{id}/judges/{judge}/probes", runLeads, jd.StartProbe, nil},
		{"GET /api/v1/judges", tokenJudges, nil, jd.APIJudges},
		{"POST /api/v1/judges", tokenJudges, nil, jd.APICreateJudge},
		{"GET /api/v1/judges/{id}", tokenJudges, nil, jd.APIJudge},
		{"PUT /api/v1/judges/{id}", tokenJudges, nil, jd.APIUpdateJudge},
		{"POST /api/v1/judges/{id}/try", tokenJudges, nil, jd.APITryJudge},
		{"GET /api/v1/projects/{id}/judges/{judge}/prompts", tokenRunLeads, nil, jd.APIPrompts},
		{"POST /api/v1/projects/{id}/judges/{judge}/prompts", tokenRunLeads, nil, jd.APICreatePrompt},
		{"GET /api/v1/projects/{id}/judges/{judge}/prompts/{version}", tokenRunLeads, nil, jd.APIPrompt},
		{"GET /api/v1/projects/{id}/judges/{judge}/probes", tokenRunLeads, nil, jd.APIProbes},
		{"POST /api/v1/projects/{id}/judges/{judge}/probes", tokenRunLeads, nil, jd.APIStartProbe},
		{"PUT /api/v1/projects/{id}/probe-thresholds", tokenLeads, nil, jd.APIProbeThresholds},
		{"POST /api/v1/projects/{id}/runs/estimate", tokenRunLeads, nil, jd.APIEstimateRun},
		{"POST /api/v1/projects/{id}/runs", tokenRunLeads, nil, jd.APIStartRun},
		{"GET /api/v1/projects/{id}/runs", tokenRunLeads, nil, jd.APIRuns},
		{"GET /api/v1/projects/{id}/runs/{run}", tokenRunLeads, nil, jd.APIRun},
		{"POST /api/v1/projects/{id}/runs/{run}/pause", tokenRunLeads, nil, jd.APIPauseRun},
		{"POST /api/v1/projects/{id}/runs/{run}/resume", tokenRunLeads, nil, jd.APIResumeRun},
		{"POST /api/v1/projects/{id}/runs/{run}/cancel", tokenRunLeads, nil, jd.APICancelRun},
		{"GET /api/v1/projects/{id}/runs/{run}/items", tokenRunLeads, nil, jd.APIRunItems},
		{"GET /api/v1/projects/{id}/runs/{run}/items/{item}", tokenRunLeads, nil, jd.APIRunItem},

		// Agreement reports, the items behind a figure, labels brought in
		// from elsewhere, where a judge parts from people, judge variants
		// side by side on the frozen gold items, the systems view with its
		// budget preview and the draws that send random judge-only items
		// to people, estimates, and trust routing, which lets a judge keep
		// the items where its agreement with people is guaranteed.
		{"GET /projects/{id}/report", projectLeads, rp.ReportPage, nil},
		{"GET /projects/{id}/report.json", projectLeads, rp.ReportJSON, nil},
		{"GET /projects/{id}/report.csv", projectLeads, rp.ReportCSV, nil},
		{"GET /projects/{id}/report/items", projectLeads, rp.ReportItems, nil},
		{"GET /projects/{id}/failures", projectLeads, rp.FailuresPage, nil},
		{"POST /projects/{id}/labels/import", projectUploads, rp.ImportLabels, nil},
		{"GET /projects/{id}/labels/import", projectLeads, s.ToProjectPage("/report#labels-import"), nil},
		{"GET /projects/{id}/experiment", projectLeads, rp.ExperimentPage, nil},
		{"GET /projects/{id}/systems", projectLeads, rp.SystemsPage, nil},
		{"GET /projects/{id}/systems/preview", projectLeads, rp.SystemsPreview, nil},
		{"POST /projects/{id}/draws", projectLeads, rp.CreateDraw, nil},
		{"GET /projects/{id}/trust", projectLeads, rp.TrustPage, nil},
		{"POST /projects/{id}/trust", projectLeads, rp.SetTrust, nil},
		{"POST /projects/{id}/trust/route", projectLeads, rp.RouteTrust, nil},
		{"GET /api/v1/projects/{id}/report", tokenLeads, nil, rp.APIReport},
		{"POST /api/v1/projects/{id}/labels", tokenLeads, nil, rp.APIImportLabels},
		{"GET /api/v1/projects/{id}/experiment", tokenLeads, nil, rp.APIExperiment},
		{"GET /api/v1/projects/{id}/estimates", tokenLeads, nil, rp.APIEstimates},
		{"POST /api/v1/projects/{id}/draws", tokenLeads, nil, rp.APICreateDraw},
		{"GET /api/v1/projects/{id}/draws", tokenLeads, nil, rp.APIDraws},
		{"GET /api/v1/projects/{id}/failures", tokenLeads, nil, rp.APIFailures},
		{"GET /api/v1/projects/{id}/trust", tokenLeads, nil, rp.APITrust},
		{"GET /api/v1/projects/{id}/trust/routing", tokenLeads, nil, rp.APITrustRouting},
		{"PUT /api/v1/projects/{id}/trust/routing", tokenLeads, nil, rp.APISetTrustRouting},
		{"POST /api/v1/projects/{id}/trust/routing/route", tokenLeads, nil, rp.APIRouteTrust},

		// Review: gold sets and adjudication, the calibration set and its
		// rules, the items browser, and annotators' flags, read and
		// resolved by the project's leads (annotators never see other
		// people's flags); the exports follow the table.
		{"GET /projects/{id}/gold", projectLeads, rv.GoldPage, nil},
		{"POST /projects/{id}/gold/auto", projectLeads, rv.ApplyConsensus, nil},
		{"POST /projects/{id}/gold/settings", projectLeads, rv.GoldSettings, nil},
		{"GET /projects/{id}/disagreements", projectLeads, rv.DisagreementsPage, nil},
		{"GET /projects/{id}/disagreements/{item}", projectLeads, rv.AdjudicatePage, nil},
		{"POST /projects/{id}/disagreements/{item}/gold", projectLeads, rv.SaveGold, nil},
		{"GET /projects/{id}/calibration", projectLeads, rv.CalibrationPage, nil},
		{"POST /projects/{id}/calibration", projectLeads, rv.AddCalibration, nil},
		{"POST /projects/{id}/calibration/remove", projectLeads, rv.RemoveCalibration, nil},
		{"POST /projects/{id}/calibration/policy", projectLeads, rv.CalibrationPolicy, nil},
		{"GET /projects/{id}/browse", projectLeads, rv.BrowseItems, nil},
		{"GET /projects/{id}/browse/{item}", projectLeads, rv.BrowseItem, nil},
		{"GET /projects/{id}/browse/{item}/meta.json", projectLeads, rv.BrowseItemMeta, nil},
		{"GET /projects/{id}/flags", projectLeads, rv.FlagsPage, nil},
		{"POST /projects/{id}/flags/{flag}/resolve", projectLeads, rv.ResolveFlag, nil},
		{"POST /projects/{id}/flags/items/{item}/return", projectLeads, rv.ReturnItem, nil},
		{"POST /api/v1/projects/{id}/gold/consensus", tokenLeads, nil, rv.APIApplyConsensus},
		{"GET /api/v1/projects/{id}/disagreements", tokenLeads, nil, rv.APIDisagreements},
		{"GET /api/v1/projects/{id}/items/{item}/gold", tokenLeads, nil, rv.APIGold},
		{"PUT /api/v1/projects/{id}/items/{item}/gold", tokenLeads, nil, rv.APISetGold},
		{"GET /api/v1/projects/{id}/calibration", tokenLeads, nil, rv.APICalibration},
		{"POST /api/v1/projects/{id}/calibration", tokenLeads, nil, rv.APIAddCalibration},
		{"DELETE /api/v1/projects/{id}/calibration/{item}", tokenLeads, nil, rv.APIRemoveCalibration},
		{"PUT /api/v1/projects/{id}/calibration/policy", tokenLeads, nil, rv.APICalibrationPolicy},
		{"GET /api/v1/projects/{id}/items", tokenLeads, nil, rv.APIItems},
		{"GET /api/v1/projects/{id}/items/{item}", tokenLeads, nil, rv.APIItem},
		{"GET /api/v1/projects/{id}/flags", tokenLeads, nil, rv.APIFlags},
		{"POST /api/v1/projects/{id}/flags/{flag}/resolve", tokenLeads, nil, rv.APIResolveFlag},
		{"PUT /api/v1/projects/{id}/items/{item}/pool", tokenLeads, nil, rv.APISetInPool},
	}
	// The dataset export (docs/datasets.md): one record per item with its
	// dialogue, as JSON Lines or Parquet, for leads on the gold set page
	// and for their tokens.
	for _, f := range []export.Format{export.JSONL, export.Parquet} {
		rs = append(rs, route{review.DatasetPattern("", f), projectLeads, rv.DatasetHandler(f), nil},
			route{review.DatasetPattern("/api/v1", f), tokenLeads, nil, rv.APIDataset(f)})
	}
	// Exports: the gold set (with ?raters=1, also every rater's answers),
	// every label in long form, every judge call and every flag, each as
	// CSV and JSONL, on the pages and for tokens.
	for _, d := range export.Datasets {
		for _, f := range []export.Format{export.CSV, export.JSONL} {
			rs = append(rs, route{"GET " + review.ExportPattern(d, f), projectLeads, rv.ExportHandler(d, f), nil},
				route{"GET /api/v1" + review.ExportPattern(d, f), tokenLeads, nil, rv.APIExport(d, f)})
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
	app.Handle("/", s.H(s.NotFound))
	root.Handle("/api/v1/", s.API(func(*http.Request, *attune.User) (int, any, error) {
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
			fn = kit.APIRole(a.role, fn)
		}
		root.Handle(rt.pattern, s.API(fn))
	case rt.api != nil:
		panic(fmt.Sprintf("route %q: an api handler needs token access", rt.pattern))
	case a.bare:
		root.Handle(rt.pattern, s.H(rt.handler))
	case a.role != "":
		app.Handle(rt.pattern, s.role(a.role, s.textInputs(a.upload, s.H(rt.handler))))
	case a.session:
		app.Handle(rt.pattern, s.signedIn(s.textInputs(a.upload, s.H(rt.handler))))
	case a.project != noProject:
		panic(fmt.Sprintf("route %q: a project rule needs a session", rt.pattern))
	default:
		app.Handle(rt.pattern, s.textInputs(a.upload, s.H(rt.handler)))
	}
}

// plain adapts an http.HandlerFunc that answers everything itself.
func plain(fn http.HandlerFunc) kit.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		fn(w, r)
		return nil
	}
}
