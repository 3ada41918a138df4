package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

var shownTokenRE = regexp.MustCompile(`value="(att_[a-z0-9]+)"`)

// shownToken returns the token a create response shows, or "".
func shownToken(r response) string {
	m := shownTokenRE.FindStringSubmatch(r.body)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestAPITokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.client()
	c.mustSignIn(ann)

	home := c.get("/")
	wantContains(t, home, `data-testid="nav-account"`, `href="/account"`)
	page := c.get("/account")
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, "ann@example.org", `data-testid="no-tokens"`, `data-testid="create-token"`, `aria-current="page"`)

	r := c.post("/account/tokens", url.Values{"name": {"   "}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="error-name"`)

	// The token is shown once, in the response to the post itself.
	r = c.post("/account/tokens", url.Values{"name": {"nightly export"}})
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="new-token"`, "Copy it now", "nightly export")
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q on the page showing a token", cc)
	}
	token := shownToken(r)
	if token == "" {
		t.Fatalf("no token shown: %.1500s", r.body)
	}
	if u, _, err := a.db.UserByAPIToken(ctx, token); err != nil || u.ID != ann.ID {
		t.Fatalf("the shown token does not authenticate ann: %v, %v", u, err)
	}
	// It was never put in the session.
	var inSessions int
	if err := a.db.Pool().QueryRow(ctx, `SELECT count(*) FROM sessions WHERE position($1::bytea IN data) > 0`, []byte(token)).Scan(&inSessions); err != nil {
		t.Fatal(err)
	}
	if inSessions != 0 {
		t.Fatal("the token was stored in a session")
	}

	// Afterwards the page shows only its prefix.
	tokens, err := a.db.ListAPITokens(ctx, ann.ID)
	if err != nil || len(tokens) != 1 {
		t.Fatalf("tokens %v, %v", tokens, err)
	}
	page = c.get("/account")
	wantContains(t, page, `data-testid="token-row"`, tokens[0].Prefix, "nightly export")
	wantLacks(t, page, token, `data-testid="new-token"`)

	// Someone else cannot revoke it, nor can a cross-site post.
	revoke := fmt.Sprintf("/account/tokens/%d/revoke", tokens[0].ID)
	other := a.client()
	other.mustSignIn(a.user("lee@example.org", attune.RoleLead))
	wantStatus(t, other.post(revoke, nil), http.StatusNotFound)
	wantStatus(t, c.postWith(revoke, nil, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	if _, _, err := a.db.UserByAPIToken(ctx, token); err != nil {
		t.Fatalf("token stopped working before its owner revoked it: %v", err)
	}

	wantStatus(t, c.post(revoke, nil), http.StatusSeeOther)
	page = c.get("/account")
	wantContains(t, page, "Token revoked", `data-testid="token-revoked"`)
	wantLacks(t, page, `data-testid="revoke-token"`)
	if _, _, err := a.db.UserByAPIToken(ctx, token); !errors.Is(err, attune.ErrUnauthorized) {
		t.Fatalf("revoked token: %v, want unauthorized", err)
	}
	wantStatus(t, c.post("/account/tokens/999999/revoke", nil), http.StatusNotFound)
	wantStatus(t, a.client().post("/account/tokens", url.Values{"name": {"x"}}), http.StatusUnauthorized)
}

// TestReadOnlyToken: a token made read-only on the account page reads
// through the API but changes nothing, whatever the method, and the page
// says which tokens are read-only.
func TestReadOnlyToken(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	r := c.post("/account/tokens", url.Values{"name": {"dashboard"}, "read_only": {"1"}})
	wantStatus(t, r, http.StatusOK)
	token := shownToken(r)
	if token == "" {
		t.Fatalf("no token shown: %.1500s", r.body)
	}
	page := c.get("/account")
	if !regexp.MustCompile(`data-testid="token-access"[^>]*>\s*read-only`).MatchString(page.body) {
		t.Errorf("the account page does not say the token is read-only: %.3000s", page.body)
	}

	api := &apiClient{t: t, base: a.srv.URL, token: token}
	if status, _ := api.call("GET", fmt.Sprintf("/api/v1/projects/%d", p.ID), nil); status != http.StatusOK {
		t.Fatalf("reading with a read-only token: %d", status)
	}
	for _, w := range []struct{ method, path, body string }{
		{"POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), twoItems},
		{"POST", fmt.Sprintf("/api/v1/projects/%d/calibration", p.ID), `{"item":"a1"}`},
		{"POST", fmt.Sprintf("/api/v1/projects/%d/runs/estimate", p.ID), `{"judge":1}`},
		{"POST", "/api/v1/judges", `{"name":"x"}`},
	} {
		status, body := api.call(w.method, w.path, w.body)
		if status != http.StatusForbidden || !strings.Contains(fmt.Sprint(body["error"]), "read-only") {
			t.Errorf("%s %s with a read-only token: %d %v, want 403 saying the token is read-only", w.method, w.path, status, body)
		}
	}
	if n := a.items(p); n != 0 {
		t.Fatalf("a read-only token imported %d items", n)
	}
	// The same user's ordinary token still writes.
	if status, _ := a.apiFor(lead).call("POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), twoItems); status != http.StatusOK {
		t.Fatalf("import with a read-write token: %d", status)
	}
}
