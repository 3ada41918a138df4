package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/runs"
)

// probesOut is the part of GET .../probes the tests read.
type probesOut struct {
	Thresholds probe.Thresholds `json:"thresholds"`
	Versions   []struct {
		Version int `json:"prompt_version"`
		Probe   struct {
			Run struct {
				ID     int64  `json:"id"`
				K      int    `json:"k"`
				Status string `json:"status"`
			} `json:"run"`
			Items    int      `json:"n_items"`
			Unstable bool     `json:"unstable"`
			Failed   []string `json:"failed"`
			Summary  struct {
				Retest []probe.RetestResult `json:"retest"`
			} `json:"summary"`
		} `json:"probe"`
		Items []struct {
			Key           string `json:"rubric_item"`
			AltTest       string `json:"alt_test"`
			Certification string `json:"certification"`
		} `json:"rubric_items"`
	} `json:"versions"`
	Probes []struct {
		ID     int64  `json:"id"`
		K      int    `json:"k"`
		Status string `json:"status"`
	} `json:"probes"`
}

// TestAPIProbes starts probes over the API against the fake provider and
// reads their results once worked: a judge that answers at random at a
// temperature above 0 is unstable on the retest, one that answers from
// the reply alone is not. Only the project's leads may start or read
// probes (an annotator of it and another project's lead are refused);
// a k below 3, an unknown judge and a project without calibration items
// are refused naming the problem.
func TestAPIProbes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := newJudged(t, fakellm.Options{Behaviour: fakellm.BehaveRandom}, nil)
	c := j.a.apiFor(j.lead)
	var random, steady judgeOut
	body := j.apiJudgeBody("Random")
	body["temperature"] = 1
	c.must(http.StatusCreated, "POST", "/api/v1/judges", body, &random)
	c.must(http.StatusCreated, "POST", "/api/v1/judges", j.apiJudgeBody("Steady"), &steady) // temperature 0: answers as stable
	path := func(judgeID int64) string {
		return fmt.Sprintf("/api/v1/projects/%d/judges/%d/probes", j.project.ID, judgeID)
	}

	// No calibration items yet.
	status, raw := c.send("POST", path(random.ID), map[string]any{"k": 3}, nil)
	if status != http.StatusUnprocessableEntity || !strings.Contains(raw, "no calibration items yet") {
		t.Fatalf("a probe without calibration items: %d %s", status, raw)
	}
	if _, err := j.a.db.Pool().Exec(ctx, `INSERT INTO calibration_items (item_id, project_id) SELECT id, project_id FROM items WHERE project_id = $1`, j.project.ID); err != nil {
		t.Fatal(err)
	}
	c.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/projects/%d/probe-thresholds", j.project.ID), map[string]any{"min_items": 2}, nil)

	_, kMsg := runs.ProbeKProblem("2")
	for _, bad := range []struct {
		name   string
		path   string
		body   map[string]any
		status int
		names  string
	}{
		{"k of 2", path(random.ID), map[string]any{"k": 2}, http.StatusUnprocessableEntity, kMsg},
		{"k of 0", path(random.ID), map[string]any{"k": 0}, http.StatusUnprocessableEntity, `"k"`},
		{"k too large", path(random.ID), map[string]any{"k": runs.MaxProbeK + 1}, http.StatusUnprocessableEntity, `"k"`},
		{"unknown judge", path(random.ID + 1000), map[string]any{"k": 3}, http.StatusNotFound, "judge"},
		{"no such prompt version", path(random.ID), map[string]any{"k": 3, "prompt_version": 9}, http.StatusUnprocessableEntity, "prompt"},
	} {
		status, raw := c.send("POST", bad.path, bad.body, nil)
		if status != bad.status || !strings.Contains(raw, bad.names) {
			t.Errorf("%s: %d %s, want %d naming %q", bad.name, status, raw, bad.status, bad.names)
		}
	}
	if list, err := j.a.db.ListProbes(ctx, j.project.ID, random.ID); err != nil || len(list) != 0 {
		t.Fatalf("refused starts stored probes: %v %v", list, err)
	}

	// Neither an annotator of the project nor another project's lead.
	ann := j.a.user("ann@example.org", attune.RoleAnnotator)
	j.a.member(j.project, ann, attune.MemberAnnotator)
	other := j.a.user("other@example.org", attune.RoleLead)
	j.a.project(other, projectOpts{name: "Other"})
	for who, u := range map[string]*attune.User{"annotator": ann, "another project's lead": other} {
		oc := j.a.apiFor(u)
		for _, m := range []string{"GET", "POST"} {
			var b any
			if m == "POST" {
				b = map[string]any{"k": 3}
			}
			if status, raw := oc.send(m, path(random.ID), b, nil); status != http.StatusForbidden && status != http.StatusNotFound {
				t.Errorf("%s: %s: %d %s, want it refused", who, m, status, raw)
			}
		}
	}

	var started struct {
		ID     int64  `json:"id"`
		K      int    `json:"k"`
		Status string `json:"status"`
		Items  int    `json:"items"`
	}
	c.must(http.StatusAccepted, "POST", path(random.ID), map[string]any{"k": 4}, &started)
	if started.K != 4 || started.Items != 3 || started.Status != string(attune.RunQueued) {
		t.Fatalf("started %+v", started)
	}
	// One probe of a judge and prompt version at a time.
	if status, raw := c.send("POST", path(random.ID), map[string]any{"k": 3}, nil); status != http.StatusConflict {
		t.Errorf("a second probe while one is queued: %d %s", status, raw)
	}
	var steadyRun struct {
		ID int64 `json:"id"`
	}
	c.must(http.StatusAccepted, "POST", path(steady.ID), map[string]any{}, &steadyRun)
	for _, id := range []int64{started.ID, steadyRun.ID} {
		if done := j.work(t, id); done.Status != attune.RunCompleted {
			t.Fatalf("probe %d: %s (%s)", id, done.Status, done.Reason)
		}
	}
	read := func(judgeID int64) probesOut {
		t.Helper()
		var out probesOut
		c.must(http.StatusOK, "GET", path(judgeID), nil, &out)
		if len(out.Versions) != 1 || len(out.Probes) != 1 || out.Probes[0].Status != string(attune.RunCompleted) || out.Thresholds.MinItems != 2 {
			t.Fatalf("judge %d: %+v", judgeID, out)
		}
		return out
	}
	r := read(random.ID)
	if v := r.Versions[0]; v.Probe.Run.ID != started.ID || v.Probe.Run.K != 4 || v.Probe.Items != 3 || !v.Probe.Unstable || len(v.Probe.Summary.Retest) == 0 {
		t.Errorf("the random judge's probe: %+v", v.Probe)
	}
	changed := false
	for _, rt := range r.Versions[0].Probe.Summary.Retest {
		changed = changed || rt.Verdict == probe.Unstable
	}
	if !changed || !strings.Contains(strings.Join(r.Versions[0].Probe.Failed, " "), "retest") {
		t.Errorf("the random judge's retest failed nothing: %+v", r.Versions[0].Probe)
	}
	s := read(steady.ID)
	if v := s.Versions[0]; v.Probe.Run.K != probe.MinRetestK || v.Probe.Unstable {
		t.Errorf("the steady judge's probe (k left out): %+v", v.Probe)
	}
	for _, rt := range s.Versions[0].Probe.Summary.Retest {
		if rt.Changed != 0 {
			t.Errorf("the steady judge changed answers on %s: %+v", rt.Criterion, rt)
		}
	}
}
