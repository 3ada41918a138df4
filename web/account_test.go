package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
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
	if u, err := a.db.UserByAPIToken(ctx, token); err != nil || u.ID != ann.ID {
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
	if _, err := a.db.UserByAPIToken(ctx, token); err != nil {
		t.Fatalf("token stopped working before its owner revoked it: %v", err)
	}

	wantStatus(t, c.post(revoke, nil), http.StatusSeeOther)
	page = c.get("/account")
	wantContains(t, page, "Token revoked", `data-testid="token-revoked"`)
	wantLacks(t, page, `data-testid="revoke-token"`)
	if _, err := a.db.UserByAPIToken(ctx, token); !errors.Is(err, attune.ErrUnauthorized) {
		t.Fatalf("revoked token: %v, want unauthorized", err)
	}
	wantStatus(t, c.post("/account/tokens/999999/revoke", nil), http.StatusNotFound)
	wantStatus(t, a.client().post("/account/tokens", url.Values{"name": {"x"}}), http.StatusUnauthorized)
}
