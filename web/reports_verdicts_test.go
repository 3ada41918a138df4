package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestReportJudgeSharedCount: a judge that answered more items than the
// people labelled is counted twice, the items it judged and those the
// people labelled too, on the page and in the report's JSON (the API's
// response checked against the OpenAPI document).
func TestReportJudgeSharedCount(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "pilot.jsonl", goodJSONL), http.StatusSeeOther)
	// The people label a1; the judge a1 and a2.
	labels := "item,rater,rater_kind,rubric_item,value\n" +
		"a1,Ann,human,CQ1,YES\na1,Bo,human,CQ1,NO\na1,Ann,human,CQ2,YES\na1,Bo,human,CQ2,YES\n" +
		"a1,judge-a,judge,CQ1,YES\na2,judge-a,judge,CQ1,NO\na1,judge-a,judge,CQ2,YES\na2,judge-a,judge,CQ2,YES\n"
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "round1.csv", labels), http.StatusSeeOther)

	var rep struct {
		RubricItems []struct {
			Key    string `json:"key"`
			Judges []struct {
				Items  *int `json:"n_items"`
				Shared *int `json:"n_shared"`
			} `json:"judges"`
		} `json:"rubric_items"`
	}
	status, body := a.apiFor(lead).send("GET", fmt.Sprintf("/api/v1/projects/%d/report?replicates=0", p.ID), nil, nil)
	if status != http.StatusOK {
		t.Fatalf("report: %d %s", status, body)
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, it := range rep.RubricItems {
		if it.Key != "CQ1" && it.Key != "CQ2" {
			continue
		}
		seen++
		if len(it.Judges) != 1 || it.Judges[0].Items == nil || it.Judges[0].Shared == nil {
			t.Fatalf("%s: judges %+v, want one with n_items and n_shared", it.Key, it.Judges)
		}
		if j := it.Judges[0]; *j.Items != 2 || *j.Shared != 1 {
			t.Errorf("%s: n_items %d, n_shared %d; want 2 judged, 1 also labelled by people", it.Key, *j.Items, *j.Shared)
		}
	}
	if seen != 2 {
		t.Fatalf("the report has %d of CQ1 and CQ2", seen)
	}

	r := c.get(projectPath(p, "/report?replicates=0"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "Items judged", "also labelled by people", `data-testid="judge-items-judged">2<`,
		`title="The items where the judge and the people differ">1</a>`)
}

// TestReportVerdictsAndFilterBar: the page opens with the verdicts, each
// band a word and the thresholds said in a legend, and the filters are a
// closed details element whose summary says what they keep.
func TestReportVerdictsAndFilterBar(t *testing.T) {
	t.Parallel()
	_, p, c, _, _ := reportApp(t)
	r := c.get(projectPath(p, "/report?replicates=0"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="verdicts"`, `data-testid="verdict-judge"`, "gpt-judge (judge)", `data-testid="verdict-item" data-key="CQ1"`,
		`data-testid="verdict-band">`, "0.800 or more", "0.667 to 0.800", "below 0.667",
		`<details class="panel report-filter-bar" data-testid="report-filter-bar">`,
		`data-testid="report-filter-summary">All raters · all dates · NA an answer · ε 0.15<`)
	verdicts, filters, summary := strings.Index(r.body, `data-testid="verdicts"`), strings.Index(r.body, `data-testid="report-filters"`), strings.Index(r.body, `data-testid="summary"`)
	if verdicts < 0 || summary < verdicts || filters < 0 {
		t.Fatalf("verdicts at %d, filters at %d, summary table at %d: want the verdicts before the tables", verdicts, filters, summary)
	}
	// A narrowed report says so in its closed bar.
	r = c.get(projectPath(p, "/report?replicates=0&filter=1&na=missing&from=2026-01-01&epsilon=0.1"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="report-filter-summary">0 of 2 annotators · 0 of 1 judges · labels from 2026-01-01 · NA missing · ε 0.1<`)
}

// TestImportRefusedBanner: a refused items import tops the project page
// with a banner counting the problems and linking to their list, far
// below by the import form; a refused labels import's list has the same
// id.
func TestImportRefusedBanner(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)

	bad := goodJSONL + `{"id":"a3","messages":[{"role":"user","content":"hello"}]}` + "\n" + `{"id":"a4"}` + "\n"
	r := c.upload(projectPath(p, "/import"), nil, "broken.jsonl", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="import-banner"`, "The upload was refused: 2 problems.", "broken.jsonl",
		`<a href="#import-errors" data-testid="import-banner-link">`, `id="import-errors"`)
	banner, name, list := strings.Index(r.body, `data-testid="import-banner"`), strings.Index(r.body, `data-testid="project-name"`), strings.Index(r.body, `id="import-errors"`)
	if banner < 0 || banner > name || list < banner {
		t.Fatalf("banner at %d, page heading at %d, list at %d: want the banner first", banner, name, list)
	}

	// One problem not tied to a line.
	r = c.upload(projectPath(p, "/import"), nil, "", "")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "The upload was refused: 1 problem.", `href="#import-errors"`)

	// A project page without a refused upload has no banner.
	wantLacks(t, c.get(projectPath(p, "")), `data-testid="import-banner"`)

	// The labels import shows its problems on a page of their own, under
	// the same id.
	r = c.upload(projectPath(p, "/labels/import"), nil, "round2.csv", "item,rater,rater_kind,rubric_item,value\nnope,Cy,human,CQ1,YES\n")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `id="import-errors"`, `data-testid="labels-import-errors"`)
}
