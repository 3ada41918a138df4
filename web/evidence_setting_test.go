package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// TestAPIProjectEvidencePolicy: a project's turn evidence setting is set
// on create (optional when left out), shown by GET, changed by PATCH to
// each setting and kept by a PATCH that leaves it out; an unknown, empty
// or miscapitalised one is refused with a 422 naming evidence_policy, and
// nothing changes.
func TestAPIProjectEvidencePolicy(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if err := a.db.LoadBuiltinRubrics(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := a.apiFor(a.user("lee@example.org", attune.RoleLead))
	bads := []string{"sometimes", "", "Required"}
	for _, bad := range bads {
		status, raw := c.send("POST", "/api/v1/projects", map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "evidence_policy": bad}, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"evidence_policy"`) {
			t.Errorf("create with %q: %d %s, want 422 naming evidence_policy", bad, status, raw)
		}
	}
	if ps, err := a.db.ListAllProjects(t.Context()); err != nil || len(ps) != 0 {
		t.Fatalf("refused creates stored %d projects (%v)", len(ps), err)
	}
	type project struct {
		ID             int64  `json:"id"`
		EvidencePolicy string `json:"evidence_policy"`
	}
	var plain, off project
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Plain", "rubric": "coaching-conversation@2.0"}, &plain)
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Off", "rubric": "coaching-conversation@2.0", "evidence_policy": "off"}, &off)
	if plain.EvidencePolicy != string(rubric.EvidenceOptional) || off.EvidencePolicy != string(rubric.EvidenceOff) {
		t.Fatalf("created with %q and %q", plain.EvidencePolicy, off.EvidencePolicy)
	}
	path := fmt.Sprintf("/api/v1/projects/%d", off.ID)
	get := func() string {
		t.Helper()
		var p project
		c.must(http.StatusOK, "GET", path, nil, &p)
		return p.EvidencePolicy
	}
	if got := get(); got != "off" {
		t.Fatalf("GET: %q", got)
	}
	for _, bad := range bads {
		status, raw := c.send("PATCH", path, map[string]any{"evidence_policy": bad, "overlap": 4}, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"evidence_policy"`) {
			t.Errorf("PATCH %q: %d %s, want 422 naming evidence_policy", bad, status, raw)
		}
	}
	if p, err := a.db.FindProjectByID(t.Context(), off.ID); err != nil || p.EvidencePolicy != rubric.EvidenceOff || p.Overlap == 4 {
		t.Fatalf("a refused PATCH changed the project: %+v %v", p, err)
	}
	for _, good := range []rubric.EvidencePolicy{rubric.EvidenceRequired, rubric.EvidenceOptional, rubric.EvidenceOff, rubric.EvidenceRequired} {
		var back project
		c.must(http.StatusOK, "PATCH", path, map[string]any{"evidence_policy": string(good)}, &back)
		if back.EvidencePolicy != string(good) || get() != string(good) {
			t.Fatalf("PATCH %q: answered %q, GET %q", good, back.EvidencePolicy, get())
		}
		if p, err := a.db.FindProjectByID(t.Context(), off.ID); err != nil || p.EvidencePolicy != good {
			t.Fatalf("PATCH %q stored %+v %v", good, p, err)
		}
	}
	c.must(http.StatusOK, "PATCH", path, map[string]any{"overlap": 2}, nil)
	if got := get(); got != "required" {
		t.Fatalf("a PATCH without the setting made it %q", got)
	}
}

// TestProjectEvidencePolicyForm: the create form offers the three turn
// evidence settings, optional chosen, and stores the one chosen; the
// project page shows it; the edit form shows it chosen, refuses an
// unknown or empty one under its field and changes nothing then, saves
// another, and keeps it when a form without the field is posted.
func TestProjectEvidencePolicyForm(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	c := a.client()
	c.mustSignIn(lead)
	wantContains(t, c.get("/projects/new"), `value="optional" checked`, `value="off"`, `value="required"`,
		"No turns are marked.", "A person may mark the turns where a failing answer fails", "Every failing answer names at least one turn.",
		"on the annotators&#39; page or through the API", "The annotators&#39; page asks for the turns with each failing answer")
	wantLacks(t, c.get("/projects/new"), "cannot mark turns", "through the API for now")
	r := c.post("/projects", url.Values{"name": {"Marked"}, "rubric": {strconv.FormatInt(a.rubricID("coaching-conversation@2.0"), 10)},
		"overlap": {"2"}, "lease": {"30"}, "annotators": {"trained"}, "system_key": {"system"}, "evidence_policy": {"required"}})
	wantStatus(t, r, http.StatusSeeOther)
	p, err := a.db.FindProjectByName(t.Context(), "Marked")
	if err != nil || p.EvidencePolicy != rubric.EvidenceRequired {
		t.Fatalf("created: %+v, %v", p, err)
	}
	wantContains(t, c.get(projectPath(p, "")), `data-testid="project-evidence-policy">Required</dd>`)
	edit := c.get(projectPath(p, "/edit"))
	wantContains(t, edit, `value="required" checked`)
	wantLacks(t, edit, `value="optional" checked`)
	form := func(policy ...string) url.Values {
		v := url.Values{"name": {"Marked"}, "overlap": {"2"}, "lease": {"30"}, "annotators": {"trained"}, "system_key": {"system"}}
		if len(policy) > 0 {
			v.Set("evidence_policy", policy[0])
		}
		return v
	}
	for _, bad := range []string{"sometimes", ""} {
		r = c.post(projectPath(p, "/edit"), form(bad))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, `data-testid="error-evidence_policy"`, attune.ProjectFieldMessage("evidence_policy"))
	}
	if got, err := a.db.FindProjectByID(t.Context(), p.ID); err != nil || got.EvidencePolicy != rubric.EvidenceRequired {
		t.Fatalf("a refused edit changed it: %+v, %v", got, err)
	}
	wantStatus(t, c.post(projectPath(p, "/edit"), form("off")), http.StatusSeeOther)
	wantStatus(t, c.post(projectPath(p, "/edit"), form()), http.StatusSeeOther)
	if got, err := a.db.FindProjectByID(t.Context(), p.ID); err != nil || got.EvidencePolicy != rubric.EvidenceOff {
		t.Fatalf("after the edits: %+v, %v", got, err)
	}
	wantContains(t, c.get(projectPath(p, "")), `data-testid="project-evidence-policy">Off</dd>`)
}
