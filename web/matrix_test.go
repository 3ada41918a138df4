package web_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web"
)

// The six kinds of user the authorization matrix tries every route as.
// "in" and "out" are relative to the project the route names.
type kind string

const (
	signedOut kind = "signed out"
	annOut    kind = "annotator, not a member"
	annIn     kind = "annotator, annotating the project"
	leadOut   kind = "lead, not a member"
	leadIn    kind = "lead, leading the project"
	admin     kind = "admin, not a member"
)

var kinds = []kind{signedOut, annOut, annIn, leadOut, leadIn, admin}

// allowed says whether the table's rule lets a kind of user through.
func allowed(rule web.RouteRule, k kind) bool {
	if rule.Bare || !rule.Session && !rule.Token {
		return true
	}
	if k == signedOut {
		return false
	}
	role := map[kind]attune.Role{annOut: attune.RoleAnnotator, annIn: attune.RoleAnnotator,
		leadOut: attune.RoleLead, leadIn: attune.RoleLead, admin: attune.RoleAdmin}[k]
	if rule.Role != "" && !role.AtLeast(rule.Role) {
		return false
	}
	switch rule.Project {
	case "member":
		return k == annIn || k == leadIn || k == admin
	case "annotator":
		return k == annIn
	case "lead":
		return k == leadIn || k == admin
	}
	return true
}

// matrix is one app with the six users signed in (and holding API
// tokens), shared by every route's cells.
type matrix struct {
	a       *app
	users   map[kind]*attune.User
	clients map[kind]*client
	tokens  map[kind]*apiClient
	seq     chan int // numbers worlds, so that names never collide
}

func newMatrix(t *testing.T) *matrix {
	// The demo's model is served too, so that its route is in the table.
	fake := func(o *web.Options) { o.FakeLLM = fakellm.New(fakellm.Options{}) }
	m := &matrix{a: newApp(t, fake), users: map[kind]*attune.User{}, clients: map[kind]*client{}, tokens: map[kind]*apiClient{},
		seq: make(chan int, 1)}
	m.seq <- 0
	if err := m.a.db.LoadBuiltinRubrics(context.Background()); err != nil {
		t.Fatal(err)
	}
	roles := map[kind]attune.Role{annOut: attune.RoleAnnotator, annIn: attune.RoleAnnotator,
		leadOut: attune.RoleLead, leadIn: attune.RoleLead, admin: attune.RoleAdmin}
	for i, k := range kinds {
		c := m.a.client()
		m.clients[k] = c
		m.tokens[k] = &apiClient{t: t, base: m.a.srv.URL}
		if k == signedOut {
			continue
		}
		u := m.a.user(fmt.Sprintf("matrix-%d@example.org", i), roles[k])
		m.users[k] = u
		c.mustSignIn(u)
		m.tokens[k] = m.a.apiFor(u)
	}
	return m
}

// world is a project with everything a route may name: the project led by
// the leadIn user and annotated by the annIn user, who has labelled one
// item and holds another, which has gold; a bystander member, who flagged an item; a judge
// and a run; a webhook; and the acting user's own API token.
type world struct {
	project, labelled, held, assignment, bystander, flag, judge, run, hook, token int64
}

func (m *matrix) world(t *testing.T, actor kind) world {
	t.Helper()
	ctx := context.Background()
	db := m.a.db
	n := <-m.seq
	m.seq <- n + 1
	lead, ann := m.users[leadIn], m.users[annIn]
	var w world
	p, err := db.CreateProject(ctx, &lead.ID, store.NewProject{Name: fmt.Sprintf("World %d", n),
		RubricVersionID: m.a.rubricID("empathetic-dialogue@2"), Overlap: 2, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w.project = p.ID
	items := ""
	for i := range 3 {
		items += fmt.Sprintf(`{"id":"w%d-%d","messages":[{"role":"user","content":"I feel low today."},{"role":"assistant","content":"I am sorry. What happened?"}]}`+"\n", n, i)
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(items), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddMember(ctx, nil, p.ID, ann.ID, attune.MemberAnnotator); err != nil {
		t.Fatal(err)
	}
	by := m.a.user(fmt.Sprintf("bystander-%d@example.org", n), attune.RoleAnnotator)
	w.bystander = by.ID
	if err := db.AddMember(ctx, nil, p.ID, by.ID, attune.MemberAnnotator); err != nil {
		t.Fatal(err)
	}
	first, err := db.NextAssignment(ctx, p.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: first.ID, UserID: ann.ID, Answers: likertAnswers}); err != nil {
		t.Fatal(err)
	}
	w.labelled = first.ItemID
	held, err := db.NextAssignment(ctx, p.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.held, w.assignment = held.ItemID, held.ID
	// The held item has gold, so that reading gold is allowed to succeed.
	if err := db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: held.ItemID, ActorID: lead.ID, Answers: likertAnswers}); err != nil {
		t.Fatal(err)
	}
	flagged, err := db.NextAssignment(ctx, p.ID, by.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Skip(ctx, flagged.ID, by.ID, "broken", "cut off"); err != nil {
		t.Fatal(err)
	}
	w.flag = flagged.ID
	j, err := db.CreateJudge(ctx, &lead.ID, testPolicy, store.NewJudge{Name: fmt.Sprintf("judge-%d", n), Provider: "openai",
		BaseURL: "http://127.0.0.1:1/v1", Model: "fake-1", APIKeyEnv: "ATTUNE_TEST_KEY",
		Settings: attune.JudgeSettings{MaxTokens: 300, Samples: 1, Concurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	w.judge = j.ID
	run, err := db.CreateRun(ctx, &lead.ID, store.NewRun{JudgeID: j.ID, ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	w.run = run.ID
	hook, _, err := db.CreateWebhook(ctx, &lead.ID, testPolicy, p.ID, "http://127.0.0.1:1/hook", attune.WebhookEvents)
	if err != nil {
		t.Fatal(err)
	}
	w.hook = hook.ID
	if u := m.users[actor]; u != nil {
		_, tok, err := db.CreateAPIToken(ctx, nil, u.ID, fmt.Sprintf("world %d", n), false)
		if err != nil {
			t.Fatal(err)
		}
		w.token = tok.ID
	}
	return w
}

// path fills a pattern's wildcards with the world's objects.
func (w world) path(pattern string) string {
	_, p, _ := strings.Cut(pattern, " ")
	if p == "" {
		p = pattern
	}
	p = strings.TrimSuffix(p, "{$}")
	id := w.project
	switch {
	case strings.HasPrefix(p, "/admin/users/"):
		id = w.bystander
	case strings.HasPrefix(p, "/judges/"), strings.HasPrefix(p, "/api/v1/judges/"):
		id = w.judge
	case strings.HasPrefix(p, "/account/tokens/"):
		id = w.token
	case strings.HasPrefix(p, "/api/v1/assignments/"):
		id = w.assignment
	}
	item := w.held
	if strings.HasPrefix(p, "/api/v1/") && strings.HasSuffix(p, "/labels") {
		item = w.labelled // one's own labels: an item labelled already
	}
	r := strings.NewReplacer("{id}", strconv.FormatInt(id, 10), "{item}", strconv.FormatInt(item, 10),
		"{run}", strconv.FormatInt(w.run, 10), "{userID}", strconv.FormatInt(w.bystander, 10), "{flag}", strconv.FormatInt(w.flag, 10),
		"{judge}", strconv.FormatInt(w.judge, 10), "{version}", "1",
		"{hook}", strconv.FormatInt(w.hook, 10))
	p = r.Replace(p)
	switch {
	case p == "/static/":
		return "/static/css/app.css"
	case p == "/fake-llm/":
		return "/fake-llm/v1/models"
	}
	return p
}

// call sends the route's request as the kind of user: an empty form (or
// JSON object) from the app's own pages, so that an allowed request gets
// as far as checking its input.
func (m *matrix) call(t *testing.T, rule web.RouteRule, k kind, path string) response {
	t.Helper()
	method, _, _ := strings.Cut(rule.Pattern, " ")
	if !strings.Contains(rule.Pattern, " ") {
		method = http.MethodGet
	}
	c := m.clients[k]
	if rule.Pattern == "POST /logout" && k != signedOut {
		// Signing out ends the session the other cells share.
		c = m.a.client()
		c.mustSignIn(m.users[k])
	}
	if rule.Token {
		tc := m.tokens[k]
		body := any(nil)
		if method != http.MethodGet {
			body = "{}"
		}
		req, _ := http.NewRequest(method, tc.base+path, nil)
		if body != nil {
			req, _ = http.NewRequest(method, tc.base+path, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		return c.do(req)
	}
	if method == http.MethodGet {
		return c.get(path)
	}
	return c.post(path, url.Values{})
}

// TestAuthorizationMatrix walks the route table and tries every route as
// each kind of user, each allowed try in a world of its own (it may change
// what it names). Someone the rule lets through gets an answer that is
// neither a refusal nor a server error; everyone else is refused: sent to
// sign in (401 for non-GET and the API), or 403/404.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	for _, rule := range m.a.web.RouteRules() {
		t.Run(rule.Pattern, func(t *testing.T) {
			t.Parallel()
			refused := m.world(t, signedOut)
			for _, k := range kinds {
				w := refused
				if allowed(rule, k) {
					w = m.world(t, k)
				}
				path := w.path(rule.Pattern)
				r := m.call(t, rule, k, path)
				loc := r.Header.Get("Location")
				toLogin := r.StatusCode == http.StatusSeeOther && strings.HasPrefix(loc, "/login?next=")
				switch {
				case allowed(rule, k):
					if r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden ||
						r.StatusCode == http.StatusNotFound || r.StatusCode >= 500 || toLogin {
						t.Errorf("%s (%s): %d %s, want it allowed; body: %.300s", path, k, r.StatusCode, loc, r.body)
					}
				case k == signedOut && rule.Token:
					if r.StatusCode != http.StatusUnauthorized {
						t.Errorf("%s (%s): %d, want 401", path, k, r.StatusCode)
					}
				case k == signedOut && strings.HasPrefix(rule.Pattern, "GET "):
					if want := "/login?next=" + url.QueryEscape(path); r.StatusCode != http.StatusSeeOther || loc != want {
						t.Errorf("%s (%s): %d to %q, want 303 to %q", path, k, r.StatusCode, loc, want)
					}
				case k == signedOut:
					if r.StatusCode != http.StatusUnauthorized {
						t.Errorf("%s (%s): %d, want 401", path, k, r.StatusCode)
					}
				default:
					if r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
						t.Errorf("%s (%s): %d, want 403 or 404; body: %.300s", path, k, r.StatusCode, r.body)
					}
				}
			}
		})
	}
}

// TestCrossSiteWritesRefused sends every state-changing route of the table
// cross-site, with the session of someone allowed to use it: the session
// layer refuses each before its handler runs. API routes never read the
// session cookie, so a cross-site request carrying it is simply signed out.
func TestCrossSiteWritesRefused(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	for _, rule := range m.a.web.RouteRules() {
		method, _, _ := strings.Cut(rule.Pattern, " ")
		if method == http.MethodGet || !strings.Contains(rule.Pattern, " ") {
			continue
		}
		t.Run(rule.Pattern, func(t *testing.T) {
			t.Parallel()
			k := admin
			for _, c := range kinds {
				if allowed(rule, c) {
					k = c
					break
				}
			}
			w := m.world(t, k)
			path := w.path(rule.Pattern)
			c := m.clients[k]
			if k != signedOut {
				c = m.a.client() // its own session: the route may be sign-out
				c.mustSignIn(m.users[k])
			}
			for name, headers := range map[string]map[string]string{
				"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site"},
				"foreign Origin":            {"Origin": "https://evil.example"},
			} {
				req, _ := http.NewRequest(method, c.base+path, strings.NewReader(""))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for h, v := range headers {
					req.Header.Set(h, v)
				}
				r := c.do(req)
				want := http.StatusForbidden
				if rule.Token {
					want = http.StatusUnauthorized
				}
				if r.StatusCode != want {
					t.Errorf("%s %s (%s, as %s): %d, want %d", method, path, name, k, r.StatusCode, want)
				}
				if !rule.Token && !strings.Contains(r.body, "came from another site") {
					t.Errorf("%s %s (%s): not refused by the cross-origin layer; body: %.300s", method, path, name, r.body)
				}
			}
			// The session still works: the refusal ended nothing.
			if k != signedOut {
				wantStatus(t, c.get("/"), http.StatusOK)
			}
		})
	}
}

// TestRouteTableIsTheOnlyRegistration fails when a handler is registered
// on a mux anywhere but where the table is applied, so that no route can
// escape the matrix above.
func TestRouteTableIsTheOnlyRegistration(t *testing.T) {
	t.Parallel()
	// Every package of the web layer: the features' handlers as well as
	// this one's.
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !strings.HasSuffix(path, "_templ.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d source files under web/; the walk is broken", len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
					return true
				}
				if name == "routes.go" && (fn.Name.Name == "register" || fn.Name.Name == "routes") {
					return true
				}
				t.Errorf("%s: %s registers a route outside the route table (web/routes.go)", fset.Position(call.Pos()), fn.Name.Name)
				return true
			})
		}
	}
	// The fallbacks routes adds itself answer 404 and 401 only.
	src, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range src.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "routes" {
			var patterns []string
			ast.Inspect(fn, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Handle" {
						if lit, ok := call.Args[0].(*ast.BasicLit); ok {
							patterns = append(patterns, lit.Value)
						}
					}
				}
				return true
			})
			if got := strings.Join(patterns, " "); !regexp.MustCompile(`^("/"|"/api/v1/")( ("/"|"/api/v1/"))*$`).MatchString(got) {
				t.Errorf("routes registers %s itself; only the fallbacks \"/\" and \"/api/v1/\" belong there", got)
			}
		}
	}
}

// TestReadOnlyTokensOnlyRead walks the route table: every API route but a
// GET refuses a read-only token, even one of an admin, whom every rule
// lets through, before its handler acts; every GET answers it.
func TestReadOnlyTokensOnlyRead(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	u := m.users[admin]
	token, _, err := m.a.db.CreateAPIToken(context.Background(), nil, u.ID, "read-only", true)
	if err != nil {
		t.Fatal(err)
	}
	ro := &apiClient{t: t, base: m.a.srv.URL, token: token}
	w := m.world(t, admin)
	routes := 0
	for _, rule := range m.a.web.RouteRules() {
		method, _, _ := strings.Cut(rule.Pattern, " ")
		if !rule.Token {
			continue
		}
		routes++
		path := w.path(rule.Pattern)
		status, raw := ro.send(method, path, map[string]any{}, nil)
		switch {
		case method != http.MethodGet && (status != http.StatusForbidden || !strings.Contains(raw, "read-only")):
			t.Errorf("%s %s with a read-only token: %d %.200s, want 403 saying the token is read-only", method, path, status, raw)
		case method == http.MethodGet && (status == http.StatusUnauthorized || status == http.StatusForbidden && strings.Contains(raw, "read-only")):
			t.Errorf("GET %s with a read-only token: %d %.200s, want it read", path, status, raw)
		}
	}
	if routes < 40 {
		t.Fatalf("only %d API routes walked", routes)
	}
	// Exports are audited as they are read; nothing else may have been.
	var changes []string
	rows, err := m.a.db.Pool().Query(context.Background(), `SELECT action FROM audit_events WHERE actor_id = $1 AND action NOT LIKE 'export.%'`, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(changes) != 0 {
		t.Fatalf("a read-only token's requests changed something: %v", changes)
	}
}
