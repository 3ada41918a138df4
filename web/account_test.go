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

// TestAccountRubricExpanded: the preference "keep every criterion
// expanded" is set from the account page and from the annotate page's
// toggle, is the user's own (another annotator's page stays compact), is
// refused from another site, and returns only to a path on this site.
func TestAccountRubricExpanded(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "") + conversation("d12", 12, ""), annotators: 2})
	ann, other := l.anns[0], l.anns[1]
	stored := func(u *attune.User) bool {
		t.Helper()
		var on bool
		if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT rubric_expanded FROM users WHERE id = $1`, u.ID).Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}
	c := l.signedIn(ann)
	page := c.get("/account")
	wantContains(t, page, `data-testid="rubric-pref"`, `id="rubric-compact" name="expanded" value="0" checked`)
	path, item := l.start(c)
	wantContains(t, item, `class="pane rubric-pane"`, `data-testid="rubric-toggle"`, `name="expanded" value="1"`)

	// Another site's form is refused, and changes nothing.
	wantStatus(t, c.postWith("/account/rubric", url.Values{"expanded": {"1"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden)
	if stored(ann) {
		t.Fatal("a cross-site post set the preference")
	}

	// From the account page: back to it, with the choice shown.
	r := c.post("/account/rubric", url.Values{"expanded": {"1"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/account" {
		t.Fatalf("the account form went on to %q", loc)
	}
	if !stored(ann) || stored(other) {
		t.Fatalf("after ann's choice: ann %v, other %v; want true, false", stored(ann), stored(other))
	}
	wantContains(t, c.get("/account"), `id="rubric-expanded" name="expanded" value="1" checked`)
	item = c.get(path)
	wantContains(t, item, `class="pane rubric-pane expanded"`, `name="expanded" value="0"`)
	// The other annotator's rubric stays compact.
	oc := l.signedIn(other)
	_, otherItem := l.start(oc)
	if strings.Contains(otherItem.body, "rubric-pane expanded") {
		t.Fatal("ann's preference expanded the other annotator's rubric")
	}

	// From the annotate page's toggle: back to the item; an address off
	// the site is not followed.
	for _, tc := range []struct{ back, want string }{
		{path, path},
		{"//evil.example/x", "/"},
		{"https://evil.example/", "/"},
	} {
		r := c.post("/account/rubric", url.Values{"expanded": {"0"}, "back": {tc.back}})
		wantStatus(t, r, http.StatusSeeOther)
		if loc := r.Header.Get("Location"); loc != tc.want {
			t.Fatalf("back %q went to %q, want %q", tc.back, loc, tc.want)
		}
	}
	if stored(ann) {
		t.Fatal("the toggle did not turn the preference off")
	}
	// Signed out, nothing is stored.
	wantStatus(t, l.a.client().post("/account/rubric", url.Values{"expanded": {"1"}}), http.StatusUnauthorized)
}
