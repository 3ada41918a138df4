package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
)

// TestProjectProbeThresholdsForm: the create form shows the probe
// thresholds' defaults and stores those typed; the edit form shows the
// stored ones, refuses one out of range or not a number under its own
// field with probe's message (changing nothing), saves others, and keeps
// them when a form without the fields is posted.
func TestProjectProbeThresholdsForm(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	c := a.client()
	c.mustSignIn(lead)
	wantContains(t, c.get("/projects/new"), `data-testid="probe-thresholds"`, `name="probe_retest_change" value="0.1"`,
		`name="probe_min_items" value="10"`, `name="probe_length_slope" value="0.1"`)
	base := url.Values{"name": {"Probed"}, "overlap": {"2"}, "lease": {"30"}, "annotators": {"trained"}, "system_key": {"system"}, "evidence_policy": {"optional"}}
	create := url.Values{"rubric": {strconv.FormatInt(a.rubricID("coaching-conversation@2.0"), 10)},
		probe.FieldRetestChange: {"0.2"}, probe.FieldPerturbMove: {"0.05"}, probe.FieldMinItems: {"4"}, probe.FieldLengthSlope: {"0.3"}}
	for k, v := range base {
		create[k] = v
	}
	wantStatus(t, c.post("/projects", create), http.StatusSeeOther)
	p, err := a.db.FindProjectByName(t.Context(), "Probed")
	if err != nil {
		t.Fatal(err)
	}
	stored := func() probe.Thresholds {
		t.Helper()
		th, err := a.db.ProbeThresholds(t.Context(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	want := probe.Thresholds{RetestChange: 0.2, PerturbMove: 0.05, MinItems: 4, LengthSlope: 0.3}
	if got := stored(); got != want {
		t.Fatalf("created with %+v, want %+v", got, want)
	}
	wantContains(t, c.get(projectPath(p, "/edit")), `name="probe_retest_change" value="0.2"`, `name="probe_min_items" value="4"`)
	edit := func(set map[string]string) response {
		v := url.Values{}
		for k, x := range base {
			v[k] = x
		}
		for k, x := range set {
			v.Set(k, x)
		}
		return c.post(projectPath(p, "/edit"), v)
	}
	for _, bad := range []struct{ field, value string }{
		{probe.FieldRetestChange, "1"}, {probe.FieldPerturbMove, "-0.1"}, {probe.FieldMinItems, "1"}, {probe.FieldMinItems, "ten"},
		{probe.FieldLengthSlope, "11"}, {probe.FieldLengthSlope, ""},
	} {
		r := edit(map[string]string{bad.field: bad.value, "overlap": "3"})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if got := pageErrors(r.body); len(got) != 1 || got[bad.field] != probe.ThresholdMessage(bad.field) {
			t.Errorf("%s %q: errors %v, want only %s's message", bad.field, bad.value, got, bad.field)
		}
		// What was typed comes back.
		wantContains(t, r, fmt.Sprintf(`name="%s" value="%s"`, bad.field, bad.value))
	}
	if got, err := a.db.FindProjectByID(t.Context(), p.ID); err != nil || got.Overlap != 2 || stored() != want {
		t.Fatalf("a refused edit changed the project: %+v %v %+v", got, err, stored())
	}
	wantStatus(t, edit(map[string]string{probe.FieldRetestChange: "0", probe.FieldLengthSlope: "10"}), http.StatusSeeOther)
	want.RetestChange, want.LengthSlope = 0, 10
	if got := stored(); got != want {
		t.Fatalf("edited to %+v, want %+v", got, want)
	}
	wantStatus(t, edit(nil), http.StatusSeeOther)
	if got := stored(); got != want {
		t.Fatalf("a form without the fields made them %+v", got)
	}
	wantContains(t, c.get(projectPath(p, "/edit")), `name="probe_length_slope" value="10"`)
}

// TestAPIProjectProbeThresholds: the project API takes the probe
// thresholds on create (the defaults when left out) and PATCH (those left
// out kept), GET shows them, and one out of range is a 422 naming its
// field with probe's message, nothing stored; PUT probe-thresholds names
// the field the same way.
func TestAPIProjectProbeThresholds(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if err := a.db.LoadBuiltinRubrics(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := a.apiFor(a.user("lee@example.org", attune.RoleLead))
	type project struct {
		ID           int64   `json:"id"`
		RetestChange float64 `json:"probe_retest_change"`
		PerturbMove  float64 `json:"probe_perturb_move"`
		MinItems     int     `json:"probe_min_items"`
		LengthSlope  float64 `json:"probe_length_slope"`
	}
	refused := func(method, path string, body map[string]any, field string) {
		t.Helper()
		status, raw := c.send(method, path, body, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"`+field+`"`) || !strings.Contains(raw, probe.ThresholdMessage(field)) {
			t.Errorf("%s %s %v: %d %s, want 422 naming %s", method, path, body, status, raw, field)
		}
	}
	refused("POST", "/api/v1/projects", map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "probe_retest_change": 1}, probe.FieldRetestChange)
	refused("POST", "/api/v1/projects", map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "probe_min_items": 0}, probe.FieldMinItems)
	if ps, err := a.db.ListAllProjects(t.Context()); err != nil || len(ps) != 0 {
		t.Fatalf("refused creates stored %d projects (%v)", len(ps), err)
	}
	var plain, set project
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Plain", "rubric": "coaching-conversation@2.0"}, &plain)
	d := probe.DefaultThresholds()
	if plain.RetestChange != d.RetestChange || plain.PerturbMove != d.PerturbMove || plain.MinItems != d.MinItems || plain.LengthSlope != d.LengthSlope {
		t.Fatalf("created without thresholds: %+v", plain)
	}
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Set", "rubric": "coaching-conversation@2.0",
		"probe_retest_change": 0.25, "probe_min_items": 3}, &set)
	if set.RetestChange != 0.25 || set.MinItems != 3 || set.PerturbMove != d.PerturbMove {
		t.Fatalf("created with thresholds: %+v", set)
	}
	path := fmt.Sprintf("/api/v1/projects/%d", set.ID)
	refused("PATCH", path, map[string]any{"probe_length_slope": -0.5, "overlap": 4}, probe.FieldLengthSlope)
	refused("PATCH", path, map[string]any{"probe_perturb_move": 1.5}, probe.FieldPerturbMove)
	var got project
	c.must(http.StatusOK, "GET", path, nil, &got)
	if got != set {
		t.Fatalf("refused PATCHes changed %+v into %+v", set, got)
	}
	c.must(http.StatusOK, "PATCH", path, map[string]any{"probe_perturb_move": 0.3}, &got)
	if got.PerturbMove != 0.3 || got.RetestChange != 0.25 || got.MinItems != 3 {
		t.Fatalf("PATCH of one threshold: %+v", got)
	}
	c.must(http.StatusOK, "PATCH", path, map[string]any{"overlap": 2}, &got)
	if got.PerturbMove != 0.3 {
		t.Fatalf("a PATCH without thresholds: %+v", got)
	}
	refused("PUT", path+"/probe-thresholds", map[string]any{"min_items": 1}, probe.FieldMinItems)
	// Another project's lead may not change them.
	other := a.apiFor(a.user("other@example.org", attune.RoleLead))
	if status, raw := other.send("PATCH", path, map[string]any{"probe_perturb_move": 0.5}, nil); status != http.StatusNotFound && status != http.StatusForbidden {
		t.Errorf("another lead's PATCH: %d %s", status, raw)
	}
	if th, err := a.db.ProbeThresholds(t.Context(), set.ID); err != nil || th.PerturbMove != 0.3 {
		t.Fatalf("stored %+v %v", th, err)
	}
}
