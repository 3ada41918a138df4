package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/web"
)

// listener is a model endpoint on the loopback address that counts the
// connections and requests that reach it, and the bearer tokens sent.
type listener struct {
	srv             *httptest.Server
	conns, requests atomic.Int64
	tokens          chan string
}

func newListener(t *testing.T) *listener {
	t.Helper()
	l := &listener{tokens: make(chan string, 64)}
	fake := fakellm.New(fakellm.Options{})
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.requests.Add(1)
		select {
		case l.tokens <- r.Header.Get("Authorization"):
		default:
		}
		fake.ServeHTTP(w, r)
	}))
	l.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.conns.Add(1)
		}
	}
	l.srv.Start()
	t.Cleanup(l.srv.Close)
	return l
}

// insertJudge writes a judge straight into the database, as one stored
// before the policy was tightened would be: the store would refuse it.
func insertJudge(t *testing.T, a *app, name, baseURL, keyEnv string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	if err := a.db.Pool().QueryRow(ctx, `INSERT INTO judges (name, provider, base_url, model, api_key_env, settings)
		VALUES ($1, 'openai', $2, 'fake-1', $3, '{"concurrency": 2, "samples": 1}') RETURNING id`, name, baseURL, keyEnv).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.Pool().Exec(ctx, `INSERT INTO raters (kind, judge_id, name) VALUES ('judge', $1, $2)`, id, name); err != nil {
		t.Fatal(err)
	}
	return id
}

// noSecret checks that no page and no log line holds the server's
// secrets or the test key.
func noSecret(t *testing.T, a *app, pages ...response) {
	t.Helper()
	for _, s := range []string{testKey, testDatabaseURL, "db-secret-never-shown", testAdminPassword} {
		for _, p := range pages {
			if strings.Contains(p.body, s) {
				t.Fatalf("%s %s shows a secret", p.Request.Method, p.Request.URL.Path)
			}
		}
		if strings.Contains(a.log.String(), s) {
			t.Fatal("the log holds a secret")
		}
	}
}

// TestJudgeKeyOnlyFromAllowedVariables: a lead cannot make a judge read
// its key from the server's own settings, neither when saving it nor, for
// a judge stored before the rule, when it is tried: nothing is sent.
func TestJudgeKeyOnlyFromAllowedVariables(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	l := newListener(t)
	for _, env := range []string{"ATTUNE_ADMIN_PASSWORD", "DATABASE_URL", "HOME"} {
		form := j.judgeValues("Leaky " + env)
		form.Set("base_url", l.srv.URL+"/v1")
		form.Set("key_env", env)
		r := j.c.post("/judges", form)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, `data-testid="error-key_env"`, "ATTUNE_JUDGE_KEY_ENVS", env+" is not one of them")
		noSecret(t, j.a, r)
	}
	if js, err := j.a.db.ListJudges(context.Background()); err != nil || len(js) != 0 {
		t.Fatalf("judges after refused forms: %d, %v", len(js), err)
	}
	// Changing an allowed judge to read DATABASE_URL is refused too.
	jd := j.createJudge(t, j.judgeValues("Honest"))
	form := j.judgeValues("Honest")
	form.Set("key_env", "DATABASE_URL")
	r := j.c.post(fmt.Sprintf("/judges/%d/edit", jd.ID), form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-key_env"`)
	if got, _ := j.a.db.FindJudge(context.Background(), jd.ID); got.APIKeyEnv != "ATTUNE_TEST_KEY" {
		t.Fatalf("key variable now %q", got.APIKeyEnv)
	}

	// A judge that already names them is refused before any call.
	for _, env := range []string{"ATTUNE_ADMIN_PASSWORD", "DATABASE_URL"} {
		id := insertJudge(t, j.a, "Stored "+env, l.srv.URL+"/v1", env)
		r := j.c.post(fmt.Sprintf("/judges/%d/try", id), url.Values{"project": {fmt.Sprint(j.project.ID)}})
		wantStatus(t, r, http.StatusOK)
		wantContains(t, r, `data-testid="try-failed"`, env, "ATTUNE_JUDGE_KEY_ENVS")
		noSecret(t, j.a, r)
		run := j.startRun(t, id, "", "")
		done := j.work(t, run.ID)
		if done.Status != attune.RunPaused || !strings.Contains(done.Reason, "ATTUNE_JUDGE_KEY_ENVS") {
			t.Fatalf("a run of a judge reading %s: %s (%s)", env, done.Status, done.Reason)
		}
	}
	if n := l.conns.Load(); n != 0 {
		t.Fatalf("the listener saw %d connections, want none", n)
	}
	noSecret(t, j.a)
}

// TestJudgeTryLoopbackNotAllowed: where the admin allows only public
// hosts, a judge cannot point at a listener on this machine: refused when
// saved (by address or as localhost), and a judge stored before is refused
// when tried or run, before any connection is made.
func TestJudgeTryLoopbackNotAllowed(t *testing.T) {
	t.Parallel()
	policy := attune.JudgePolicy{KeyEnvs: []string{"ATTUNE_TEST_KEY"}, Hosts: []attune.HostRule{{Any: true}}}
	j := newJudgedWith(t, fakellm.Options{}, nil, func(o *web.Options) { o.JudgePolicy = policy })
	l := newListener(t)
	port := l.srv.Listener.Addr().(*net.TCPAddr).Port
	for _, base := range []string{l.srv.URL + "/v1", fmt.Sprintf("http://localhost:%d/v1", port), fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/v1", port)} {
		form := j.judgeValues("Local")
		form.Set("base_url", base)
		r := j.c.post("/judges", form)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, `data-testid="error-base_url"`, "this machine or a private network", "ATTUNE_JUDGE_HOSTS")
	}
	for i, base := range []string{l.srv.URL + "/v1", fmt.Sprintf("http://localhost:%d/v1", port)} {
		id := insertJudge(t, j.a, fmt.Sprintf("Stored %d", i), base, "ATTUNE_TEST_KEY")
		r := j.c.post(fmt.Sprintf("/judges/%d/try", id), url.Values{"project": {fmt.Sprint(j.project.ID)}})
		wantStatus(t, r, http.StatusOK)
		wantContains(t, r, `data-testid="try-failed"`, "ATTUNE_JUDGE_HOSTS")
		wantLacks(t, r, `data-testid="try-result"`)
		noSecret(t, j.a, r)
		run := j.startRun(t, id, "", "")
		if done := j.workWith(t, run.ID, policy); done.Status != attune.RunPaused || !strings.Contains(done.Reason, "ATTUNE_JUDGE_HOSTS") {
			t.Fatalf("a run of a judge at %s: %s (%s)", base, done.Status, done.Reason)
		}
	}
	if n := l.conns.Load(); n != 0 {
		t.Fatalf("the listener saw %d connections, want none", n)
	}
}

// TestJudgeOwnerKeepsItsConnection: a judge's provider, base URL and key
// variable are its owner's (or an admin's) to change; another lead may
// change the rest. Moving a judge to a new address needs its key confirmed
// for exactly that address, and the key goes nowhere before.
func TestJudgeOwnerKeepsItsConnection(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	ctx := context.Background()
	jd := j.createJudge(t, j.judgeValues("Owned"))
	if jd.CreatedBy == nil || *jd.CreatedBy != j.lead.ID {
		t.Fatalf("owner %v, want %d", jd.CreatedBy, j.lead.ID)
	}
	editURL := fmt.Sprintf("/judges/%d/edit", jd.ID)
	l := newListener(t) // the second lead's own endpoint
	second := j.a.client()
	second.mustSignIn(j.a.user("second@example.org", attune.RoleLead))

	// The pages say what is whose.
	wantContains(t, second.get("/judges"), "owned by lead@example.org")
	wantContains(t, j.c.get("/judges"), "owned by you")
	wantContains(t, second.get(editURL), `data-testid="connection-locked"`)
	wantLacks(t, j.c.get(editURL), `data-testid="connection-locked"`)
	// Another lead may rename it and change its sampling.
	form := j.judgeValues("Owned, renamed")
	form.Set("samples", "3")
	wantStatus(t, second.post(editURL, form), http.StatusSeeOther)
	// Not repoint it, nor change its key variable (even with the box
	// ticked), nor its provider.
	for field, v := range map[string]string{"base_url": l.srv.URL + "/v1", "key_env": "ATTUNE_NOT_SET", "provider": "anthropic"} {
		form := j.judgeValues("Owned, renamed")
		form.Set("samples", "3")
		form.Set(field, v)
		form.Set("confirm_key_for", form.Get("provider")+" "+form.Get("base_url"))
		r := second.post(editURL, form)
		wantStatus(t, r, http.StatusForbidden)
		wantContains(t, r, "Only the judge&#39;s owner or an admin")
	}
	got, err := j.a.db.FindJudge(ctx, jd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseURL != j.baseURL || got.APIKeyEnv != "ATTUNE_TEST_KEY" || got.Provider != "openai" || got.Name != "Owned, renamed" {
		t.Fatalf("judge after another lead's edits: %+v", got)
	}

	// The owner moving it is asked to confirm the key for the new address;
	// until then nothing changes.
	moved := j.judgeValues("Owned, renamed")
	moved.Set("base_url", l.srv.URL+"/v1")
	r := j.c.post(editURL, moved)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-key_env"`, "You changed where this judge sends its calls", `data-testid="confirm-key"`,
		`name="confirm_key_for" value="openai `+l.srv.URL+`/v1"`)
	// A box ticked for another address confirms nothing.
	moved.Set("confirm_key_for", "openai https://elsewhere.example.org/v1")
	wantStatus(t, j.c.post(editURL, moved), http.StatusUnprocessableEntity)
	if got, _ := j.a.db.FindJudge(ctx, jd.ID); got.BaseURL != j.baseURL {
		t.Fatalf("moved before the key was confirmed: %s", got.BaseURL)
	}
	// Confirming for the address in the form moves it.
	moved.Set("confirm_key_for", "openai "+l.srv.URL+"/v1")
	wantStatus(t, j.c.post(editURL, moved), http.StatusSeeOther)
	if got, _ := j.a.db.FindJudge(ctx, jd.ID); got.BaseURL != l.srv.URL+"/v1" || got.APIKeyEnv != "ATTUNE_TEST_KEY" {
		t.Fatalf("after a confirmed move: %+v", got)
	}
	// An admin may move it back; clearing the key variable needs no
	// confirmation, as no key goes anywhere.
	admin := j.a.client()
	admin.mustSignIn(j.a.user("admin@example.org", attune.RoleAdmin))
	back := j.judgeValues("Owned, renamed")
	back.Set("key_env", "")
	wantStatus(t, admin.post(editURL, back), http.StatusSeeOther)
	if n := l.requests.Load(); n != 0 {
		t.Fatalf("the new endpoint saw %d requests from edits alone", n)
	}
	j.noKey(t, r)
	noSecret(t, j.a, r)
}
