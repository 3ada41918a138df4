package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
)

// reportLabels labels the two items of goodJSONL on every criterion: two
// people (one with a name a spreadsheet would run) and a judge.
func reportLabels() string {
	keys := []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}
	var b strings.Builder
	b.WriteString("item,rater,rater_kind,rubric_item,value\n")
	w := csv.NewWriter(&b)
	for i, item := range []string{"a1", "a2"} {
		for k, key := range keys {
			v := "YES"
			if (i+k)%4 == 0 {
				v = "NO"
			}
			other := v
			if k%5 == 0 {
				other = "NA"
				if key == "CQ8" || key == "CP2" {
					other = "NO"
				}
			}
			w.Write([]string{item, `=HYPERLINK("http://evil.example","x")`, "human", key, v})
			w.Write([]string{item, "Bo", "human", key, other})
			w.Write([]string{item, "gpt-judge", "judge", key, v})
		}
	}
	w.Flush()
	return b.String()
}

// reportApp is a project with items and imported labels, a lead signed in,
// an annotator of the project and someone outside it.
func reportApp(t *testing.T) (*app, *attune.Project, *client, *attune.User, *attune.User) {
	t.Helper()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	out := a.user("out@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	a.member(p, ann, attune.MemberAnnotator)
	c := a.client()
	c.mustSignIn(lead)
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "pilot.jsonl", goodJSONL), http.StatusSeeOther)
	// The pilot's dialogues are short: the file answers CP1 and CP3, and
	// confirms the rubric's warnings about it.
	r := c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "round1.csv", reportLabels())
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != projectPath(p, "/report") {
		t.Fatalf("after import: redirect to %q", loc)
	}
	return a, p, c, ann, out
}

func TestReportPage(t *testing.T) {
	t.Parallel()
	a, p, c, ann, out := reportApp(t)
	r := c.get(projectPath(p, "/report"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "Imported 72 labels in 6 answer sets from round1.csv (2 new people, 1 new judge).",
		`data-testid="summary"`, `data-testid="summary-row" data-key="CQ1"`, `data-testid="item-detail"`,
		`data-testid="pair-matrix"`, `data-testid="confusion-matrix"`, "<svg", "</svg>",
		`data-testid="annotators"`, `data-testid="judges"`, `data-testid="judge-verdict"`, `data-testid="engine"`,
		`data-testid="explain-krippendorff_alpha"`, `data-testid="explain-gwet_ac1"`, "<details", "stays stable when one answer dominates",
		`data-testid="definitions"`, `data-testid="labels-import-form"`, "NA is counted as an answer of its own",
		"Pass or fail", "Safety gate", "gpt-judge (judge)", "Bo (imported)")
	// A name is text, never markup.
	if !strings.Contains(r.body, "=HYPERLINK(&#34;http://evil.example&#34;,&#34;x&#34;) (imported)") {
		t.Fatalf("the rater's name is not shown escaped: %.3000s", r.body)
	}

	// A chosen rubric item and pair; NA as missing.
	raters, err := a.db.ListProjectRaters(t.Context(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var bo, judge int64
	for _, x := range raters {
		switch x.Name {
		case "Bo":
			bo = x.ID
		case "gpt-judge":
			judge = x.ID
		}
	}
	r = c.get(projectPath(p, fmt.Sprintf("/report?filter=1&na=missing&item=CQ2&a=%d&b=%d&annotator=%d&judge=%d", judge, bo, bo, judge)))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "NA is treated as missing", "CQ2:", "Confusion matrix: gpt-judge (judge) against Bo (imported)",
		`id="na-missing" name="na" value="missing" checked`)

	// The alt-test is the judges' headline, with its ε; the lead picks ε
	// by who the annotators are, the scoring and Krippendorff's level.
	r = c.get(projectPath(p, "/report?epsilon=0.1&alt_scoring=accuracy&level=interval&alt_min_items=2"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "Can the judge replace an annotator?", `data-testid="alt-verdict"`, `data-testid="alt-epsilon">0.1<`,
		"Passes the alternative annotator test at ε = 0.1 (a crowd)", `<option value="0.1" selected>`, `<option value="interval" selected>`,
		`<option value="accuracy" selected>`, "Light&#39;s κ", "ε = 0.1")

	// The alt-test's two explicit asks are checkboxes of the form, kept
	// checked when the query has them; an ε outside 0.05 to 0.3 is then
	// accepted and marked unusual beside the verdicts.
	r = c.get(projectPath(p, "/report"))
	wantContains(t, r, `name="alt_unusual_epsilon" value="1" data-testid="report-alt-unusual-epsilon"`,
		`name="alt_allow_few" value="1" data-testid="report-alt-allow-few"`)
	wantLacks(t, r, `name="alt_unusual_epsilon" value="1" checked`, `name="alt_allow_few" value="1" checked`)
	wantStatus(t, c.get(projectPath(p, "/report?epsilon=0.4")), http.StatusUnprocessableEntity)
	r = c.get(projectPath(p, "/report?epsilon=0.4&alt_unusual_epsilon=1&alt_allow_few=1&alt_min_items=2"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `name="alt_unusual_epsilon" value="1" checked`, `name="alt_allow_few" value="1" checked`,
		`<option value="0.4" selected>`, "an unusual ε (the usual are 0.05 to 0.3)")

	// Bad filters are refused, saying why.
	for _, q := range []string{"na=maybe", "epsilon=1.5", "epsilon=x", "alt_scoring=kappa", "alt_scoring=neg_rmse", "level=cardinal", "alt_min_items=1"} {
		wantStatus(t, c.get(projectPath(p, "/report?"+q)), http.StatusUnprocessableEntity)
	}
	r = c.get(projectPath(p, "/report?na=maybe"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	// The page is the report without the bad filter, the message by its
	// field in the opened filter bar, the rest of the query kept.
	r = c.get(projectPath(p, "/report?epsilon=abc&alt_scoring=accuracy"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "Can the judge replace an annotator?", `data-testid="report-filter-refused"`, `data-testid="error-epsilon"`,
		`<option value="accuracy" selected>`, `data-testid="report-filter-bar" open`)
	if strings.Contains(r.body, `data-testid="error-alt_scoring"`) {
		t.Error("a good filter is marked as refused")
	}
	// The API stays strict: the whole request is refused.
	wantStatus(t, c.get(projectPath(p, "/report.json?epsilon=abc")), http.StatusUnprocessableEntity)
	r = c.get(projectPath(p, "/report?rubric=empathetic-dialogue@2"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "this project labels with coaching-conversation@2.0")

	// Only leads and admins: an annotator of the project is told no,
	// anyone else learns nothing.
	ac := a.client()
	ac.mustSignIn(ann)
	for _, path := range []string{"/report", "/report.json", "/report.csv"} {
		wantStatus(t, ac.get(projectPath(p, path)), http.StatusForbidden)
	}
	wantStatus(t, ac.upload(projectPath(p, "/labels/import"), nil, "x.csv", reportLabels()), http.StatusForbidden)
	oc := a.client()
	oc.mustSignIn(out)
	for _, path := range []string{"/report", "/report.json", "/report.csv"} {
		wantStatus(t, oc.get(projectPath(p, path)), http.StatusNotFound)
	}
	admin := a.user("root@example.org", attune.RoleAdmin)
	adm := a.client()
	adm.mustSignIn(admin)
	wantStatus(t, adm.get(projectPath(p, "/report")), http.StatusOK)
	// The project page links to the report for leads only.
	wantContains(t, c.get(projectPath(p, "")), `data-testid="agreement-report"`)
	wantLacks(t, ac.get(projectPath(p, "")), `data-testid="agreement-report"`)
}

func TestReportDownloads(t *testing.T) {
	t.Parallel()
	_, p, c, _, _ := reportApp(t)
	r := c.get(projectPath(p, "/report.json?replicates=50"))
	wantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, "pilot-agreement.json") {
		t.Fatalf("content disposition %q", cd)
	}
	var rep struct {
		Project struct {
			Name   string `json:"name"`
			Rubric string `json:"rubric"`
		} `json:"project"`
		NA          string `json:"na"`
		Bootstrap   struct{ Replicates int }
		Raters      []struct{ ID int64 }
		RubricItems []struct {
			Key        string                     `json:"key"`
			Items      int                        `json:"n_items"`
			Raters     int                        `json:"n_raters"`
			Statistics map[string]json.RawMessage `json:"statistics"`
			Pairs      []struct {
				Confusion [][]int `json:"confusion"`
			} `json:"pairs"`
			Judges []struct {
				Verdict        string          `json:"verdict"`
				AlphaWithJudge json.RawMessage `json:"alpha_with_judge"`
			} `json:"judges"`
		} `json:"rubric_items"`
		Engine struct {
			Pass *struct {
				Pairs []json.RawMessage `json:"pairs"`
			} `json:"pass"`
		} `json:"engine"`
		Definitions []struct{ Key, Sentence string }
	}
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatalf("report.json: %v\n%.500s", err, r.body)
	}
	if rep.Project.Name != "Pilot" || rep.Project.Rubric != "coaching-conversation@2.0" || rep.NA != "category" || rep.Bootstrap.Replicates != 50 ||
		len(rep.Raters) != 3 || len(rep.RubricItems) != 12 || len(rep.Definitions) == 0 {
		t.Fatalf("report.json: %+v", rep)
	}
	cq1 := rep.RubricItems[0]
	if cq1.Key != "CQ1" || cq1.Items != 2 || cq1.Raters != 2 || len(cq1.Pairs) != 3 || len(cq1.Pairs[0].Confusion) != 3 ||
		len(cq1.Judges) != 1 || cq1.Judges[0].Verdict == "" || rep.Engine.Pass == nil || len(rep.Engine.Pass.Pairs) != 3 {
		t.Fatalf("CQ1: %+v", cq1)
	}
	for _, k := range []string{"percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1", "gwet_ac2", "lights_kappa"} {
		var s struct {
			Value  *float64 `json:"value"`
			Reason string   `json:"reason"`
			CI     *struct {
				Lower, Upper float64
				Method       string
			}
		}
		if err := json.Unmarshal(cq1.Statistics[k], &s); err != nil || (s.Value == nil && s.Reason == "") {
			t.Errorf("CQ1 %s: %s", k, cq1.Statistics[k])
		}
		if s.CI != nil && s.CI.Method != agreement.MethodWideBCa {
			t.Errorf("CQ1 %s: interval method %q, want %q", k, s.CI.Method, agreement.MethodWideBCa)
		}
	}

	r = c.get(projectPath(p, "/report.csv?na=missing"))
	wantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("content type %q", ct)
	}
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "rubric_item,statistic,rater_a_id,rater_a,rater_b_id,rater_b,n,value,ci_lower,ci_upper,note" ||
		strings.Join(recs[1], ",") != ",na_treatment,,,,,,,,,missing" {
		t.Fatalf("csv starts %v / %v", recs[0], recs[1])
	}
	named := false
	for _, rec := range recs[1:] {
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])) {
				t.Fatalf("a cell a spreadsheet would run: %q in %v", cell, rec)
			}
			if cell == `'=HYPERLINK("http://evil.example","x")` {
				named = true
			}
		}
	}
	if !named {
		t.Fatal("the neutralised name is not in the CSV")
	}
}

func TestLabelsImportUploadRefusesBadFile(t *testing.T) {
	t.Parallel()
	a, p, c, _, _ := reportApp(t)
	bad := "item,rater,rater_kind,rubric_item,value\na1,Cy,human,CQ1,YES\nnope,Cy,human,CQ1,YES\na1,Cy,human,CQ1,NO\n"
	r := c.upload(projectPath(p, "/labels/import"), nil, "round2.csv", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `data-testid="labels-import-errors"`, "round2.csv was not imported", "<strong>Line 3</strong>",
		"no item has the id &#34;nope&#34; in this project", "<strong>Line 4</strong>", "on line 2", `data-testid="labels-import-form"`)
	var n int
	if err := a.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM raters WHERE name = 'Cy'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a refused file created a rater")
	}
	r = c.upload(projectPath(p, "/labels/import"), nil, "", "")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, "Choose a file to import.")
}

func TestReportOfProjectWithoutLabels(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{rubric: "empathetic-dialogue@2"})
	c := a.client()
	c.mustSignIn(lead)
	r := c.get(projectPath(p, "/report"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="report-empty"`, `data-testid="labels-import-form"`, `data-testid="definitions"`)
	wantLacks(t, r, `data-testid="summary"`)
	r = c.get(projectPath(p, "/report.json"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `"n_items": 0`, `"reason": "fewer than two raters"`)
}

// TestAPIReport: a lead's token reads the same report as report.json, with
// the same query; an annotator of the project is refused, and a lead of
// another project does not see it.
func TestAPIReport(t *testing.T) {
	t.Parallel()
	a, p, c, ann, out := reportApp(t)
	lead, err := a.db.FindUserByEmail(context.Background(), "lee@example.org")
	if err != nil {
		t.Fatal(err)
	}
	page := c.get(projectPath(p, "/report.json?replicates=50&na=missing"))
	wantStatus(t, page, http.StatusOK)
	status, body := a.apiFor(lead).send("GET", fmt.Sprintf("/api/v1/projects/%d/report?replicates=50&na=missing", p.ID), nil, nil)
	if status != http.StatusOK {
		t.Fatalf("report through the API: %d %s", status, body)
	}
	var fromPage, fromAPI any
	if err := json.Unmarshal([]byte(page.body), &fromPage); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(body), &fromAPI); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromPage, fromAPI) {
		t.Fatalf("the API's report differs from report.json:\npage: %.800s\napi:  %.800s", page.body, body)
	}
	if status, _ := a.apiFor(ann).send("GET", fmt.Sprintf("/api/v1/projects/%d/report", p.ID), nil, nil); status != http.StatusForbidden {
		t.Errorf("an annotator's token: %d, want 403", status)
	}
	if status, _ := a.apiFor(out).send("GET", fmt.Sprintf("/api/v1/projects/%d/report", p.ID), nil, nil); status != http.StatusNotFound {
		t.Errorf("another project's lead: %d, want 404", status)
	}
	if status, raw := a.apiFor(lead).send("GET", fmt.Sprintf("/api/v1/projects/%d/report?na=sometimes", p.ID), nil, nil); status != http.StatusUnprocessableEntity || !strings.Contains(raw, "na") {
		t.Errorf("a bad na: %d %s, want 422 naming na", status, raw)
	}
}

// TestReportPageWithheldInterval shows a figure resting on too few
// informative items with the reason in its interval's place: 30 items
// both people call YES on CQ1 but one, which one of them calls NO, so
// AC1 is shown with "1 of the 2 it needs" (agreement.Reach).
func TestReportPageWithheldInterval(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i := range 30 {
		fmt.Fprintf(&items, `{"id":"w%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}]}`+"\n", i, i)
		b := "YES"
		if i == 4 {
			b = "NO"
		}
		fmt.Fprintf(&labels, "w%d,ann,human,CQ1,YES\nw%d,bo,human,CQ1,%s\n", i, i, b)
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "items.jsonl", items.String()), http.StatusSeeOther)
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "labels.csv", labels.String()), http.StatusSeeOther)
	r := c.get(projectPath(p, "/report?item=CQ1&replicates=200"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="no-interval">not enough informative items to bound it (1 of the 2 it needs)<`)
}
