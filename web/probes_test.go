package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/runs"
)

// TestJudgeCertificationWeb: the project page links each judge's
// certification; a lead starts a probe there, which refuses a project
// without calibration items and a k below 3; once worked, the page shows
// the probe beside the alt-test. An annotator of the project gets 403 on
// the page and the start.
func TestJudgeCertificationWeb(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := newJudged(t, fakellm.Options{Behaviour: fakellm.BehaveNames}, nil)
	jd := j.createJudge(t, j.judgeValues("Probed"))
	page := projectPath(j.project, fmt.Sprintf("/judges/%d/certification", jd.ID))
	start := projectPath(j.project, fmt.Sprintf("/judges/%d/probes", jd.ID))

	wantContains(t, j.c.get(projectPath(j.project, "")), `data-testid="certification-links"`, `href="`+page+`"`)
	first := j.c.get(page)
	wantStatus(t, first, http.StatusOK)
	wantContains(t, first, `data-testid="no-probe"`, `data-testid="probe-form"`, "at most 0.1 of the items change on a retest")

	// Without calibration items there is nothing to probe.
	refused := j.c.post(start, url.Values{"k": {""}})
	wantStatus(t, refused, http.StatusUnprocessableEntity)
	wantContains(t, refused, "no calibration items yet")

	// The annotator sees neither.
	ann := j.a.user("ann@example.org", attune.RoleAnnotator)
	j.a.member(j.project, ann, attune.MemberAnnotator)
	ac := j.a.client()
	ac.mustSignIn(ann)
	wantStatus(t, ac.get(page), http.StatusForbidden)
	wantStatus(t, ac.post(start, url.Values{"k": {"3"}}), http.StatusForbidden)

	// Every item becomes a calibration item, and the project asks for no
	// more than two items per probe.
	if _, err := j.a.db.Pool().Exec(ctx, `INSERT INTO calibration_items (item_id, project_id) SELECT id, project_id FROM items WHERE project_id = $1`, j.project.ID); err != nil {
		t.Fatal(err)
	}
	th := probe.DefaultThresholds()
	th.MinItems = 2
	if err := j.a.db.SetProbeThresholds(ctx, &j.lead.ID, j.project.ID, th); err != nil {
		t.Fatal(err)
	}
	bad := j.c.post(start, url.Values{"k": {"2"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	_, msg := runs.ProbeKProblem("2")
	wantContains(t, bad, msg)

	ok := j.c.post(start, url.Values{"k": {"3"}})
	wantStatus(t, ok, http.StatusSeeOther)
	if loc := ok.Header.Get("Location"); loc != page {
		t.Fatalf("start: redirect to %q", loc)
	}
	list, err := j.a.db.ListProbes(ctx, j.project.ID, jd.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("probes %v %v", list, err)
	}
	// A second start while the first is queued is refused.
	again := j.c.post(start, url.Values{"k": {"3"}})
	wantStatus(t, again, http.StatusSeeOther)
	wantContains(t, j.c.get(page), "a probe of this judge with this prompt version is queued or running")

	done := j.work(t, list[0].ID)
	if done.Status != attune.RunCompleted {
		t.Fatalf("probe %s (%s)", done.Status, done.Reason)
	}
	after := j.c.get(page)
	wantStatus(t, after, http.StatusOK)
	wantContains(t, after, `data-testid="certified-version"`, "speaker names replaced", "no labels of this judge", `data-testid="probe-runs"`)
	// A row per rubric item of the project's rubric.
	def, err := j.a.db.FindRubricByID(ctx, j.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	if n := countOf(after.body, `data-testid="certified-row"`); n != len(def.Items) {
		t.Fatalf("%d rows, want %d", n, len(def.Items))
	}
	// The probe's answers are no labels: the run list of the project's
	// page has no run of it.
	if m := regexp.MustCompile(`/runs/` + strconv.FormatInt(done.ID, 10) + `"`).FindString(j.c.get(projectPath(j.project, "")).body); m != "" {
		t.Fatalf("the project's runs list the probe")
	}
}
