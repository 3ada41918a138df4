package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
)

// failingLabelling is a project of two annotators that asks for two
// practice items passed, of the two in its calibration set; the first
// annotator has failed both.
func failingLabelling(t *testing.T) *labelling {
	t.Helper()
	var items strings.Builder
	for i := range 4 {
		fmt.Fprintf(&items, `{"id":"c%d","messages":[{"role":"user","content":"I feel low, day %d."},{"role":"assistant","content":"That sounds heavy. What happened?"}]}`+"\n", i, i)
	}
	l := newLabelling(t, labellingOpts{annotators: 2, items: items.String()})
	ctx := context.Background()
	for _, source := range []string{"c0", "c1"} {
		l.goldOn(t, source, calibrationGold)
		if _, err := l.a.db.AddCalibration(ctx, &l.lead.ID, l.p.ID, source, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.a.db.SetCalibrationPolicy(ctx, &l.lead.ID, l.p.ID, calibration.Policy{Qualify: 2, PassPercent: 80}); err != nil {
		t.Fatal(err)
	}
	ann := l.a.apiFor(l.anns[0])
	far := map[string]string{"emotion": "1", "validation": "1", "helpfulness": "1", "safety": "1", "overall": "1"}
	for range 2 {
		status, next := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
		if status != http.StatusOK {
			t.Fatalf("next: %d %v", status, next)
		}
		asg := next["assignment"].(map[string]any)["id"].(float64)
		if status, resp := ann.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": far, "confirm_warnings": true}); status != http.StatusCreated {
			t.Fatalf("submit: %d %v", status, resp)
		}
	}
	return l
}

// requalifyAudits returns the actor of each member.requalify entry of the
// project, oldest first.
func requalifyAudits(t *testing.T, l *labelling) []int64 {
	t.Helper()
	rows, err := l.a.db.Pool().Query(context.Background(), `SELECT actor_id FROM audit_events WHERE action = 'member.requalify' AND project_id = $1 ORDER BY id`, l.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var actor *int64
		if err := rows.Scan(&actor); err != nil {
			t.Fatal(err)
		}
		if actor == nil {
			out = append(out, 0)
		} else {
			out = append(out, *actor)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPeoplePageAndRequalify(t *testing.T) {
	t.Parallel()
	l := failingLabelling(t)
	failed := l.anns[0]
	lead := l.signedIn(l.lead)

	// The person who failed is told so plainly, not that nothing is left.
	annotator := l.signedIn(failed)
	start := annotator.get(fmt.Sprintf("/projects/%d/annotate", l.p.ID))
	wantStatus(t, start, http.StatusOK)
	wantContains(t, start, "You did not qualify on this project&#39;s practice items; a lead can let you try again.")

	// The project page and the calibration page lead to the people page.
	wantContains(t, lead.get(projectPath(l.p, "")), `data-testid="link-people"`, projectPath(l.p, "/people"))
	wantContains(t, lead.get(projectPath(l.p, "/calibration")), `data-testid="link-people"`, projectPath(l.p, "/people"))

	page := lead.get(projectPath(l.p, "/people"))
	wantStatus(t, page, http.StatusOK)
	wantContains(t, page, `data-testid="people"`,
		fmt.Sprintf(`data-email="%s" data-qualification="failed"`, failed.Email),
		fmt.Sprintf(`data-email="%s" data-qualification="in progress"`, l.anns[1].Email),
		"0 of 2 passed, 2 answered")
	if strings.Contains(page.body, fmt.Sprintf(`data-email="%s"`, l.lead.Email)) {
		t.Error("the lead is listed among the annotators")
	}

	// Neither an annotator nor the lead of another project may see the
	// page or re-qualify anyone.
	other := l.a.user("other-lead@example.org", attune.RoleLead)
	l.a.project(other, projectOpts{name: "Elsewhere"})
	stranger := l.signedIn(other)
	requalify := projectPath(l.p, fmt.Sprintf("/members/%d/requalify", failed.ID))
	for who, c := range map[string]*client{"annotator": annotator, "other project's lead": stranger} {
		if r := c.get(projectPath(l.p, "/people")); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
			t.Errorf("%s opens the people page: %d", who, r.StatusCode)
		}
		if r := c.post(requalify, url.Values{"attempt": {"1"}}); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
			t.Errorf("%s re-qualifies: %d", who, r.StatusCode)
		}
	}
	if got := requalifyAudits(t, l); len(got) != 0 {
		t.Fatalf("refused requests audited: %v", got)
	}

	// The lead re-qualifies: a new attempt, told on the page, audited
	// with the lead as actor.
	r := lead.post(requalify, url.Values{"attempt": {"1"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != projectPath(l.p, "/people") {
		t.Fatalf("redirect to %q", loc)
	}
	page = lead.get(projectPath(l.p, "/people"))
	wantContains(t, page, "attempt 2 has begun", fmt.Sprintf(`data-email="%s" data-qualification="in progress"`, failed.Email))
	if got := requalifyAudits(t, l); len(got) != 1 || got[0] != l.lead.ID {
		t.Fatalf("audit actors %v, want the lead's id %d", got, l.lead.ID)
	}
	// The same form sent again is stale: refused, said, nothing changed.
	wantStatus(t, lead.post(requalify, url.Values{"attempt": {"1"}}), http.StatusSeeOther)
	wantContains(t, lead.get(projectPath(l.p, "/people")), "Nobody was re-qualified: this person is on attempt 2, not 1")
	wantStatus(t, lead.post(requalify, url.Values{"attempt": {"two"}}), http.StatusSeeOther)
	wantContains(t, lead.get(projectPath(l.p, "/people")), "did not say which attempt")
	wantStatus(t, lead.post(projectPath(l.p, fmt.Sprintf("/members/%d/requalify", l.lead.ID)), url.Values{"attempt": {"1"}}), http.StatusSeeOther)
	wantContains(t, lead.get(projectPath(l.p, "/people")), "only annotators qualify")
	if r := lead.post(projectPath(l.p, fmt.Sprintf("/members/%d/requalify", other.ID)), url.Values{"attempt": {"1"}}); r.StatusCode != http.StatusNotFound {
		t.Errorf("re-qualifying a non-member: %d, want 404", r.StatusCode)
	}
	if got := requalifyAudits(t, l); len(got) != 1 {
		t.Fatalf("refusals audited: %v", got)
	}

	// And the person is served the practice items again.
	status, next := l.a.apiFor(failed).call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next after re-qualifying: %d %v", status, next)
	}
}

func TestPeopleAPIRequalify(t *testing.T) {
	t.Parallel()
	l := failingLabelling(t)
	failed := l.anns[0]
	lead := l.a.apiFor(l.lead)
	people := fmt.Sprintf("/api/v1/projects/%d/people", l.p.ID)
	requalify := fmt.Sprintf("/api/v1/projects/%d/members/%d/requalify", l.p.ID, failed.ID)

	status, body := lead.call("GET", people, nil)
	list, _ := body["people"].([]any)
	if status != http.StatusOK || len(list) != 2 {
		t.Fatalf("people: %d %v", status, body)
	}
	first := list[0].(map[string]any)
	if first["email"] != failed.Email || first["qualification"] != "failed" || first["attempt"] != 1.0 || first["answered"] != 2.0 || first["passed"] != 0.0 {
		t.Fatalf("failed person: %v", first)
	}
	status, refusal := l.a.apiFor(failed).call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status != http.StatusConflict || !strings.Contains(fmt.Sprint(refusal), calibration.NotQualified) {
		t.Fatalf("next after failing: %d %v", status, refusal)
	}

	// Refused: an annotator, the lead of another project, a missing or
	// stale attempt, a lead as the person.
	other := l.a.user("other-lead@example.org", attune.RoleLead)
	l.a.project(other, projectOpts{name: "Elsewhere"})
	for who, c := range map[string]*apiClient{"annotator": l.a.apiFor(l.anns[1]), "other project's lead": l.a.apiFor(other)} {
		if status, _ := c.call("GET", people, nil); status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("%s lists people: %d", who, status)
		}
		if status, _ := c.call("POST", requalify, map[string]any{"attempt": 1}); status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("%s re-qualifies: %d", who, status)
		}
	}
	for _, tt := range []struct {
		path   string
		body   map[string]any
		status int
		says   string
	}{
		{requalify, map[string]any{}, http.StatusUnprocessableEntity, "attempt"},
		{requalify, map[string]any{"attempt": 0}, http.StatusUnprocessableEntity, "counted from 1"},
		{requalify, map[string]any{"attempt": 2}, http.StatusConflict, "on attempt 1, not 2"},
		{requalify, map[string]any{"attempt": "1"}, http.StatusUnprocessableEntity, "body"},
		{fmt.Sprintf("/api/v1/projects/%d/members/%d/requalify", l.p.ID, l.lead.ID), map[string]any{"attempt": 1}, http.StatusUnprocessableEntity, "only annotators qualify"},
		{fmt.Sprintf("/api/v1/projects/%d/members/%d/requalify", l.p.ID, other.ID), map[string]any{"attempt": 1}, http.StatusNotFound, "not a member"},
	} {
		if status, body := lead.call("POST", tt.path, tt.body); status != tt.status || !strings.Contains(fmt.Sprint(body), tt.says) {
			t.Errorf("%v: %d %v, want %d saying %q", tt.body, status, body, tt.status, tt.says)
		}
	}
	if got := requalifyAudits(t, l); len(got) != 0 {
		t.Fatalf("refusals audited: %v", got)
	}

	status, body = lead.call("POST", requalify, map[string]any{"attempt": 1})
	if status != http.StatusOK || body["attempt"] != 2.0 || body["qualification"] != "in progress" || body["answered"] != 0.0 {
		t.Fatalf("requalify: %d %v", status, body)
	}
	if status, body := lead.call("POST", requalify, map[string]any{"attempt": 1}); status != http.StatusConflict {
		t.Fatalf("the same attempt again: %d %v, want 409", status, body)
	}
	if got := requalifyAudits(t, l); len(got) != 1 || got[0] != l.lead.ID {
		t.Fatalf("audit actors %v, want the lead's id %d", got, l.lead.ID)
	}
}
