package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestChangeOwnPassword: every user can change their password on the
// Account page; it ends their other sessions and keeps this one.
func TestChangeOwnPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	here, elsewhere := a.client(), a.client()
	here.mustSignIn(ann)
	elsewhere.mustSignIn(ann)
	token, _, err := a.db.CreateAPIToken(ctx, nil, ann.ID, "script", false)
	if err != nil {
		t.Fatal(err)
	}
	old := "pw-" + ann.Email
	wantContains(t, here.get("/account"), `data-testid="change-password"`, `action="/account/password"`)

	for _, tc := range []struct {
		form  url.Values
		field string
	}{
		{url.Values{"current": {""}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-password"}}, "current"},
		{url.Values{"current": {old}, "new": {"short"}, "confirm": {"short"}}, "new"},
		{url.Values{"current": {old}, "new": {old}, "confirm": {old}}, "new"},
		{url.Values{"current": {old}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-passwort"}}, "confirm"},
		{url.Values{"current": {"not-my-password"}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-password"}}, "current"},
	} {
		r := here.post("/account/password", tc.form)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, `data-testid="error-`+tc.field+`"`)
		wantLacks(t, r, "a-new-long-password")
	}
	// A post from another site changes nothing.
	form := url.Values{"current": {old}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-password"}}
	wantStatus(t, here.postWith("/account/password", form, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	wantStatus(t, a.client().signIn(ann.Email, old), http.StatusSeeOther)

	before := here.sessionCookie().Value
	r := here.post("/account/password", form)
	wantStatus(t, r, http.StatusSeeOther)
	if r.Header.Get("Location") != "/account" {
		t.Fatalf("after the change, redirect to %q", r.Header.Get("Location"))
	}
	if here.sessionCookie().Value == before {
		t.Error("the session kept its token across a password change")
	}
	page := here.get("/account")
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, "Password changed", "signed out everywhere else", "API tokens still work")
	// The other session has ended; so has the old password.
	r = elsewhere.get("/")
	wantStatus(t, r, http.StatusSeeOther)
	if !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Fatalf("the other session went to %q, want the sign-in page", r.Header.Get("Location"))
	}
	wantStatus(t, a.client().signIn(ann.Email, old), http.StatusUnauthorized)
	wantStatus(t, a.client().signIn(ann.Email, "a-new-long-password"), http.StatusSeeOther)
	// Tokens keep working, as the page said.
	if u, _, err := a.db.UserByAPIToken(ctx, token); err != nil || u.ID != ann.ID {
		t.Fatalf("token after a password change: %v, %v", u, err)
	}
}

// TestChangeOwnPasswordIsRateLimited: the current password cannot be
// guessed through an open session faster than through the sign-in page.
func TestChangeOwnPasswordIsRateLimited(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)
	for i := range 5 {
		r := c.post("/account/password", url.Values{"current": {fmt.Sprintf("guess-number-%d", i)}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-password"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
	}
	r := c.post("/account/password", url.Values{"current": {"pw-" + ann.Email}, "new": {"a-new-long-password"}, "confirm": {"a-new-long-password"}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantContains(t, r, "Too many failed sign-ins")
}

// TestAdminResetsPassword: an admin's reset ends the account's sessions,
// clears its lockout, and says what it did with its API tokens.
func TestAdminResetsPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	lee := a.user("lee@example.org", attune.RoleLead)
	token, _, err := a.db.CreateAPIToken(ctx, nil, ann.ID, "script", false)
	if err != nil {
		t.Fatal(err)
	}
	annSession := a.client()
	annSession.mustSignIn(ann)
	reset := fmt.Sprintf("/admin/users/%d/password", ann.ID)
	// Only admins, and only from attune's own pages.
	for _, u := range []*attune.User{ann, lee} {
		c := a.client()
		c.mustSignIn(u)
		wantStatus(t, c.post(reset, url.Values{"password": {"a-new-long-password"}}), http.StatusForbidden)
	}
	// Locked out by someone's guesses.
	for i := range 5 {
		wantStatus(t, a.client().signIn(ann.Email, fmt.Sprintf("guess-number-%d", i)), http.StatusUnauthorized)
	}
	wantStatus(t, a.client().signIn(ann.Email, "pw-"+ann.Email), http.StatusTooManyRequests)

	c := a.client()
	c.mustSignIn(admin)
	wantContains(t, c.get("/admin/users"), `data-testid="reset-password"`, "Its API tokens keep working unless you tick the box")
	wantStatus(t, c.postWith(reset, url.Values{"password": {"a-new-long-password"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	r := c.post(reset, url.Values{"password": {"short"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-reset"`, "at least 10 characters")
	wantStatus(t, c.post("/admin/users/999999/password", url.Values{"password": {"a-new-long-password"}}), http.StatusNotFound)
	wantStatus(t, annSession.get("/"), http.StatusOK) // nothing changed yet

	wantStatus(t, c.post(reset, url.Values{"password": {"a-new-long-password"}}), http.StatusSeeOther)
	page := c.get("/admin/users")
	wantContains(t, page, "Password of ann@example.org set", "Every session of the account has ended",
		"sign-in lockout is cleared (5 failed sign-ins forgiven)", "Its API token still works")
	r = annSession.get("/")
	wantStatus(t, r, http.StatusSeeOther)
	if !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Fatalf("ann's session after the reset went to %q", r.Header.Get("Location"))
	}
	wantStatus(t, a.client().signIn(ann.Email, "a-new-long-password"), http.StatusSeeOther)
	if _, _, err := a.db.UserByAPIToken(ctx, token); err != nil {
		t.Fatalf("token kept by the reset stopped working: %v", err)
	}
	// The admin's own session was not touched.
	wantStatus(t, c.get("/admin/users"), http.StatusOK)

	// Asked to, the reset revokes the tokens too, and says so.
	wantStatus(t, c.post(reset, url.Values{"password": {"another-long-password"}, "revoke_tokens": {"1"}}), http.StatusSeeOther)
	wantContains(t, c.get("/admin/users"), "Its API token was revoked.", "it had no sign-in lockout to clear")
	if _, _, err := a.db.UserByAPIToken(ctx, token); err == nil {
		t.Fatal("token works after a reset that revoked it")
	}

	// An admin resetting their own password stays signed in.
	self := fmt.Sprintf("/admin/users/%d/password", admin.ID)
	wantStatus(t, c.post(self, url.Values{"password": {"admins-new-password"}}), http.StatusSeeOther)
	wantContains(t, c.get("/admin/users"), "Password of admin@example.org set")
}
