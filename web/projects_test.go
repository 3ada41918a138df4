package web_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/store"
)

// goodJSONL is a dataset of two items in the chat-messages shape.
const goodJSONL = `{"id":"a1","messages":[{"role":"user","content":"I feel alone"},{"role":"assistant","content":"That sounds hard."}]}
{"id":"a2","messages":[{"role":"user","content":"Work is too much"},{"role":"assistant","content":"What weighs on you most?"}]}
`

// rubricID loads the built-in rubrics and returns the id of ref
// (key@version).
func (a *app) rubricID(ref string) int64 {
	a.t.Helper()
	ctx := context.Background()
	if err := a.db.LoadBuiltinRubrics(ctx); err != nil {
		a.t.Fatal(err)
	}
	rubrics, err := a.db.ListRubrics(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, rv := range rubrics {
		if rv.Ref.String() == ref {
			return rv.ID
		}
	}
	a.t.Fatalf("no rubric %s", ref)
	return 0
}

// projectOpts configures a.project; zero values take defaults.
type projectOpts struct {
	name         string // default "Pilot"
	rubric       string // default coaching-conversation@2.0
	overlap      int    // default 2
	instructions string
}

// project creates a project led by lead through the store.
func (a *app) project(lead *attune.User, o projectOpts) *attune.Project {
	a.t.Helper()
	if o.name == "" {
		o.name = "Pilot"
	}
	if o.rubric == "" {
		o.rubric = "coaching-conversation@2.0"
	}
	if o.overlap == 0 {
		o.overlap = 2
	}
	p, err := a.db.CreateProject(context.Background(), &lead.ID, store.NewProject{
		Name: o.name, Instructions: o.instructions, RubricVersionID: a.rubricID(o.rubric), Overlap: o.overlap, Lease: 30 * time.Minute,
	})
	if err != nil {
		a.t.Fatal(err)
	}
	return p
}

// member adds u to the project with the role.
func (a *app) member(p *attune.Project, u *attune.User, role attune.MemberRole) {
	a.t.Helper()
	if err := a.db.AddMember(context.Background(), nil, p.ID, u.ID, role); err != nil {
		a.t.Fatal(err)
	}
}

func (a *app) items(p *attune.Project) int {
	a.t.Helper()
	pr, err := a.db.Progress(context.Background(), p.ID)
	if err != nil {
		a.t.Fatal(err)
	}
	return pr.Items
}

// formPart is one non-file field of a multipart form.
type formPart struct{ name, value string }

// upload posts a multipart form as a same-origin browser would: the fields
// in order, then the file (omitted when fileName is "").
func (c *client) upload(path string, fields []formPart, fileName, content string) response {
	c.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range fields {
		if err := mw.WriteField(f.name, f.value); err != nil {
			c.t.Fatal(err)
		}
	}
	if fileName != "" {
		fw, err := mw.CreateFormFile("file", fileName)
		if err != nil {
			c.t.Fatal(err)
		}
		fw.Write([]byte(content))
	}
	if err := mw.Close(); err != nil {
		c.t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, c.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", c.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return c.do(req)
}

func wantLacks(t *testing.T, r response, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(r.body, p) {
			t.Fatalf("%s %s: body has %q; body: %.600s", r.Request.Method, r.Request.URL.Path, p, r.body)
		}
	}
}

func projectPath(p *attune.Project, suffix string) string {
	return fmt.Sprintf("/projects/%d%s", p.ID, suffix)
}

func TestCreateProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	rvID := a.rubricID("coaching-conversation@2.0")
	lead := a.user("lee@example.org", attune.RoleLead)
	c := a.client()
	c.mustSignIn(lead)

	home := c.get("/")
	wantContains(t, home, `data-testid="new-project"`, `href="/projects/new"`, "New project")
	page := c.get("/projects/new")
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="project-form"`, "coaching-conversation@2.0 — ", `name="overlap" value="3"`, `name="lease" value="30"`)

	// Bad input: a message per field, what was typed kept, nothing stored.
	r := c.post("/projects", url.Values{"name": {"  "}, "rubric": {""}, "overlap": {"11"}, "lease": {"0"}, "instructions": {"Be kind"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-name"`, `data-testid="error-rubric"`, `data-testid="error-overlap"`, `data-testid="error-lease"`,
		"from 1 to 10", "from 1 to 1440", ">Be kind</textarea>", `value="11"`)
	r = c.post("/projects", url.Values{"name": {strings.Repeat("n", 201)}, "rubric": {"999999"}, "overlap": {"two"}, "lease": {"1441"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "200 characters or fewer", "no longer exists", `data-testid="error-overlap"`, `data-testid="error-lease"`)
	ps, err := a.db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 0 {
		t.Fatalf("%d projects after rejected forms, want 0", len(ps))
	}

	good := url.Values{"name": {"Pilot"}, "rubric": {fmt.Sprint(rvID)}, "overlap": {"2"}, "lease": {"45"}, "instructions": {"Read **every** turn."}}
	r = c.post("/projects", good)
	wantStatus(t, r, http.StatusSeeOther)
	p, err := a.db.FindProjectByName(ctx, "Pilot")
	if err != nil {
		t.Fatal(err)
	}
	if p.Overlap != 2 || p.Lease != 45*time.Minute || p.RubricRef != "coaching-conversation@2.0" || p.Instructions != "Read **every** turn." {
		t.Fatalf("stored project %+v", p)
	}
	if loc := r.Header.Get("Location"); loc != projectPath(p, "") {
		t.Fatalf("redirect to %q", loc)
	}
	page = c.get(projectPath(p, ""))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="flash"`, "Created Pilot", "coaching-conversation@2.0", "45 min",
		"<strong>every</strong>", `data-testid="no-items"`, `data-testid="members"`, "lee@example.org")
	if role, err := a.db.ProjectRole(ctx, p.ID, lead); err != nil || role != attune.MemberLead {
		t.Fatalf("creator's role %q, %v", role, err)
	}

	// The name is taken: the conflict shows on the name field.
	r = c.post("/projects", good)
	wantStatus(t, r, http.StatusConflict)
	wantContains(t, r, `data-testid="error-name"`, "already exists")

	// The home page links the project and shows its progress.
	home = c.get("/")
	wantContains(t, home, fmt.Sprintf(`href="/projects/%d"`, p.ID), "0/0 items complete")

	// Annotators cannot create projects.
	ann := a.client()
	ann.mustSignIn(a.user("ann@example.org", attune.RoleAnnotator))
	wantStatus(t, ann.get("/projects/new"), http.StatusForbidden)
	wantStatus(t, ann.post("/projects", url.Values{"name": {"Mine"}, "rubric": {fmt.Sprint(rvID)}, "overlap": {"1"}, "lease": {"5"}}), http.StatusForbidden)
	wantLacks(t, ann.get("/"), `data-testid="new-project"`)
}

func TestProjectAccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{instructions: "Label *carefully*."})
	inside := a.user("ann@example.org", attune.RoleAnnotator)
	a.member(p, inside, attune.MemberAnnotator)
	outsider := a.user("out@example.org", attune.RoleAnnotator)
	otherLead := a.user("olga@example.org", attune.RoleLead)

	type route struct{ method, path string }
	manage := []route{
		{"GET", projectPath(p, "/edit")},
		{"POST", projectPath(p, "/edit")},
		{"POST", projectPath(p, "/members")},
		{"POST", projectPath(p, fmt.Sprintf("/members/%d/remove", lead.ID))},
		{"POST", projectPath(p, "/status")},
		{"POST", projectPath(p, "/import")},
	}
	all := append([]route{{"GET", projectPath(p, "")}}, manage...)
	form := url.Values{"name": {"Hijacked"}, "overlap": {"1"}, "lease": {"1"}, "email": {"out@example.org"}, "role": {"lead"}, "status": {"archived"}}
	send := func(c *client, rt route) response {
		if rt.method == "GET" {
			return c.get(rt.path)
		}
		if strings.HasSuffix(rt.path, "/import") {
			return c.upload(rt.path, nil, "data.jsonl", goodJSONL)
		}
		return c.post(rt.path, form)
	}

	// Someone who is not on the project learns nothing: 404 everywhere,
	// whatever their global role.
	for _, u := range []*attune.User{outsider, otherLead} {
		c := a.client()
		c.mustSignIn(u)
		for _, rt := range all {
			if r := send(c, rt); r.StatusCode != http.StatusNotFound {
				t.Errorf("%s: %s %s: status %d, want 404", u.Email, rt.method, rt.path, r.StatusCode)
			}
		}
		wantLacks(t, c.get("/"), "Pilot")
	}

	// A member annotator sees the reduced page and is refused management.
	c := a.client()
	c.mustSignIn(inside)
	page := c.get(projectPath(p, ""))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="own-progress"`, `data-testid="start-labelling"`, projectPath(p, "/annotate"), "<em>carefully</em>")
	wantLacks(t, page, `data-testid="members"`, `data-testid="import-form"`, `data-testid="status-actions"`, `data-testid="edit-project"`, "lee@example.org")
	for _, rt := range manage {
		if r := send(c, rt); r.StatusCode != http.StatusForbidden {
			t.Errorf("member annotator: %s %s: status %d, want 403", rt.method, rt.path, r.StatusCode)
		}
	}

	// Nothing those requests tried happened.
	got, err := a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Pilot" || got.Status != attune.ProjectActive || a.items(p) != 0 {
		t.Fatalf("project changed by people without access: %+v, %d items", got, a.items(p))
	}
	if _, err := a.db.ProjectRole(ctx, p.ID, outsider); err == nil {
		t.Fatal("an outsider was added")
	}

	// Signed out: pages go to sign-in, posts are refused.
	anon := a.client()
	for _, path := range []string{projectPath(p, ""), projectPath(p, "/edit"), "/projects/new", "/account"} {
		r := anon.get(path)
		wantStatus(t, r, http.StatusSeeOther)
		if want := "/login?next=" + url.QueryEscape(path); r.Header.Get("Location") != want {
			t.Errorf("GET %s signed out: redirect to %q, want %q", path, r.Header.Get("Location"), want)
		}
	}
	wantStatus(t, anon.post(projectPath(p, "/status"), url.Values{"status": {"paused"}}), http.StatusUnauthorized)

	// A lead of the project: a cross-site post is refused, the same post
	// from attune's own page goes through.
	l := a.client()
	l.mustSignIn(lead)
	wantStatus(t, l.postWith(projectPath(p, "/status"), url.Values{"status": {"paused"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	wantStatus(t, l.postWith(projectPath(p, "/members"), url.Values{"email": {"out@example.org"}, "role": {"lead"}}, map[string]string{"Origin": "https://evil.example"}), http.StatusForbidden)
	got, err = a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != attune.ProjectActive {
		t.Fatal("a cross-site post paused the project")
	}
	wantStatus(t, l.post(projectPath(p, "/status"), url.Values{"status": {"paused"}}), http.StatusSeeOther)
	wantStatus(t, l.get("/projects/999999"), http.StatusNotFound)
	wantStatus(t, l.get("/projects/abc"), http.StatusNotFound)

	// An admin manages every project without being a member.
	ad := a.client()
	ad.mustSignIn(a.user("root@example.org", attune.RoleAdmin))
	wantContains(t, ad.get(projectPath(p, "")), `data-testid="members"`, `data-testid="import-form"`)
}

func TestProjectMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	gone := a.user("gone@example.org", attune.RoleAnnotator)
	if err := a.db.SetUserDisabled(ctx, nil, gone.ID, true); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	c.mustSignIn(lead)
	members := projectPath(p, "/members")

	r := c.post(members, url.Values{"email": {"nobody@example.org"}, "role": {"annotator"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-email"`, "No account has the email nobody@example.org", `value="nobody@example.org"`)
	r = c.post(members, url.Values{"email": {"not an email"}, "role": {"boss"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-email"`, `data-testid="error-role"`)
	r = c.post(members, url.Values{"email": {"gone@example.org"}, "role": {"annotator"}})
	wantStatus(t, r, http.StatusConflict)
	wantContains(t, r, `data-testid="error-email"`, "is disabled")

	r = c.post(members, url.Values{"email": {" Ann@Example.org "}, "role": {"annotator"}})
	wantStatus(t, r, http.StatusSeeOther)
	page := c.get(projectPath(p, ""))
	wantContains(t, page, "ann@example.org is now an annotator", `data-testid="member-row" data-email="ann@example.org"`,
		`data-testid="annotator-row" data-email="ann@example.org"`)
	if role, err := a.db.ProjectRole(ctx, p.ID, ann); err != nil || role != attune.MemberAnnotator {
		t.Fatalf("ann's role %q, %v", role, err)
	}
	// The annotator now sees the project on their home page.
	ac := a.client()
	ac.mustSignIn(ann)
	wantContains(t, ac.get("/"), "Pilot", projectPath(p, ""))

	// The only lead cannot be removed; the annotator can.
	r = c.post(projectPath(p, fmt.Sprintf("/members/%d/remove", lead.ID)), nil)
	wantStatus(t, r, http.StatusSeeOther)
	wantContains(t, c.get(projectPath(p, "")), "only lead of this project")
	r = c.post(projectPath(p, fmt.Sprintf("/members/%d/remove", ann.ID)), nil)
	wantStatus(t, r, http.StatusSeeOther)
	page = c.get(projectPath(p, ""))
	wantContains(t, page, "Removed ann@example.org")
	wantLacks(t, page, `data-email="ann@example.org"`)
	wantStatus(t, ac.get(projectPath(p, "")), http.StatusNotFound)
	wantStatus(t, c.post(projectPath(p, fmt.Sprintf("/members/%d/remove", ann.ID)), nil), http.StatusNotFound)
}

func TestProjectStatusAndEdit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	a.project(lead, projectOpts{name: "Taken"})
	c := a.client()
	c.mustSignIn(lead)

	wantStatus(t, c.post(projectPath(p, "/status"), url.Values{"status": {"paused"}}), http.StatusSeeOther)
	page := c.get(projectPath(p, ""))
	wantContains(t, page, `data-testid="project-status">paused<`, "annotators get no new items", `data-testid="status-active"`)
	wantStatus(t, c.post(projectPath(p, "/status"), url.Values{"status": {"deleted"}}), http.StatusUnprocessableEntity)
	wantStatus(t, c.post(projectPath(p, "/status"), url.Values{"status": {"active"}}), http.StatusSeeOther)
	wantContains(t, c.get(projectPath(p, "")), `data-testid="project-status">active<`)

	edit := c.get(projectPath(p, "/edit"))
	wantStatus(t, edit, http.StatusOK)
	wantContains(t, edit, "coaching-conversation@2.0", "cannot change", `value="Pilot"`, `name="overlap" value="2"`, `name="lease" value="30"`)

	r := c.post(projectPath(p, "/edit"), url.Values{"name": {""}, "overlap": {"0"}, "lease": {"x"}, "instructions": {"Keep me"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-name"`, `data-testid="error-overlap"`, `data-testid="error-lease"`, ">Keep me</textarea>")
	r = c.post(projectPath(p, "/edit"), url.Values{"name": {"Taken"}, "overlap": {"3"}, "lease": {"10"}})
	wantStatus(t, r, http.StatusConflict)
	wantContains(t, r, `data-testid="error-name"`, "already exists")

	r = c.post(projectPath(p, "/edit"), url.Values{"name": {"Pilot two"}, "overlap": {"3"}, "lease": {"10"}, "instructions": {"## Be brief"}})
	wantStatus(t, r, http.StatusSeeOther)
	got, err := a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Pilot two" || got.Overlap != 3 || got.Lease != 10*time.Minute || got.Instructions != "## Be brief" || got.RubricRef != p.RubricRef {
		t.Fatalf("after edit: %+v", got)
	}
	wantContains(t, c.get(projectPath(p, "")), "Saved the project settings", "Pilot two", "<h2>Be brief</h2>", "10 min")
}

func TestProjectImport(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	imp := projectPath(p, "/import")

	r := c.upload(imp, nil, "pilot.jsonl", goodJSONL)
	wantStatus(t, r, http.StatusSeeOther)
	page := c.get(projectPath(p, ""))
	wantContains(t, page, "Imported 2 new items (0 updated, 0 unchanged) from pilot.jsonl.", `data-testid="progress-items">2<`, `data-testid="progress-complete">0<`)
	if n := a.items(p); n != 2 {
		t.Fatalf("%d items after import, want 2", n)
	}

	// The same file again changes nothing.
	wantStatus(t, c.upload(imp, nil, "pilot.jsonl", goodJSONL), http.StatusSeeOther)
	wantContains(t, c.get(projectPath(p, "")), "Imported 0 new items (0 updated, 2 unchanged) from pilot.jsonl.")

	// A changed item is refused without the update box, replaced with it.
	changed := strings.Replace(goodJSONL, "I feel alone", "I feel very alone", 1)
	r = c.upload(imp, nil, "pilot-v2.jsonl", changed)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="import-errors"`, "Line 1", "already exists")
	r = c.upload(imp, []formPart{{"update", "on"}}, "pilot-v2.jsonl", changed)
	wantStatus(t, r, http.StatusSeeOther)
	wantContains(t, c.get(projectPath(p, "")), "Imported 0 new items (1 updated, 1 unchanged)")

	// No file chosen.
	r = c.upload(imp, []formPart{{"update", "on"}}, "", "")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="import-errors"`, "Choose a file to import.", `id="import-update" name="update" value="on" checked`)
}

func TestProjectImportRefusesBadFile(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)

	bad := goodJSONL + `{"id":"a3","messages":[{"role":"user","content":"hello"}]}` + "\n"
	r := c.upload(projectPath(p, "/import"), nil, "broken.jsonl", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="import-errors"`, "broken.jsonl was not imported", "Nothing from it was stored", "<strong>Line 3</strong>")
	if n := a.items(p); n != 0 {
		t.Fatalf("%d items stored from a refused file, want 0", n)
	}
	// The page itself still renders: no items, the form ready again.
	wantContains(t, r, `data-testid="no-items"`, `data-testid="import-form"`)

	// Many bad lines: some listed, the rest counted.
	var many strings.Builder
	for i := range 60 {
		fmt.Fprintf(&many, `{"id":"b%d","messages":[]}`+"\n", i)
	}
	r = c.upload(projectPath(p, "/import"), nil, "many.jsonl", many.String())
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !regexp.MustCompile(`… and \d+ more`).MatchString(r.body) {
		t.Fatalf("no count of unlisted problems: %.2000s", r.body)
	}
	if n := a.items(p); n != 0 {
		t.Fatalf("%d items stored from a refused file, want 0", n)
	}
}

var dangerousURL = regexp.MustCompile(`(?i)(href|src|action)\s*=\s*["']?\s*(javascript|vbscript|data):`)

func TestInstructionsMarkdownIsSafe(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	evil := "# Guide\n\nRead **each** turn.\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n" +
		"[plain](javascript:alert(3)) [upper](JavaScript:alert(4)) [encoded](java&#115;cript:alert(5)) <javascript:alert(6)>\n\n" +
		"[ok](https://example.org/guide)\n"
	p := a.project(lead, projectOpts{instructions: evil})
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	a.member(p, ann, attune.MemberAnnotator)

	for _, u := range []*attune.User{lead, ann} {
		c := a.client()
		c.mustSignIn(u)
		page := c.get(projectPath(p, ""))
		wantStatus(t, page, http.StatusOK)
		wantContains(t, page, `data-testid="instructions"`, "<h1>Guide</h1>", "<strong>each</strong>", `href="https://example.org/guide"`)
		low := strings.ToLower(page.body)
		for _, bad := range []string{"<script>alert", "onerror", "<img"} {
			if strings.Contains(low, bad) {
				t.Errorf("%s's page contains %q", u.Role, bad)
			}
		}
		// A javascript: URL may survive only as visible text (the autolink's
		// label), never as a link target.
		if m := dangerousURL.FindString(page.body); m != "" {
			t.Errorf("%s's page links %q", u.Role, m)
		}
		if n := strings.Count(low, "javascript:"); n != 1 || !strings.Contains(page.body, `<a href="">javascript:alert(6)</a>`) {
			t.Errorf("%s's page has javascript: %d times outside the one escaped link label", u.Role, n)
		}
	}
}

func TestProjectPageShowsProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{overlap: 2})
	c := a.client()
	c.mustSignIn(lead)
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "pilot.jsonl", goodJSONL), http.StatusSeeOther)

	// Two annotators each label one item; the store hands the second the
	// item the first labelled, since it is nearest completion.
	answers := map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
		"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}
	var anns []*attune.User
	for _, email := range []string{"ann@example.org", "bo@example.org"} {
		u := a.user(email, attune.RoleAnnotator)
		a.member(p, u, attune.MemberAnnotator)
		as, err := a.db.NextAssignment(ctx, p.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.db.SubmitLabels(ctx, store.Submission{AssignmentID: as.ID, UserID: u.ID, Answers: answers, ActiveMS: 42_000}); err != nil {
			t.Fatal(err)
		}
		anns = append(anns, u)
	}

	page := c.get(projectPath(p, ""))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page,
		`data-testid="progress-items">2<`, `data-testid="progress-complete">1<`, `data-testid="progress-last-hour">2<`,
		`<progress class="overall" max="2" value="1"`, `data-testid="by-labels"`,
		`data-testid="annotator-row" data-email="ann@example.org"`, `data-testid="annotator-row" data-email="bo@example.org"`,
		"42 s")
	if n := strings.Count(page.body, `data-testid="by-labels-row"`); n != 3 {
		t.Fatalf("%d rows in the labels chart, want 3 (0, 1 and 2 labels)", n)
	}
	if n := strings.Count(page.body, `data-testid="annotator-submitted">1<`); n != 2 {
		t.Fatalf("%d annotators with 1 submitted, want 2", n)
	}

	// An annotator sees their own numbers and no one else's.
	ac := a.client()
	ac.mustSignIn(anns[0])
	own := ac.get(projectPath(p, ""))
	wantContains(t, own, "You have labelled <strong>1</strong> item")
	wantLacks(t, own, "bo@example.org", `data-testid="progress"`)

	wantContains(t, c.get("/"), "1/2 items complete")
}

// TestBrowserProjectImport imports through the real form in Chromium: the
// browser builds the multipart body (the update box before the file, as the
// streaming handler needs) and the page works under the CSP.
func TestBrowserProjectImport(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{instructions: "Read the **whole** conversation before answering."})
	a.member(p, a.user("ann@example.org", attune.RoleAnnotator), attune.MemberAnnotator)
	if err := a.db.AddMember(context.Background(), nil, p.ID, a.user("bo@example.org", attune.RoleAnnotator).ID, attune.MemberAnnotator); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pilot.jsonl")
	if err := os.WriteFile(file, []byte(goodJSONL), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "pilot.jsonl")
	if err := os.WriteFile(changed, []byte(strings.Replace(goodJSONL, "I feel alone", "I feel so alone", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := signInBrowser(t, a, "lee@example.org", projectPath(p, ""))
	err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=import-form]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#import-file`), []string{file}),
		chromedp.Click(chromedp.CSS(`[data-testid=import-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=progress-items]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=flash]`)))
	if err != nil || !strings.Contains(flash, "Imported 2 new items") {
		t.Fatalf("flash after import = %q, %v", flash, err)
	}
	// The changed file goes through only with the box ticked, which the
	// browser sends before the file.
	err = chromedp.Do(ctx,
		// A fresh page has no flash, so the wait below sees the next one.
		chromedp.Navigate(a.srv.URL+projectPath(p, "")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=import-form]`)),
		chromedp.Click(chromedp.CSS(`#import-update`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#import-file`), []string{changed}),
		chromedp.Click(chromedp.CSS(`[data-testid=import-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	flash, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=flash]`)))
	if err != nil || !strings.Contains(flash, "1 updated") {
		t.Fatalf("flash after update import = %q, %v", flash, err)
	}
	// The stylesheet applies under the CSP: the chart's bars are drawn.
	fill, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('td.bar svg .track')).fill`))
	if err != nil || fill == "" || fill == "rgb(0, 0, 0)" {
		t.Fatalf("chart track fill = %q, %v: the stylesheet did not apply", fill, err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "project-lead")
}

// The alt-test's ε is a project setting chosen by who the annotators are:
// the forms store it, the project page shows it and the report starts
// from it, while the report's query may still ask for another.
func TestProjectEpsilonSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	c := a.client()
	c.mustSignIn(lead)
	wantContains(t, c.get("/projects/new"), `<option value="trained" selected>trained annotators (ε 0.15)</option>`, `<option value="custom">`)

	r := c.post("/projects", url.Values{"name": {"Experts"}, "rubric": {strconv.FormatInt(a.rubricID("coaching-conversation@2.0"), 10)},
		"overlap": {"2"}, "lease": {"30"}, "annotators": {"experts"}, "epsilon": {"0.9"}})
	wantStatus(t, r, http.StatusSeeOther)
	p, err := a.db.FindProjectByName(ctx, "Experts")
	if err != nil || p.Epsilon != 0.2 {
		t.Fatalf("created: %+v, %v", p, err)
	}
	wantContains(t, c.get(projectPath(p, "")), `data-testid="project-epsilon">0.2 (experts)<`)
	wantContains(t, c.get(projectPath(p, "/edit")), `<option value="experts" selected>`, `name="epsilon" value="0.2"`)

	for _, bad := range []url.Values{{"annotators": {"custom"}, "epsilon": {"1"}}, {"annotators": {"custom"}, "epsilon": {"x"}}, {"annotators": {"students"}}} {
		form := url.Values{"name": {"Experts"}, "overlap": {"2"}, "lease": {"30"}}
		maps.Copy(form, bad)
		r = c.post(projectPath(p, "/edit"), form)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, `data-testid="error-epsilon"`, "custom ε as a number between 0 and 1")
	}
	r = c.post(projectPath(p, "/edit"), url.Values{"name": {"Experts"}, "overlap": {"2"}, "lease": {"30"}, "annotators": {"custom"}, "epsilon": {"0.3"}})
	wantStatus(t, r, http.StatusSeeOther)
	if got, err := a.db.FindProjectByID(ctx, p.ID); err != nil || got.Epsilon != 0.3 {
		t.Fatalf("after edit: %+v, %v", got, err)
	}
	wantContains(t, c.get(projectPath(p, "/edit")), `<option value="custom" selected>`, `name="epsilon" value="0.3"`)

	// The report starts from the project's ε; the query overrides it.
	wantContains(t, c.get(projectPath(p, "/report")), `<option value="0.3" selected>ε 0.3, the project&#39;s</option>`)
	r = c.get(projectPath(p, "/report?epsilon=0.1"))
	wantContains(t, r, `<option value="0.1" selected>a crowd (ε 0.1)</option>`, `<option value="0.3">ε 0.3, the project&#39;s</option>`)
	wantLacks(t, c.get(projectPath(p, "")), "an unusual ε")

	// A saved custom ε outside the usual 0.05 to 0.3 is the lead's own
	// setting: kept, and marked unusual wherever it is shown, as an ε
	// asked for with alt_unusual_epsilon=1 is; the same ε in the URL of
	// another project needs that ask.
	r = c.post(projectPath(p, "/edit"), url.Values{"name": {"Experts"}, "overlap": {"2"}, "lease": {"30"}, "annotators": {"custom"}, "epsilon": {"0.5"}})
	wantStatus(t, r, http.StatusSeeOther)
	wantContains(t, c.get(projectPath(p, "")), `data-testid="project-epsilon">0.5 (custom), an unusual ε (the usual are 0.05 to 0.3)<`)
	r = c.get(projectPath(p, "/report"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `<option value="0.5" selected>ε 0.5, the project&#39;s</option>`)
	other := a.project(lead, projectOpts{name: "Other"})
	r = c.get(projectPath(other, "/report?epsilon=0.5"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "outside the usual 0.05 to 0.3", "alt_unusual_epsilon=1")
	wantStatus(t, c.get(projectPath(other, "/report?epsilon=0.5&alt_unusual_epsilon=1")), http.StatusOK)
}
