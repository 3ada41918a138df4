package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

var shownSecretRE = regexp.MustCompile(`data-testid="webhook-secret">(whsec_[0-9a-f]+)<`)

// TestWebhooksPage adds a webhook through the page: the secret is shown in
// the answer to the form and nowhere after (not on the page, not in the
// session, not in the log); a URL outside the host allow-list is refused;
// the webhook is turned off, on, and deleted; an annotator of the project
// is refused.
func TestWebhooksPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lead@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p := a.project(lead, projectOpts{})
	a.member(p, ann, attune.MemberAnnotator)
	c := a.client()
	c.mustSignIn(lead)
	path := "/projects/" + strconv.FormatInt(p.ID, 10) + "/webhooks"

	r := c.get(path)
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="no-webhooks"`, `data-testid="webhook-form"`, "gold.changed")

	for _, bad := range []url.Values{
		{"url": {"http://10.0.0.1/hook"}, "event": {"gold.changed"}},
		{"url": {"http://127.0.0.1:9/hook"}},
	} {
		r = c.post(path, bad)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if bad.Has("event") {
			wantContains(t, r, `data-testid="error-url"`, "ATTUNE_JUDGE_HOSTS")
		} else {
			wantContains(t, r, `data-testid="error-events"`)
		}
	}

	r = c.post(path, url.Values{"url": {"http://127.0.0.1:9/hook"}, "event": {"gold.changed", "run.paused"}})
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="webhook-created"`)
	m := shownSecretRE.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("no secret shown: %.2000s", r.body)
	}
	secret := m[1]
	hooks, err := a.db.ListWebhooks(ctx, p.ID)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("webhooks %v, %v", hooks, err)
	}
	hook := strconv.FormatInt(hooks[0].ID, 10)

	r = c.get(path)
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="webhook-`+hook+`"`, "http://127.0.0.1:9/hook", `data-testid="webhook-on"`)
	if strings.Contains(r.body, secret) || strings.Contains(r.body, `data-testid="webhook-secret"`) {
		t.Fatal("the page shows the secret again")
	}
	var inSessions int
	if err := a.db.Pool().QueryRow(ctx, `SELECT count(*) FROM sessions WHERE position($1::bytea IN data) > 0`, []byte(secret)).Scan(&inSessions); err != nil {
		t.Fatal(err)
	}
	if inSessions != 0 {
		t.Fatal("the secret is in a session")
	}

	// An annotator of the project may not see or change it.
	ac := a.client()
	ac.mustSignIn(ann)
	wantStatus(t, ac.get(path), http.StatusForbidden)
	wantStatus(t, ac.post(path+"/"+hook+"/delete", nil), http.StatusForbidden)

	wantStatus(t, c.post(path+"/"+hook+"/enabled", url.Values{"enabled": {"false"}}), http.StatusSeeOther)
	wantContains(t, c.get(path), `data-testid="webhook-off"`)
	wantStatus(t, c.post(path+"/"+hook+"/enabled", url.Values{"enabled": {"true"}}), http.StatusSeeOther)
	wantContains(t, c.get(path), `data-testid="webhook-on"`)
	wantStatus(t, c.post(path+"/"+hook+"/delete", nil), http.StatusSeeOther)
	wantContains(t, c.get(path), `data-testid="no-webhooks"`)
	if strings.Contains(a.log.String(), secret) {
		t.Fatal("the secret is in the log")
	}
}
