package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web"
)

func TestSignIn(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()

	r := c.signIn("ann@example.org", "wrong password")
	wantStatus(t, r, http.StatusUnauthorized)
	wantContains(t, r, "do not match an account", `value="ann@example.org"`)
	if c.sessionCookie() != nil {
		t.Fatal("a failed sign-in set a session cookie")
	}
	// An unknown email gets the same answer as a wrong password.
	r = c.signIn("nobody@example.org", "whatever-it-is")
	wantStatus(t, r, http.StatusUnauthorized)
	wantContains(t, r, "do not match an account")

	r = c.signIn("  ANN@example.org ", "pw-ann@example.org")
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/" {
		t.Fatalf("redirect after sign-in to %q, want /", loc)
	}
	ck := c.sessionCookie()
	if ck == nil {
		t.Fatal("no session cookie after sign-in")
	}
	raw := r.Header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(raw, attr) {
			t.Errorf("session cookie %q lacks %s", raw, attr)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("cookie over plain http is Secure: %q", raw)
	}
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	wantContains(t, home, `data-testid="whoami"`, "<bdi>ann@example.org</bdi> · annotator", `data-testid="projects-empty"`, "Ask your lead")

	// Signing out ends the session on the server, not only in the browser.
	r = c.post("/logout", nil)
	wantStatus(t, r, http.StatusSeeOther)
	reuse := a.client()
	reuse.http.Jar.SetCookies(mustURL(a.srv.URL), []*http.Cookie{{Name: "attune_session", Value: ck.Value}})
	wantStatus(t, reuse.get("/"), http.StatusSeeOther)
	_ = ann
}

// TestSignInNextStaysOnSite feeds the address to return to after sign-in
// every way browsers are known to be talked off site: a tab or line break
// they drop, a backslash they read as a slash, encoded forms of both.
func TestSignInNextStaysOnSite(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lee := a.user("lee@example.org", attune.RoleLead)
	signedIn := a.client()
	signedIn.mustSignIn(lee)
	for _, tc := range []struct {
		next, want string
	}{
		{"/admin/users", "/admin/users"},
		{"/projects/3/annotate?item=7&x=a%20b", "/projects/3/annotate?item=7&x=a%20b"},
		{"/projects/3#members", "/projects/3#members"},
		{"", "/"},
		{"//evil.example/x", "/"},
		{"https://evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example/path", "/"},
		{"/\t\\evil.example/path", "/"},
		{"/\n/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"\t//evil.example", "/"},
		{" //evil.example", "/"},
		{"/%09/evil.example/path", "/"},
		{"/%09%5Cevil.example", "/"},
		{"/%5C%5Cevil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"/%2f%2fevil.example", "/"},
		{"/%0d%0aSet-Cookie:x=y", "/"},
		{"/%zz", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/\u0085/evil.example", "/"},
		{"/a\xffb", "/"},
		{"/" + strings.Repeat("a", 3000), "/"},
	} {
		// The form's hidden field, as the sign-in page posts it.
		c := a.client()
		if attune.TextProblem(tc.next) != "" {
			// Text that cannot be stored is refused as in any field.
			r := c.post("/login", url.Values{"email": {lee.Email}, "password": {"pw-" + lee.Email}, "next": {tc.next}})
			wantStatus(t, r, http.StatusUnprocessableEntity)
			wantContains(t, r, "next")
			wantStatus(t, signedIn.get("/login?next="+url.QueryEscape(tc.next)), http.StatusUnprocessableEntity)
			continue
		}
		r := c.post("/login", url.Values{"email": {lee.Email}, "password": {"pw-" + lee.Email}, "next": {tc.next}})
		wantStatus(t, r, http.StatusSeeOther)
		if got := r.Header.Get("Location"); got != tc.want {
			t.Errorf("POST next=%q: redirect to %q, want %q", tc.next, got, tc.want)
		}
		// The sign-in page itself, opened by someone already signed in.
		r = signedIn.get("/login?next=" + url.QueryEscape(tc.next))
		wantStatus(t, r, http.StatusSeeOther)
		if got := r.Header.Get("Location"); got != tc.want {
			t.Errorf("GET next=%q: redirect to %q, want %q", tc.next, got, tc.want)
		}
	}
	// The exact addresses of the report, sent raw.
	for _, raw := range []string{"/%09/evil.example/path", "/%09%5Cevil.example/path", "%2F%2Fevil.example"} {
		r := signedIn.get("/login?next=" + raw)
		if got := r.Header.Get("Location"); got != "/" {
			t.Errorf("GET /login?next=%s: redirect to %q, want /", raw, got)
		}
	}
}

func TestSignInDisabledAccount(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)
	if err := a.db.SetUserDisabled(context.Background(), &admin.ID, ann.ID, true); err != nil {
		t.Fatal(err)
	}
	// The open session stops working at its next request.
	r := c.get("/")
	wantStatus(t, r, http.StatusSeeOther)
	if !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Fatalf("disabled user's session redirected to %q", r.Header.Get("Location"))
	}
	r = a.client().signIn(ann.Email, "pw-"+ann.Email)
	wantStatus(t, r, http.StatusForbidden)
	wantContains(t, r, "disabled")
	// Without the right password, a disabled account looks like any other miss.
	r = a.client().signIn(ann.Email, "not the password")
	wantStatus(t, r, http.StatusUnauthorized)
}

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) {
		o.SignInMaxPerAccount = 3
		o.SignInMaxPerAddressAccount = 3
		o.SignInMaxPerAddress = 6
	})
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	bob := a.user("bob@example.org", attune.RoleAnnotator)
	c := a.client()
	for range 3 {
		wantStatus(t, c.signIn(ann.Email, "guess-guess-guess"), http.StatusUnauthorized)
	}
	// Locked for this account, even with the right password, and told
	// exactly what to do.
	r := c.signIn(ann.Email, "pw-"+ann.Email)
	wantStatus(t, r, http.StatusTooManyRequests)
	wantContains(t, r, "Too many failed sign-ins to this account", "Wait 15 minutes and try again",
		"ask an admin to clear the lock", "an admin resetting your password clears it too")
	if ra := r.Header.Get("Retry-After"); ra != "900" && ra != "899" {
		t.Errorf("Retry-After %q, want the 900 s until the lock ends", ra)
	}
	// Another account from the same address still works, and goes on
	// working past the address limit.
	c.mustSignIn(bob)
	for _, email := range []string{"x1@example.org", "x2@example.org", "x3@example.org", "x4@example.org"} {
		a.client().signIn(email, "guess-guess-guess")
	}
	a.client().mustSignIn(bob)
}

func TestSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)
	ck := c.sessionCookie()
	a.stop()

	// A new server process on the same database: the session lives in
	// PostgreSQL, so the user is still signed in.
	b := startApp(t, a.db)
	c2 := b.client()
	c2.http.Jar.SetCookies(mustURL(b.srv.URL), []*http.Cookie{{Name: ck.Name, Value: ck.Value}})
	r := c2.get("/")
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "<bdi>ann@example.org</bdi> · annotator")
}

func TestSessionTokenRenewedAtSignIn(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)
	first := c.sessionCookie().Value
	c.mustSignIn(ann)
	second := c.sessionCookie().Value
	if first == second {
		t.Fatal("signing in kept the old session token")
	}
	old := a.client()
	old.http.Jar.SetCookies(mustURL(a.srv.URL), []*http.Cookie{{Name: "attune_session", Value: first}})
	wantStatus(t, old.get("/"), http.StatusSeeOther)
}

func TestSessionTimeoutsStored(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) { o.SessionIdleTimeout = 10 * time.Minute; o.SessionLifetime = time.Hour })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)
	var expiry time.Time
	if err := a.db.Pool().QueryRow(context.Background(), `SELECT expiry FROM sessions WHERE token = $1`, c.sessionCookie().Value).Scan(&expiry); err != nil {
		t.Fatal(err)
	}
	// The server-side expiry follows the idle timeout, not the lifetime.
	if d := time.Until(expiry); d > 10*time.Minute+time.Minute || d < 8*time.Minute {
		t.Fatalf("session expires in %v, want about the 10m idle timeout", d)
	}
}

func TestSecureCookieOverTLSConfig(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) { o.SecureCookies = true })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	r := a.client().signIn(ann.Email, "pw-"+ann.Email)
	if raw := r.Header.Get("Set-Cookie"); !strings.Contains(raw, "Secure") {
		t.Fatalf("cookie %q lacks Secure", raw)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// A session's row is written when its data change, or when its stored
// expiry is a minute stale, not on every request: requests that only
// read leave it as it was.
func TestSessionRowWrittenOnlyWhenItChanges(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) { o.SessionIdleTimeout = 10 * time.Minute; o.SessionLifetime = time.Hour })
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)
	version := func() (xmin string, userID int64) {
		t.Helper()
		if err := a.db.Pool().QueryRow(context.Background(), `SELECT xmin::text, user_id FROM sessions WHERE token = $1`,
			c.sessionCookie().Value).Scan(&xmin, &userID); err != nil {
			t.Fatal(err)
		}
		return xmin, userID
	}
	signedIn, userID := version()
	if userID != ann.ID {
		t.Fatalf("session stored for user %d, want %d", userID, ann.ID)
	}
	for range 3 {
		if r := c.get("/"); r.StatusCode != http.StatusOK {
			t.Fatalf("home: %d", r.StatusCode)
		}
	}
	if now, _ := version(); now != signedIn {
		t.Fatal("reading pages rewrote the session row")
	}
	// Signing out ends the session: a change, stored.
	c.post("/logout", nil)
	var n int
	if err := a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE user_id = $1`, ann.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d sessions left after signing out", n)
	}
}
