package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web"
)

func TestRoles(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	lead := a.user("lee@example.org", attune.RoleLead)

	// The authorization matrix (matrix_test.go) holds every route to its
	// rule; this checks that a refused admin form stores nothing and that
	// the navigation hides what a role cannot use.
	adminRoutes := []struct{ method, path string }{
		{"GET", "/admin/users"},
		{"POST", "/admin/users"},
		{"POST", "/admin/users/1/role"},
		{"POST", "/admin/users/1/disable"},
		{"POST", "/admin/users/1/enable"},
	}
	for _, u := range []*attune.User{ann, lead} {
		c := a.client()
		c.mustSignIn(u)
		for _, rt := range adminRoutes {
			var r response
			if rt.method == "GET" {
				r = c.get(rt.path)
			} else {
				r = c.post(rt.path, url.Values{"email": {"new@example.org"}, "role": {"admin"}, "password": {"long-enough-pw"}})
			}
			wantStatus(t, r, http.StatusForbidden)
		}
		if strings.Contains(c.get("/").body, `href="/admin/users"`) {
			t.Errorf("%s sees the Users link", u.Role)
		}
	}
	if _, err := a.db.FindUserByEmail(context.Background(), "new@example.org"); err == nil {
		t.Fatal("a non-admin created a user")
	}
}

func TestCrossSitePostRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	c := a.client()
	c.mustSignIn(admin)
	form := url.Values{"email": {"mallory@example.org"}, "role": {"admin"}, "password": {"long-enough-pw"}}
	for name, headers := range map[string]map[string]string{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site"},
		"foreign Origin":            {"Origin": "https://evil.example"},
	} {
		r := c.postWith("/admin/users", form, headers)
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, r.StatusCode)
		}
	}
	if _, err := a.db.FindUserByEmail(context.Background(), "mallory@example.org"); err == nil {
		t.Fatal("a cross-site POST created a user")
	}
	// A cross-site sign-out or sign-in is refused too (login CSRF).
	wantStatus(t, c.postWith("/logout", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	wantStatus(t, c.get("/"), http.StatusOK)
	// The same request from the app's own pages goes through.
	wantStatus(t, c.post("/admin/users", form), http.StatusSeeOther)
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, path := range []string{"/login", "/healthz", "/nowhere"} {
		r := a.client().get(path)
		h := r.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "script-src 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline code: %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, h)
		}
		if h.Get("X-Request-Id") == "" {
			t.Errorf("%s: no request id", path)
		}
	}
}

func TestUserTextIsEscaped(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	c := a.client()
	c.mustSignIn(admin)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	r := c.post("/admin/users", url.Values{"email": {"eve@example.org"}, "name": {evil}, "role": {"annotator"}, "password": {"long-enough-pw"}})
	wantStatus(t, r, http.StatusSeeOther)
	page := c.get("/admin/users")
	if strings.Contains(page.body, "<script>alert") || strings.Contains(page.body, "<img src=x") {
		t.Fatal("a user-written name reached the page unescaped")
	}
	wantContains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// TestNamesAreIsolated: a person's name is refused with a direction
// control in it, and a name in a right-to-left script — or one stored
// before names were checked — is isolated on the page, so it cannot
// reorder the words around it ("Edit", the role beside a name).
func TestNamesAreIsolated(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	c := a.client()
	c.mustSignIn(admin)
	r := c.post("/admin/users", url.Values{"email": {"rtl@example.org"}, "name": {"pilot \u202Etxt.exe"}, "role": {"annotator"}, "password": {"long-enough-pw"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "U+202E")
	if _, err := a.db.FindUserByEmail(context.Background(), "rtl@example.org"); err == nil {
		t.Fatal("a name with a direction control was stored")
	}
	wantStatus(t, c.post("/admin/users", url.Values{"email": {"rtl@example.org"}, "name": {"דנה כהן"}, "role": {"annotator"}, "password": {"long-enough-pw"}}), http.StatusSeeOther)
	wantContains(t, c.get("/admin/users"), "<td><bdi>דנה כהן</bdi></td>")

	// A project name stored before the check (written here past it).
	ctx := context.Background()
	if err := a.db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, err := rubric.ParseRef("empathetic-dialogue@2")
	if err != nil {
		t.Fatal(err)
	}
	_, rv, err := a.db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.db.CreateProject(ctx, &admin.ID, store.NewProject{Name: "pilot", RubricVersionID: rv.ID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.Pool().Exec(ctx, `UPDATE projects SET name = $2 WHERE id = $1`, p.ID, "pilot \u202Etxt.exe"); err != nil {
		t.Fatal(err)
	}
	page := c.get(fmt.Sprintf("/projects/%d", p.ID))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, "<bdi>pilot \u202Etxt.exe</bdi>")
}

// TestCrossOriginComparesScheme posts from an Origin with attune's host and
// port but another scheme: refused, with the app's own scheme taken from the
// connection or, behind a TLS proxy, from the base URL.
func TestCrossOriginComparesScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, base, own, other string
	}{
		{"plain http", "", "http", "https"},
		{"TLS ended at a proxy", "https://attune.example.org", "https", "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newApp(t, func(o *web.Options) { o.BaseURL = tc.base })
			admin := a.user("admin@example.org", attune.RoleAdmin)
			c := a.client()
			host := strings.TrimPrefix(a.srv.URL, "http://")
			own := map[string]string{"Origin": tc.own + "://" + host, "Sec-Fetch-Site": "same-origin"}
			other := map[string]string{"Origin": tc.other + "://" + host, "Sec-Fetch-Site": "same-origin"}
			signIn := url.Values{"email": {admin.Email}, "password": {"pw-" + admin.Email}}
			wantStatus(t, c.postWith("/login", signIn, other), http.StatusForbidden)
			wantStatus(t, c.postWith("/login", signIn, own), http.StatusSeeOther)
			form := url.Values{"email": {"mallory@example.org"}, "role": {"admin"}, "password": {"long-enough-pw"}}
			wantStatus(t, c.postWith("/admin/users", form, other), http.StatusForbidden)
			wantStatus(t, c.postWith("/admin/users", form, map[string]string{"Origin": tc.own + "://" + host + "0"}), http.StatusForbidden)
			if _, err := a.db.FindUserByEmail(t.Context(), "mallory@example.org"); err == nil {
				t.Fatal("a POST from another scheme created a user")
			}
			wantStatus(t, c.postWith("/admin/users", form, own), http.StatusSeeOther)
		})
	}
}
