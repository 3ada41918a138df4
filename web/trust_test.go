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

// TestTrustRoutingAccess: only the project's leads read and set a judge's
// trust routing, through the API and the page. On the failure project
// the judge recorded no certainty, so turning routing on stores the
// setting and routes nothing, saying why; terms out of range are refused
// naming the field. An annotator of the project and a lead of another
// are refused every path, and the setting stays as the lead left it.
func TestTrustRoutingAccess(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	p, lead, viewer := failuresProject(t, a)
	path := fmt.Sprintf("/api/v1/projects/%d/trust/routing", p.ID)

	status, out := lead.call("PUT", path, map[string]any{"judge": "@gpt", "on": true, "target": 0.8})
	if status != http.StatusOK {
		t.Fatalf("turn on: %d %v", status, out)
	}
	setting, _ := out["setting"].(map[string]any)
	routed, _ := out["routed"].(map[string]any)
	if setting["on"] != true || setting["target"] != 0.8 || setting["alpha"] != 0.05 || out["guaranteed"] != false ||
		routed["kept"] != 0.0 || routed["escalated"] != 0.0 || !strings.Contains(fmt.Sprint(out["reason"]), "no threshold is guaranteed") {
		t.Errorf("turned on: %v", out)
	}
	for _, c := range []struct {
		body  map[string]any
		names string
	}{
		{map[string]any{"judge": "@gpt", "on": true, "target": 1.5}, "target"},
		{map[string]any{"judge": "@gpt", "on": true, "alpha": 0}, "alpha"},
		{map[string]any{"judge": "@gpt"}, "on"},
		{map[string]any{"on": true}, "judge"},
	} {
		if status, body := lead.call("PUT", path, c.body); status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(body), c.names) {
			t.Errorf("%v: %d %v, want 422 naming %s", c.body, status, body, c.names)
		}
	}
	if status, body := lead.call("POST", path+"/route", map[string]any{"judge": "@gpt"}); status != http.StatusOK {
		t.Errorf("route again: %d %v", status, body)
	}

	ann := a.user("ann-trust@example.org", attune.RoleAnnotator)
	if err := a.db.AddMember(context.Background(), nil, p.ID, ann.ID, attune.MemberAnnotator); err != nil {
		t.Fatal(err)
	}
	outsider := a.user("lead-elsewhere-trust@example.org", attune.RoleLead)
	for _, u := range []*attune.User{ann, outsider} {
		api := a.apiFor(u)
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", path + "?judge=@gpt", nil},
			{"PUT", path, map[string]any{"judge": "@gpt", "on": false}},
			{"POST", path + "/route", map[string]any{"judge": "@gpt"}},
		} {
			if status, body := api.call(c.method, c.path, c.body); status != http.StatusForbidden && status != http.StatusNotFound {
				t.Errorf("%s %s %s: %d %v, want refused", u.Email, c.method, c.path, status, body)
			}
		}
		web := a.client()
		web.mustSignIn(u)
		if r := web.get(projectPath(p, "/trust")); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
			t.Errorf("%s opens the trust page: %d", u.Email, r.StatusCode)
		}
		if r := web.post(projectPath(p, "/trust"), url.Values{"judge": {"@gpt"}, "on": {"off"}}); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
			t.Errorf("%s posts the trust form: %d", u.Email, r.StatusCode)
		}
	}
	if status, out := lead.call("GET", path+"?judge=@gpt", nil); status != http.StatusOK || out["setting"].(map[string]any)["on"] != true {
		t.Errorf("after the refusals: %d %v", status, out)
	}

	// The page: the lead's setting, a line per rubric item, and the form.
	c := a.client()
	c.mustSignIn(viewer)
	r := c.get(projectPath(p, "/trust"))
	wantStatus(t, r, http.StatusOK)
	for _, want := range []string{`data-testid="trust-state"`, "<strong>On</strong>", `data-testid="trust-criterion-emotion"`, `data-testid="trust-unguaranteed"`, `value="0.8"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("trust page lacks %q", want)
		}
	}
	judge := strings.SplitN(strings.SplitN(r.body, `name="judge" value="`, 2)[1], `"`, 2)[0]
	r = c.post(projectPath(p, "/trust"), url.Values{"judge": {judge}, "target": {"150"}, "alpha": {"5%"}, "on": {"on"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(r.body, `data-testid="trust-error-target"`) {
		t.Errorf("a refused target is not shown by its field: %.600s", r.body)
	}
	r = c.post(projectPath(p, "/trust"), url.Values{"judge": {judge}, "target": {"90%"}, "alpha": {"10%"}, "on": {"off"}})
	wantStatus(t, r, http.StatusSeeOther)
	r = c.get(r.Header.Get("Location"))
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, "<strong>Off</strong>") || !strings.Contains(r.body, `value="0.9"`) || !strings.Contains(r.body, "Trust routing is off.") {
		t.Errorf("after turning off: %.2000s", r.body)
	}
}
