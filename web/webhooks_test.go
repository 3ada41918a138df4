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

// TestWebhooksAPI: a lead's token manages the project's webhooks as the
// page does: the allow-list holds, the secret is sent once, and the
// deliveries are listed.
func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lead@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p := a.project(lead, projectOpts{})
	a.member(p, ann, attune.MemberAnnotator)
	c := a.apiFor(lead)
	base := "/api/v1/projects/" + strconv.FormatInt(p.ID, 10) + "/webhooks"

	for body, field := range map[string]string{
		`{"url":"http://10.0.0.1/hook","events":["gold.changed"]}`: "url",
		`{"url":"http://127.0.0.1:9/hook","events":[]}`:            "events",
		`{"url":"http://127.0.0.1:9/hook","events":["gold.lost"]}`: "events",
	} {
		if status, raw := c.call("POST", base, body); status != http.StatusUnprocessableEntity || raw["fields"] == nil || raw["fields"].(map[string]any)[field] == nil {
			t.Errorf("%s: %d %v, want 422 naming %s", body, status, raw, field)
		}
	}
	var hook struct {
		ID      int64    `json:"id"`
		URL     string   `json:"url"`
		Events  []string `json:"events"`
		Enabled bool     `json:"enabled"`
		Secret  string   `json:"secret"`
	}
	c.must(http.StatusCreated, "POST", base, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"gold.changed"}}, &hook)
	if !strings.HasPrefix(hook.Secret, "whsec_") || !hook.Enabled || len(hook.Events) != 1 {
		t.Fatalf("created %+v", hook)
	}
	listed := c.must(http.StatusOK, "GET", base, nil, nil)
	if strings.Contains(listed, hook.Secret) || !strings.Contains(listed, "http://127.0.0.1:9/hook") {
		t.Fatalf("list: %s", listed)
	}
	path := base + "/" + strconv.FormatInt(hook.ID, 10)
	var off map[string]any
	c.must(http.StatusOK, "PATCH", path, map[string]any{"enabled": false}, &off)
	if off["enabled"] != false || off["secret"] != nil {
		t.Fatalf("after turning off: %v", off)
	}
	c.must(http.StatusOK, "PATCH", path, map[string]any{"enabled": true}, nil)
	if err := a.db.Announce(ctx, p.ID, attune.EventGoldChanged, map[string]any{"items": 1}); err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Deliveries []struct {
			ID    string `json:"id"`
			Event string `json:"event"`
			State string `json:"state"`
		} `json:"deliveries"`
	}
	c.must(http.StatusOK, "GET", path+"/deliveries", nil, &ds)
	if len(ds.Deliveries) != 1 || ds.Deliveries[0].Event != "gold.changed" || ds.Deliveries[0].ID == "" {
		t.Fatalf("deliveries %+v", ds)
	}
	annAPI := a.apiFor(ann)
	if status, _ := annAPI.send("GET", base, nil, nil); status != http.StatusForbidden {
		t.Errorf("an annotator listing webhooks: %d, want 403", status)
	}
	if status, _ := annAPI.send("DELETE", path, nil, nil); status != http.StatusForbidden {
		t.Errorf("an annotator deleting a webhook: %d, want 403", status)
	}
	c.must(http.StatusNoContent, "DELETE", path, nil, nil)
	if status, _ := c.send("DELETE", path, nil, nil); status != http.StatusNotFound {
		t.Errorf("deleting twice: %d, want 404", status)
	}
	if strings.Contains(a.log.String(), hook.Secret) {
		t.Fatal("the secret is in the log")
	}
}
