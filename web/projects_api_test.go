package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestAPIProjectsAndMembers: a lead sets a project up through the API
// alone, with the rules of the project forms: create, change settings and
// status, add, list and remove members; and the refusals say what is wrong
// and change nothing.
func TestAPIProjectsAndMembers(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if err := a.db.LoadBuiltinRubrics(t.Context()); err != nil {
		t.Fatal(err)
	}
	lead := a.user("lee@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.apiFor(lead)

	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"no rubric":      {map[string]any{"name": "X"}, "rubric"},
		"unknown rubric": {map[string]any{"name": "X", "rubric": "nope@1"}, "rubric"},
		"no name":        {map[string]any{"rubric": "coaching-conversation@2.0"}, "name"},
		"overlap 0":      {map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "overlap": 0}, "overlap"},
		"lease 90 s":     {map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "lease_seconds": 90}, "lease_seconds"},
		"huge lease":     {map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "lease_seconds": int64(1) << 60}, "lease_seconds"},
		"epsilon 1":      {map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "epsilon": 1}, "epsilon"},
		"bad pool":       {map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "annotators": "robots"}, "annotators"},
	} {
		status, raw := c.send("POST", "/api/v1/projects", tc.body, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"`+tc.field+`"`) {
			t.Errorf("%s: %d %s, want 422 naming %s", name, status, raw, tc.field)
		}
	}
	if status, _ := a.apiFor(ann).send("POST", "/api/v1/projects", map[string]any{"name": "X", "rubric": "coaching-conversation@2.0"}, nil); status != http.StatusForbidden {
		t.Errorf("an annotator account making a project: %d, want 403", status)
	}
	var n int
	if err := a.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM projects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d projects after refusals", n)
	}

	var p struct {
		ID           int64  `json:"id"`
		Name         string `json:"name"`
		Rubric       string `json:"rubric"`
		Status       string `json:"status"`
		Overlap      int    `json:"overlap"`
		Role         string `json:"role"`
		Instructions string `json:"instructions"`
		LeaseSeconds int    `json:"lease_seconds"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Pilot", "rubric": "coaching-conversation@2.0",
		"instructions": "Read the whole conversation.", "overlap": 2, "annotators": "experts"}, &p)
	if p.Name != "Pilot" || p.Rubric != "coaching-conversation@2.0" || p.Overlap != 2 || p.Role != "lead" || p.LeaseSeconds != 1800 || p.Status != "active" {
		t.Fatalf("created %+v", p)
	}
	stored, err := a.db.FindProjectByID(t.Context(), p.ID)
	if err != nil || stored.Epsilon != attune.EpsilonExperts {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if status, raw := c.send("POST", "/api/v1/projects", map[string]any{"name": "Pilot", "rubric": "coaching-conversation@2.0"}, nil); status != http.StatusConflict {
		t.Errorf("a second project named Pilot: %d %s, want 409", status, raw)
	}

	base := fmt.Sprintf("/api/v1/projects/%d", p.ID)
	c.must(http.StatusOK, "PATCH", base, map[string]any{"overlap": 3, "lease_seconds": 600, "status": "paused"}, &p)
	if p.Overlap != 3 || p.LeaseSeconds != 600 || p.Status != "paused" || p.Instructions != "Read the whole conversation." || p.Name != "Pilot" {
		t.Fatalf("after the change %+v", p)
	}
	for body, field := range map[string]string{`{"rubric":"empathetic-dialogue@2"}`: "rubric", `{"status":"gone"}`: "status", `{"name":""}`: "name"} {
		if status, raw := c.call("PATCH", base, body); status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(raw), field) {
			t.Errorf("PATCH %s: %d %v, want 422 naming %s", body, status, raw, field)
		}
	}

	// Members.
	if status, raw := c.send("POST", base+"/members", map[string]any{"email": "nobody@example.org", "role": "annotator"}, nil); status != http.StatusUnprocessableEntity || !strings.Contains(raw, "no account") {
		t.Errorf("an unknown email: %d %s", status, raw)
	}
	if status, raw := c.send("POST", base+"/members", map[string]any{"email": "ann@example.org", "role": "owner"}, nil); status != http.StatusUnprocessableEntity || !strings.Contains(raw, "role") {
		t.Errorf("a bad role: %d %s", status, raw)
	}
	var m struct {
		UserID int64  `json:"user_id"`
		Email  string `json:"email"`
		Role   string `json:"role"`
	}
	c.must(http.StatusCreated, "POST", base+"/members", map[string]any{"email": "ANN@example.org", "role": "annotator"}, &m)
	if m.UserID != ann.ID || m.Role != "annotator" {
		t.Fatalf("added %+v", m)
	}
	// Adding a member again sets their role; a lead needs an account
	// that may lead.
	c.must(http.StatusOK, "POST", base+"/members", map[string]any{"email": "ann@example.org", "role": "annotator"}, &m)
	if status, raw := c.send("POST", base+"/members", map[string]any{"email": "ann@example.org", "role": "lead"}, nil); status != http.StatusConflict {
		t.Errorf("making an annotator account a lead: %d %s, want 409", status, raw)
	}
	var list struct {
		Members []struct {
			Email string `json:"email"`
			Role  string `json:"role"`
		} `json:"members"`
	}
	c.must(http.StatusOK, "GET", base+"/members", nil, &list)
	if len(list.Members) != 2 {
		t.Fatalf("members %+v", list)
	}
	// The annotator reads the project but manages nothing of it.
	annAPI := a.apiFor(ann)
	annAPI.must(http.StatusOK, "GET", base, nil, nil)
	for _, w := range []struct{ method, path string }{{"GET", base + "/members"}, {"PATCH", base}, {"DELETE", fmt.Sprintf("%s/members/%d", base, lead.ID)}} {
		if status, _ := annAPI.send(w.method, w.path, map[string]any{}, nil); status != http.StatusForbidden {
			t.Errorf("an annotator: %s %s: %d, want 403", w.method, w.path, status)
		}
	}
	// Pausing ann's queue: told why on their next claim; resumed after.
	var paused struct {
		Paused    bool   `json:"paused"`
		PausedWhy string `json:"paused_why"`
	}
	if status, raw := c.send("PUT", fmt.Sprintf("%s/members/%d/queue", base, ann.ID), map[string]any{"paused": true, "why": strings.Repeat("x", 501)}, nil); status != http.StatusUnprocessableEntity {
		t.Errorf("an over-long reason: %d %s, want 422", status, raw)
	}
	c.must(http.StatusOK, "PUT", fmt.Sprintf("%s/members/%d/queue", base, ann.ID), map[string]any{"paused": true, "why": "please reread the rubric"}, &paused)
	if !paused.Paused || paused.PausedWhy != "please reread the rubric" {
		t.Fatalf("paused %+v", paused)
	}
	c.must(http.StatusOK, "PATCH", base, map[string]any{"status": "active"}, nil)
	if status, raw := annAPI.send("POST", base+"/next", nil, nil); status != http.StatusConflict || !strings.Contains(raw, "please reread the rubric") {
		t.Errorf("a paused annotator's next: %d %s, want 409 with the reason", status, raw)
	}
	c.must(http.StatusOK, "PUT", fmt.Sprintf("%s/members/%d/queue", base, ann.ID), map[string]any{"paused": false}, &paused)
	if paused.Paused {
		t.Fatalf("still paused %+v", paused)
	}
	if status, _ := annAPI.send("PUT", fmt.Sprintf("%s/members/%d/queue", base, ann.ID), map[string]any{"paused": false}, nil); status != http.StatusForbidden {
		t.Errorf("an annotator resuming their own queue: %d, want 403", status)
	}

	// The calibration rules: fields given change, the rest stay.
	var pol map[string]int
	c.must(http.StatusOK, "PUT", base+"/calibration/policy", map[string]any{"qualify": 3, "every": 20}, &pol)
	if pol["qualify"] != 3 || pol["every"] != 20 || pol["pass_percent"] != 80 {
		t.Fatalf("policy %v", pol)
	}
	if status, raw := c.send("PUT", base+"/calibration/policy", map[string]any{"every": 1}, nil); status != http.StatusUnprocessableEntity || !strings.Contains(raw, "every") {
		t.Errorf("every 1: %d %s, want 422 naming every", status, raw)
	}
	c.must(http.StatusOK, "PUT", base+"/calibration/policy", map[string]any{"pass_percent": 90}, &pol)
	if pol["qualify"] != 3 || pol["pass_percent"] != 90 {
		t.Fatalf("policy %v", pol)
	}

	if status, raw := c.send("DELETE", fmt.Sprintf("%s/members/%d", base, lead.ID), nil, nil); status != http.StatusConflict || !strings.Contains(raw, "lead") {
		t.Errorf("removing the only lead: %d %s, want 409", status, raw)
	}
	c.must(http.StatusNoContent, "DELETE", fmt.Sprintf("%s/members/%d", base, ann.ID), nil, nil)
	if status, _ := c.send("DELETE", fmt.Sprintf("%s/members/%d", base, ann.ID), nil, nil); status != http.StatusNotFound {
		t.Errorf("removing ann twice: %d, want 404", status)
	}
	if status, _ := annAPI.send("GET", base, nil, nil); status != http.StatusNotFound {
		t.Errorf("a removed annotator reading the project: %d, want 404", status)
	}
}

// TestAPISensitiveAndLabelsImport: a lead's token marks items sensitive
// and imports a labels file, with the pages' rules: a file with a bad line
// is refused whole, naming the line, and warnings need confirming.
func TestAPISensitiveAndLabelsImport(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.apiFor(lead)
	base := fmt.Sprintf("/api/v1/projects/%d", p.ID)
	if status, raw := c.call("POST", base+"/items?format=jsonl", goodJSONL); status != http.StatusOK {
		t.Fatalf("import: %d %v", status, raw)
	}

	var marked struct {
		Changed int      `json:"changed"`
		Unknown []string `json:"unknown"`
	}
	c.must(http.StatusOK, "POST", base+"/sensitive", map[string]any{"ids": []string{"a1", "zz"}}, &marked)
	if marked.Changed != 1 || len(marked.Unknown) != 1 || marked.Unknown[0] != "zz" {
		t.Fatalf("marked %+v", marked)
	}
	var sensitive bool
	if err := a.db.Pool().QueryRow(t.Context(), `SELECT sensitive FROM items WHERE project_id = $1 AND source_id = 'a1'`, p.ID).Scan(&sensitive); err != nil {
		t.Fatal(err)
	}
	if !sensitive {
		t.Fatal("a1 is not marked")
	}
	if status, _ := c.send("POST", base+"/sensitive", map[string]any{"ids": []string{}}, nil); status != http.StatusUnprocessableEntity {
		t.Fatalf("no ids: %d, want 422", status)
	}

	labels := reportLabels()
	bad := strings.Replace(labels, ",CQ3,", ",CQ33,", 1)
	if status, raw := c.call("POST", base+"/labels", bad); status != http.StatusUnprocessableEntity || raw["lines"] == nil {
		t.Fatalf("a bad rubric item: %d %v, want 422 with lines", status, raw)
	}
	var n int
	writeQueuedLabels(t, a.db)
	if err := a.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM labels WHERE item_id IN (SELECT id FROM items WHERE project_id = $1)`, p.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d labels stored from a refused file", n)
	}
	if status, raw := c.call("POST", base+"/labels?confirm_warnings=true", labels); status != http.StatusOK || raw["answer_sets"].(float64) != 6 {
		t.Fatalf("labels import: %d %v, want 6 answer sets", status, raw)
	}
	if status, _ := c.call("POST", base+"/labels?confirm_warnings=maybe", labels); status != http.StatusUnprocessableEntity {
		t.Fatalf("confirm_warnings=maybe: %d, want 422", status)
	}
}
