package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web"
)

func TestMain(m *testing.M) { os.Exit(contractCoverage(dbtest.Main(m))) }

// testKey is the API key the judges of the tests read from
// ATTUNE_TEST_KEY; it must never show in a page or a log.
const testKey = "sk-web-test-key-never-shown"

// The server's own secrets, as the runner's environment holds them: no
// judge may ever read them, whatever it names.
const (
	testDatabaseURL   = "postgres://attune:db-secret-never-shown@10.0.0.9/attune"
	testAdminPassword = "admin-secret-never-shown"
)

func testGetenv(k string) string {
	switch k {
	case "ATTUNE_TEST_KEY":
		return testKey
	case "DATABASE_URL":
		return testDatabaseURL
	case "ATTUNE_ADMIN_PASSWORD":
		return testAdminPassword
	}
	return ""
}

// fastParams keeps password hashing cheap in tests; production uses
// password.Default.
var fastParams = password.Params{MemoryKiB: 64, Time: 1, Threads: 1}

func testOptions() web.Options {
	return web.Options{
		SessionIdleTimeout:         time.Hour,
		SessionLifetime:            4 * time.Hour,
		SignInWindow:               15 * time.Minute,
		SignInMaxPerAccount:        5,
		SignInMaxPerAddressAccount: 5,
		SignInMaxPerAddress:        50,
		PasswordParams:             fastParams,
		JudgePolicy:                testPolicy,
	}
}

// testPolicy lets the judges of the tests read their key from
// ATTUNE_TEST_KEY (and name ATTUNE_NOT_SET, which is unset) and call the
// fake models the tests serve on this machine's loopback address, as an
// admin would allow a local model with ATTUNE_JUDGE_HOSTS=127.0.0.1.
var testPolicy = attune.JudgePolicy{
	KeyEnvs: []string{"ATTUNE_TEST_KEY", "ATTUNE_NOT_SET"},
	Hosts:   []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}},
}

type app struct {
	t   *testing.T
	db  *store.DB
	srv *httptest.Server
	web *web.Server
	log *logBuffer
}

// newApp serves the real handler over real HTTP on a fresh database.
func newApp(t *testing.T, opts ...func(*web.Options)) *app {
	t.Helper()
	db := dbtest.New(t)
	return startApp(t, db, opts...)
}

func startApp(t *testing.T, db *store.DB, opts ...func(*web.Options)) *app {
	t.Helper()
	o := testOptions()
	for _, f := range opts {
		f(&o)
	}
	logs := &logBuffer{}
	if o.Runner == nil {
		r, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: testGetenv, Policy: o.JudgePolicy, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
			Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		o.Runner = r
	}
	w := web.New(db, slog.New(slog.NewJSONHandler(logs, nil)), o)
	srv := httptest.NewServer(w)
	a := &app{t: t, db: db, srv: srv, web: w, log: logs}
	t.Cleanup(a.stop)
	return a
}

func (a *app) stop() {
	a.srv.Close()
	a.web.Close()
}

// user creates an account with the given role; its password is "pw-" + email.
func (a *app) user(email string, role attune.Role) *attune.User {
	a.t.Helper()
	hash, err := password.Hash("pw-"+email, fastParams)
	if err != nil {
		a.t.Fatal(err)
	}
	u, err := a.db.CreateUser(context.Background(), nil, store.NewUser{Email: email, Role: role, PasswordHash: hash})
	if err != nil {
		a.t.Fatal(err)
	}
	return u
}

// client is a browser-like HTTP client: a cookie jar, no redirect following
// (tests look at the redirects), and the headers a same-origin form post from
// a browser carries.
type client struct {
	t    *testing.T
	base string
	http *http.Client
}

func (a *app) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: a.t, base: a.srv.URL, http: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type response struct {
	*http.Response
	body string
}

func (c *client) do(req *http.Request) response {
	c.t.Helper()
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp, string(b)}
}

func (c *client) get(path string) response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	return c.do(req)
}

// post sends a form as a same-origin browser would.
func (c *client) post(path string, form url.Values) response {
	c.t.Helper()
	return c.postWith(path, form, map[string]string{"Origin": c.base, "Sec-Fetch-Site": "same-origin"})
}

func (c *client) postWith(path string, form url.Values, headers map[string]string) response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return c.do(req)
}

func (c *client) signIn(email, pw string) response {
	c.t.Helper()
	return c.post("/login", url.Values{"email": {email}, "password": {pw}})
}

// mustSignIn signs in as u (password "pw-" + email) and checks it worked.
func (c *client) mustSignIn(u *attune.User) {
	c.t.Helper()
	r := c.signIn(u.Email, "pw-"+u.Email)
	if r.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("sign in as %s: status %d, body %s", u.Email, r.StatusCode, r.body)
	}
}

func (c *client) sessionCookie() *http.Cookie {
	u, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "attune_session" {
			return ck
		}
	}
	return nil
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d; body: %.400s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
}

func wantContains(t *testing.T, r response, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.body, p) {
			t.Fatalf("%s %s: body lacks %q; body: %.600s", r.Request.Method, r.Request.URL.Path, p, r.body)
		}
	}
}

// logBuffer collects the server's log lines, safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
