package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/store"
)

// TestPassedButUnstable: two judges label a project at temperature 0,
// where the fake answers each reply the same way, and three people agree
// with them but for a few items each, so both pass the alternative
// annotator test. One judge is then probed at temperature 1, where the
// fake answers at random, and fails the retest: the report (JSON and page)
// shows it "passed, but unstable"; the other, probed as it labelled, is
// "passed".
func TestPassedButUnstable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lead@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{rubric: "empathetic-understanding@1", overlap: 1})
	const n = 34
	var data strings.Builder
	for i := range n {
		fmt.Fprintf(&data, `{"id":"d%02d","messages":[{"role":"user","content":"Day %d went badly for me."},{"role":"assistant","content":"I hear you about day %d, %s"}]}`+"\n",
			i, i, i, strings.Repeat("that sounds hard ", i%5+1))
	}
	if _, err := importer.Import(ctx, a.db, p, strings.NewReader(data.String()), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(fakellm.New(fakellm.Options{APIKey: testKey, Behaviour: fakellm.BehaveRandom}))
	t.Cleanup(fake.Close)
	c := a.client()
	c.mustSignIn(lead)
	j := &judged{a: a, lead: lead, c: c, project: p, baseURL: fake.URL + "/v1"}
	shaky := j.createJudge(t, j.judgeValues("Shaky"))
	steady := j.createJudge(t, j.judgeValues("Steady"))
	for _, jd := range []*attune.Judge{shaky, steady} {
		if run := j.work(t, j.startRun(t, jd.ID, "", "").ID); run.Status != attune.RunCompleted {
			t.Fatalf("labelling run of %s: %s (%s)", jd.Name, run.Status, run.Reason)
		}
	}

	// The people answer as the judges did (they answer alike at
	// temperature 0), each but on three items of their own, a step off.
	if err := a.db.WriteQueuedLabels(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := a.db.Pool().Query(ctx, `SELECT i.source_id, l.value FROM labels l JOIN items i ON i.id = l.item_id
		JOIN raters r ON r.id = l.rater_id WHERE r.judge_id = $1 AND i.project_id = $2 ORDER BY i.source_id`, steady.ID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]string{}
	var ids []string
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		judged[id] = v
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(ids) != n {
		t.Fatalf("the judge answered %d items, want %d", len(ids), n)
	}
	var csv strings.Builder
	csv.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for person := range 3 {
		for i, id := range ids {
			v, _ := strconv.Atoi(judged[id])
			if i/3 == person {
				v = v%5 + 1 // a step off, within 1–5
			}
			fmt.Fprintf(&csv, "%s,Person %d,human,understanding,%d\n", id, person, v)
		}
	}
	if _, err := importer.ImportLabels(ctx, a.db, p, strings.NewReader(csv.String()), store.LabelsImportOptions{Source: "people.csv", ConfirmWarnings: true}); err != nil {
		t.Fatal(err)
	}

	// Probes on six calibration items, the shaky judge now at temperature 1.
	if _, err := a.db.Pool().Exec(ctx, `INSERT INTO calibration_items (item_id, project_id)
		SELECT id, project_id FROM items WHERE project_id = $1 ORDER BY source_id LIMIT 6`, p.ID); err != nil {
		t.Fatal(err)
	}
	th := probe.DefaultThresholds()
	th.MinItems = 2
	if err := a.db.SetProbeThresholds(ctx, &lead.ID, p.ID, th); err != nil {
		t.Fatal(err)
	}
	hot := j.judgeValues("Shaky")
	hot.Set("temperature", "1")
	wantStatus(t, c.post(fmt.Sprintf("/judges/%d/edit", shaky.ID), hot), http.StatusSeeOther)
	for _, jd := range []*attune.Judge{shaky, steady} {
		r := c.post(projectPath(p, fmt.Sprintf("/judges/%d/probes", jd.ID)), url.Values{"k": {"4"}})
		wantStatus(t, r, http.StatusSeeOther)
		list, err := a.db.ListProbes(ctx, p.ID, jd.ID)
		if err != nil || len(list) != 1 {
			t.Fatalf("probes of %s: %v %v", jd.Name, list, err)
		}
		if run := j.work(t, list[0].ID); run.Status != attune.RunCompleted {
			t.Fatalf("probe of %s: %s (%s)", jd.Name, run.Status, run.Reason)
		}
	}

	var rep struct {
		Raters []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"raters"`
		RubricItems []struct {
			Key    string `json:"key"`
			Judges []struct {
				Rater         int64  `json:"rater"`
				Certification string `json:"certification"`
				AltTest       struct {
					Passed bool `json:"passed"`
				} `json:"alt_test"`
			} `json:"judges"`
		} `json:"rubric_items"`
	}
	a.apiFor(lead).must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/projects/%d/report", p.ID), nil, &rep)
	names := map[int64]string{}
	for _, r := range rep.Raters {
		names[r.ID] = r.Name
	}
	got := map[string]string{}
	for _, it := range rep.RubricItems {
		for _, ji := range it.Judges {
			if !ji.AltTest.Passed {
				t.Errorf("%s did not pass the alt-test: %+v", names[ji.Rater], ji)
			}
			got[names[ji.Rater]] = ji.Certification
		}
	}
	if len(got) != 2 {
		t.Fatalf("the report's judges: %v (%+v)", got, rep)
	}
	for name, cert := range got {
		want := "passed"
		if strings.HasPrefix(name, "Shaky") {
			want = probe.PassedUnstable
		}
		if cert != want {
			t.Errorf("%s: certification %q, want %q", name, cert, want)
		}
	}
	page := c.get(projectPath(p, "/report"))
	wantStatus(t, page, http.StatusOK)
	cells := regexp.MustCompile(`(?s)<td data-testid="verdict-alt">.*?>([^<]+)</a>`).FindAllStringSubmatch(page.body, -1)
	var words []string
	for _, m := range cells {
		words = append(words, strings.TrimSpace(m[1]))
	}
	if strings.Join(words, "|") != "passed, but unstable|passed" && strings.Join(words, "|") != "passed|passed, but unstable" {
		t.Errorf("the report page's alt-test cells: %q", words)
	}
}
