package web_test

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/store"
)

// The items behind a judge's figures and a pair's confusion matrix: the
// report links to them, the list shows each item's dialogue and every
// answer, and only the project's leads see it.
func TestReportDrillDown(t *testing.T) {
	t.Parallel()
	a, p, c, ann, out := reportApp(t)
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
	items := func(r response) int { return strings.Count(r.body, `data-testid="drill-item"`) }

	// The report links each judge row and each confusion cell to its items.
	r := c.get(projectPath(p, fmt.Sprintf("/report?item=CQ1&a=%d&b=%d", judge, bo)))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="judge-items"`, `data-testid="judge-gold-items"`, `data-testid="confusion-items"`,
		fmt.Sprintf(`/report/items?a=%d&amp;b=people&amp;item=CQ1`, judge),
		fmt.Sprintf(`/report/items?a=%d&amp;b=gold&amp;item=CQ1`, judge),
		fmt.Sprintf(`/report/items?a=%d&amp;b=%d&amp;item=CQ1&amp;va=NO&amp;vb=NA`, judge, bo))

	// On CQ1 the judge said NO on a1 and YES on a2; Bo said NA on both.
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=CQ1&a=%d&b=people", judge)))
	wantStatus(t, r, http.StatusOK)
	if n := items(r); n != 2 {
		t.Fatalf("%d items, want 2: %.2000s", n, r.body)
	}
	wantContains(t, r, "gpt-judge (judge) against the people", "answered differently", `data-testid="drill-dialogue"`, "I feel alone",
		"gpt-judge (judge): NO · the people: ", `data-testid="drill-method">imported<`, "Bo (imported)",
		"=HYPERLINK(&#34;http://evil.example&#34;,&#34;x&#34;) (imported)",
		// A rater's name starts the label as it is stored; a phrase of
		// attune's is capitalized; the count reads as one sentence.
		">gpt-judge (judge) answered<", ">The people answered<", "2 items, in the order they were imported.")
	wantLacks(t, r, "Gpt-judge", "imported ;", "imported\n")
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=CQ1&a=%d&b=%d&va=NO&vb=NA", judge, bo)))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "<code>a1</code>", "Items where gpt-judge (judge) answered NO and Bo (imported) answered NA.", `<option value="NO" selected>`)
	if n := items(r); n != 1 {
		t.Fatalf("one cell: %d items, want 1", n)
	}
	// The diagonal lists agreement; a pair that never differs lists nothing.
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=CQ2&a=%d&b=%d&va=YES&vb=YES", judge, bo)))
	if n := items(r); n != 2 {
		t.Fatalf("CQ2 YES/YES: %d items, want 2", n)
	}
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=CQ2&a=%d&b=%d", judge, bo)))
	wantContains(t, r, `data-testid="drill-empty"`)
	// No gold yet: nothing differs from it.
	wantContains(t, c.get(projectPath(p, fmt.Sprintf("/report/items?item=CQ1&a=%d&b=gold", judge))), `data-testid="drill-empty"`)
	// The people among themselves, the default.
	r = c.get(projectPath(p, "/report/items"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "CQ1: the people among themselves")
	if n := items(r); n != 2 {
		t.Fatalf("people: %d items, want 2", n)
	}
	// Pages go by item: after a1 comes a2 alone, with the way back.
	page, err := a.db.DrillItems(t.Context(), p.ID, store.DrillFilter{Key: "CQ1", A: judge})
	first := page.Items
	if err != nil || len(first) != 2 {
		t.Fatalf("%v %v", first, err)
	}
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=CQ1&a=%d&b=people&after=%d", judge, first[0].ItemID)))
	wantContains(t, r, "<code>a2</code>", `data-testid="drill-first"`)
	wantLacks(t, r, "<code>a1</code>", `data-testid="drill-next"`)

	// The engine's outputs: the judge answered as the first person did, so
	// their safety gates agree on both items and differ on none.
	var first0 int64
	for _, x := range raters {
		if strings.HasPrefix(x.Name, "=HYPERLINK") {
			first0 = x.ID
		}
	}
	wantContains(t, c.get(projectPath(p, "/report")), `data-testid="pair-items"`, fmt.Sprintf(`/report/items?a=%d&amp;b=people&amp;item=%%40gate`, judge))
	same := 0
	for _, cell := range []string{"va=failed&vb=failed", "va=held&vb=held"} {
		r := c.get(projectPath(p, fmt.Sprintf("/report/items?item=@gate&a=%d&b=%d&%s", judge, first0, cell)))
		wantStatus(t, r, http.StatusOK)
		same += items(r)
	}
	if same != 2 {
		t.Fatalf("%d items on the gate's diagonal, want 2", same)
	}
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=@gate&a=%d&b=%d", judge, first0)))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="drill-empty"`, "differ on the safety gate")
	// Against Bo the four cells part the two items, and the items that
	// differ are the two cells off the diagonal.
	cells, off := 0, 0
	for _, va := range []string{"pass", "fail"} {
		for _, vb := range []string{"pass", "fail"} {
			n := items(c.get(projectPath(p, fmt.Sprintf("/report/items?item=@pass&a=%d&b=%d&va=%s&vb=%s", judge, bo, va, vb))))
			cells += n
			if va != vb {
				off += n
			}
		}
	}
	if differ := items(c.get(projectPath(p, fmt.Sprintf("/report/items?item=@pass&a=%d&b=%d", judge, bo)))); cells != 2 || differ != off {
		t.Fatalf("pass cells hold %d items, want 2; %d differ, want %d", cells, differ, off)
	}
	r = c.get(projectPath(p, fmt.Sprintf("/report/items?item=@pass&a=%d&b=people", judge)))
	wantStatus(t, r, http.StatusOK)
	for _, q := range []string{"item=@gate&a=people", fmt.Sprintf("item=@gate&a=%d&va=maybe", judge)} {
		wantStatus(t, c.get(projectPath(p, "/report/items?"+q)), http.StatusUnprocessableEntity)
	}

	// Bad choices are refused, saying why.
	for q, why := range map[string]string{
		"item=ZZ":             "not an item",
		"item=CQ1&a=99999999": "not a rater of this project",
		fmt.Sprintf("item=CQ1&a=%d&va=MAYBE", judge):   "not an answer of CQ1",
		fmt.Sprintf("item=CQ1&a=%d&boundary=2", judge): "not a boundary",
		fmt.Sprintf("item=CQ1&a=people&b=%d", judge):   "put the rater first",
		fmt.Sprintf("item=CQ1&a=%d&b=%d", bo, bo):      "two different raters",
		"item=CQ1&after=x":                             "item to list after",
	} {
		r := c.get(projectPath(p, "/report/items?"+q))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, why)
	}

	// The project's annotator and another project's lead are refused.
	annC := a.client()
	annC.mustSignIn(ann)
	if r := annC.get(projectPath(p, "/report/items?item=CQ1")); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
		t.Fatalf("annotator: %d", r.StatusCode)
	}
	outC := a.client()
	outC.mustSignIn(out)
	wantStatus(t, outC.get(projectPath(p, "/report/items?item=CQ1")), http.StatusNotFound)
}

// A judge's row in the list carries how it answered and its raw reply.
func TestReportDrillDownShowsJudgeCalls(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	jd := j.createJudge(t, j.judgeValues("Runner"))
	ann := j.a.user("ann@example.org", attune.RoleAnnotator)
	j.a.member(j.project, ann, attune.MemberAnnotator)
	api := j.a.apiFor(ann)
	status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", j.project.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	item := int64(next["item"].(map[string]any)["id"].(float64))
	if status, body := api.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers}); status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, body)
	}
	if done := j.work(t, j.startRun(t, jd.ID, "", "5").ID); done.Status != attune.RunCompleted {
		t.Fatalf("run ended %s (%s)", done.Status, done.Reason)
	}
	raters, err := j.a.db.ListProjectRaters(t.Context(), j.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	var judge int64
	for _, x := range raters {
		if x.Kind == "judge" {
			judge = x.ID
		}
	}
	answers, err := j.a.db.JudgeItemAnswers(t.Context(), judge, item)
	if err != nil || len(answers) == 0 {
		t.Fatalf("judge answers: %v %v", answers, err)
	}
	a := answers[0]
	r := j.c.get(projectPath(j.project, fmt.Sprintf("/report/items?item=%s&a=%d&b=people&va=%s&vb=%s", a.Key, judge, a.Value, likertAnswers[a.Key])))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="drill-item"`, `data-testid="drill-method">`+a.Method+`<`, `data-testid="drill-raw"`, "Runner (judge)", "ann@example.org")
	if a.Raw == "" || !strings.Contains(r.body, html.EscapeString(a.Raw)) {
		t.Fatalf("the raw reply %q is not shown: %.3000s", a.Raw, r.body)
	}
}

// On a 1–5 item the report says on which boundary the disagreement falls,
// beside the rubric's guidance, each share one click from its items.
func TestReportBoundaries(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{rubric: "empathetic-dialogue@2"})
	c := a.client()
	c.mustSignIn(lead)
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "pilot.jsonl", goodJSONL), http.StatusSeeOther)
	// emotion: a1 Ann 3, Bo 4, judge 1; a2 Ann 4, Bo 4, judge 4.
	labels := "item,rater,rater_kind,rubric_item,value\na1,Ann,human,emotion,3\na1,Bo,human,emotion,4\na1,j,judge,emotion,1\n" +
		"a2,Ann,human,emotion,4\na2,Bo,human,emotion,4\na2,j,judge,emotion,4\n"
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "round1.csv", labels), http.StatusSeeOther)
	raters, err := a.db.ListProjectRaters(t.Context(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var judge int64
	for _, x := range raters {
		if x.Kind == "judge" {
			judge = x.ID
		}
	}
	r := c.get(projectPath(p, "/report?item=emotion"))
	wantStatus(t, r, http.StatusOK)
	if n := strings.Count(r.body, `data-testid="boundary-row"`); n != 4 {
		t.Fatalf("%d boundary rows, want 4", n)
	}
	// The people's one disagreement (3 against 4) is all on 3|4; the
	// judge's (1 against 3, 1 against 4) puts 1/2 + 1/3 on 1|2 and 2|3,
	// 1/3 on 3|4: shares 5/12, 5/12, 1/6.
	wantContains(t, r, `data-testid="boundaries"`, "j (judge) against people", "specifically named",
		`data-testid="boundary-share">100 %<`, `data-testid="boundary-share">42 %<`, `data-testid="boundary-share">17 %<`,
		`/report/items?a=people&amp;b=people&amp;boundary=3&amp;item=emotion`,
		fmt.Sprintf(`/report/items?a=%d&amp;b=people&amp;boundary=1&amp;item=emotion`, judge))
	// One click away: the items across 3|4, with the rule that should settle them.
	r = c.get(projectPath(p, "/report/items?a=people&b=people&boundary=3&item=emotion"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="drill-guidance"`, "specifically named", "across the boundary 3|4", "<code>a1</code>", `<option value="3" selected>3|4</option>`)
	if n := strings.Count(r.body, `data-testid="drill-item"`); n != 1 {
		t.Fatalf("%d items across 3|4, want 1", n)
	}
	// A 1–5 rubric has no safety gate to list by.
	wantStatus(t, c.get(projectPath(p, fmt.Sprintf("/report/items?item=@gate&a=%d", judge))), http.StatusUnprocessableEntity)
	// The report's JSON carries the same split.
	j := c.get(projectPath(p, "/report.json"))
	wantContains(t, j, `"boundaries": {`, `"n_disagreements": 1`, `"n_crossing": 1`)
}
