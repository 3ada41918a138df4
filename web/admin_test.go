package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/password"
)

func TestAdminManagesUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	c := a.client()
	c.mustSignIn(admin)

	page := c.get("/admin/users")
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="users"`, "admin@example.org", `data-testid="add-user"`)

	// Bad input re-renders the form with a message per field and stores nothing.
	r := c.post("/admin/users", url.Values{"email": {"not-an-email"}, "name": {"Kim"}, "role": {"boss"}, "password": {"short"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-email"`, `data-testid="error-role"`, `data-testid="error-password"`, `value="Kim"`)
	users, err := a.db.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 {
		t.Fatalf("%d users after a rejected form, want 1", len(users))
	}

	r = c.post("/admin/users", url.Values{"email": {"Kim@Example.org"}, "name": {"Kim"}, "role": {"lead"}, "password": {"kims-long-password"}})
	wantStatus(t, r, http.StatusSeeOther)
	wantContains(t, c.get("/admin/users"), "Added kim@example.org as lead.")
	kim, err := a.db.FindUserByEmail(ctx, "kim@example.org")
	if err != nil || kim.Role != attune.RoleLead {
		t.Fatalf("kim = %+v, %v", kim, err)
	}
	if ok, _ := password.Verify(kim.PasswordHash, "kims-long-password"); !ok {
		t.Fatal("stored hash does not verify the password typed")
	}
	// The new account can sign in.
	k := a.client()
	wantStatus(t, k.signIn("kim@example.org", "kims-long-password"), http.StatusSeeOther)

	r = c.post("/admin/users", url.Values{"email": {"kim@example.org"}, "role": {"lead"}, "password": {"another-long-one"}})
	wantStatus(t, r, http.StatusConflict)
	wantContains(t, r, "already exists")

	wantStatus(t, c.post(fmt.Sprintf("/admin/users/%d/role", kim.ID), url.Values{"role": {"annotator"}}), http.StatusSeeOther)
	kim, err = a.db.FindUserByID(ctx, kim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kim.Role != attune.RoleAnnotator {
		t.Fatalf("role after change = %s", kim.Role)
	}

	wantStatus(t, c.post(fmt.Sprintf("/admin/users/%d/disable", kim.ID), nil), http.StatusSeeOther)
	wantStatus(t, k.get("/"), http.StatusSeeOther) // kim's session ends
	wantStatus(t, c.post(fmt.Sprintf("/admin/users/%d/enable", kim.ID), nil), http.StatusSeeOther)
	kim, err = a.db.FindUserByID(ctx, kim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kim.Disabled() {
		t.Fatal("still disabled after enable")
	}

	// The last admin cannot lock everyone out.
	wantStatus(t, c.post(fmt.Sprintf("/admin/users/%d/disable", admin.ID), nil), http.StatusSeeOther)
	wantContains(t, c.get("/admin/users"), "last enabled admin")
	me, err := a.db.FindUserByID(ctx, admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	if me.Disabled() {
		t.Fatal("the last admin disabled themselves")
	}
	wantStatus(t, c.post("/admin/users/999999/role", url.Values{"role": {"lead"}}), http.StatusNotFound)
	wantStatus(t, c.post("/admin/users/abc/role", url.Values{"role": {"lead"}}), http.StatusNotFound)
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := a.client()
	wantStatus(t, c.get("/healthz"), http.StatusOK)
	r := c.get("/readyz")
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "ready")
	// A schema this binary does not know makes the replica unready.
	if _, err := a.db.Pool().Exec(context.Background(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)`); err != nil {
		t.Fatal(err)
	}
	r = c.get("/readyz")
	wantStatus(t, r, http.StatusServiceUnavailable)
	wantContains(t, r, "99999")
}

func TestStaticFilesAreCacheBusted(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := a.client()
	page := c.get("/login")
	start := strings.Index(page.body, `/static/css/app.css?v=`)
	if start < 0 {
		t.Fatal("the page links no hashed stylesheet")
	}
	href, _, _ := strings.Cut(page.body[start:], `"`)
	r := c.get(href)
	wantStatus(t, r, http.StatusOK)
	if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
		t.Errorf("hashed URL Cache-Control = %q", cc)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/css; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	stale := c.get("/static/css/app.css?v=old")
	if cc := stale.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("stale hash Cache-Control = %q, want no-cache", cc)
	}
	wantStatus(t, c.get("/static/js/htmx.min.js"), http.StatusOK)
	wantStatus(t, c.get("/static/nope.js"), http.StatusNotFound)
	wantStatus(t, c.get("/static/css/"), http.StatusNotFound)
}

// TestFavicon: every page links the icon, and /favicon.ico, which
// browsers ask for anyway, answers with it instead of a 404.
func TestFavicon(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := a.client()
	page := c.get("/login")
	start := strings.Index(page.body, `<link rel="icon" type="image/svg+xml" href="/static/img/icon.svg?v=`)
	if start < 0 {
		t.Fatalf("the page links no icon: %.600s", page.body)
	}
	href, _, _ := strings.Cut(page.body[start+len(`<link rel="icon" type="image/svg+xml" href="`):], `"`)
	linked := c.get(href)
	wantStatus(t, linked, http.StatusOK)
	ico := c.get("/favicon.ico")
	wantStatus(t, ico, http.StatusOK)
	if ct := ico.Header.Get("Content-Type"); ct != "image/svg+xml" || ico.body != linked.body || !strings.HasPrefix(ico.body, "<svg") {
		t.Fatalf("/favicon.ico: %q, %.80s", ct, ico.body)
	}
}
