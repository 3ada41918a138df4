package web_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/report"
)

// TestExperimentPage compares two judges on the gold items in the
// browser: one answers as the people did, the other passes every
// dialogue, two of which the people failed on safety. The page shows
// both variants' figures as experiment.Run computes them on the same
// input, links them to their items, and only the project's leads see it.
func TestExperimentPage(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := t.Context()
	lead := a.user("lee@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	other := a.user("out@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	a.member(p, ann, attune.MemberAnnotator)
	a.project(other, projectOpts{name: "Elsewhere"})
	c := a.client()
	c.mustSignIn(lead)

	// Before any judge has answered, the page says so.
	r := c.get(projectPath(p, "/experiment"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="experiment-note"`, "No judge or prompt version has answered")

	var items strings.Builder
	for i := range 5 {
		fmt.Fprintf(&items, `{"id":"c%d","messages":[{"role":"user","content":"I feel stuck %d"},{"role":"assistant","content":"What would help most?"}]}`+"\n", i, i)
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "items.jsonl", items.String()), http.StatusSeeOther)
	passing := map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
		"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}
	// The judges answer first: without people's labels no item has gold.
	// The people's labels come next, and settle gold as they arrive.
	var labels, people strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	people.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	for i := range 5 {
		for key, v := range passing {
			want := v
			if key == "CQ8" && i >= 2 {
				want = "NO" // c2, c3 (and c4) fail the safety gate
			}
			fmt.Fprintf(&people, "c%d,ann,human,%s,%s,\n", i, key, want)
			if i < 4 { // c4 has one person only: not in the frozen set
				fmt.Fprintf(&people, "c%d,bo,human,%s,%s,\n", i, key, want)
			}
			fmt.Fprintf(&labels, "c%d,exact,judge,%s,%s,\n", i, key, want)
			fmt.Fprintf(&labels, "c%d,lenient,judge,%s,%s,\n", i, key, v)
		}
	}
	r = c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "judges.csv", labels.String())
	wantStatus(t, r, http.StatusSeeOther)

	// Judges without gold: nothing to compare yet.
	r = c.get(projectPath(p, "/experiment"))
	wantContains(t, r, "No item has gold answers", `value="exact" checked`, `value="lenient" checked`)
	r = c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "people.csv", people.String())
	wantStatus(t, r, http.StatusSeeOther)

	// The project and report pages lead here.
	wantContains(t, c.get(projectPath(p, "")), `data-testid="judge-experiment"`, projectPath(p, "/experiment"))
	wantContains(t, c.get(projectPath(p, "/report")), `data-testid="judge-experiment"`, projectPath(p, "/experiment"))

	r = c.get(projectPath(p, "/experiment?judge=exact&judge=lenient"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "4 frozen items, 2 variants.", "Alt-test ε = ", "simultaneous 95% interval (max-t bootstrap over all pairs of variants)")

	// The same input through experiment.Run gives the figures shown.
	vs := []experiment.Variant{{Judge: "exact", Version: 1}, {Judge: "lenient", Version: 1}}
	in, raters, err := a.db.ExperimentInput(ctx, p.ID, vs)
	if err != nil {
		t.Fatal(err)
	}
	if in.Def, err = a.db.FindRubricByID(ctx, p.RubricVersionID); err != nil {
		t.Fatal(err)
	}
	eps := p.Epsilon
	if eps == 0 {
		eps = report.DefaultEpsilon
	}
	in.Bootstrap = report.DefaultBootstrap
	res, err := experiment.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	// The page's alt-test is the report's, on every shared item.
	proj, err := a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = report.ExperimentAltTests(ctx, a.db, proj, res, raters.Variants, eps); err != nil {
		t.Fatal(err)
	}
	row := func(testid, key, variant string) string {
		t.Helper()
		attrs := fmt.Sprintf(`data-testid="%s"`, testid)
		if key != "" {
			attrs += fmt.Sprintf(` data-key="%s"`, key)
		}
		m := regexp.MustCompile(`(?s)<tr ` + regexp.QuoteMeta(attrs+fmt.Sprintf(` data-variant="%s"`, variant)) + `.*?</tr>`).FindString(r.body)
		if m == "" {
			t.Fatalf("no %s row for %s %s in %.3000s", testid, key, variant, r.body)
		}
		return m
	}
	cell := func(row, testid string, st experiment.Stat) {
		t.Helper()
		m := regexp.MustCompile(`(?s)<td[^>]*data-testid="` + testid + `"[^>]*>(.*?)</td>`).FindStringSubmatch(row)
		if m == nil {
			t.Fatalf("no %s cell in %s", testid, row)
		}
		want := "undefined"
		if st.Reason != "" {
			want = st.Reason
		}
		got := strings.Join(strings.Fields(m[1]), " ")
		if st.Value != nil {
			if !strings.Contains(got, fmt.Sprintf("%.2f<", *st.Value)) ||
				(st.Lower != nil && !strings.Contains(got, fmt.Sprintf(`<span class="ci">%.2f–%.2f</span>`, *st.Lower, *st.Upper))) {
				t.Errorf("%s: cell %q, want %s", testid, got, fmtStat(st))
			}
			return
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: cell %q, want %q", testid, got, want)
		}
	}
	for _, ri := range res.RubricItems {
		for _, v := range ri.Variants {
			tr := row("item-row", ri.Key, v.Variant)
			cell(tr, "kappa", v.KappaGold)
			cell(tr, "kappa-diff", v.KappaDiff)
			verdictShown(t, tr, v.VersusBest)
			cell(tr, "winning-rate", v.AltTest.WinningRate)
			cell(tr, "advantage", v.AltTest.AdvantageProbability)
			if best := strings.Contains(tr, `data-testid="best"`); best != (v.Variant == ri.Best) {
				t.Errorf("%s %s: marked best %v, best is %q", ri.Key, v.Variant, best, ri.Best)
			}
			verdict := "failed"
			if v.AltTest.Result == "cannot_tell" {
				verdict = "cannot tell: " + v.AltTest.Progress
			} else if v.AltTest.Passed {
				verdict = "passed"
			}
			if !strings.Contains(tr, ">"+verdict+"<") || !strings.Contains(tr, fmt.Sprintf("ε %g, %d people", v.AltTest.Epsilon, v.AltTest.Humans)) {
				t.Errorf("%s %s: alt-test %+v not shown in %s", ri.Key, v.Variant, v.AltTest, tr)
			}
		}
		if ri.Key == "CQ8" {
			tr := row("item-row", "CQ8", "exact")
			wantIn(t, tr, fmt.Sprintf(`/report/items?a=%d&amp;b=gold&amp;item=CQ8`, raters.Variants[0]), "1.00<", `data-testid="best"`)
		}
	}
	for v, s := range res.Scores {
		tr := row("score-row", "", s.Variant)
		cell(tr, "sensitivity", s.Gate.Sensitivity)
		cell(tr, "specificity", s.Gate.Specificity)
		cell(tr, "pass-agreement", s.PassAgreement)
		cell(tr, "mae", s.MAE)
		cell(tr, "mae-diff", s.MAEDiff)
		verdictShown(t, tr, s.VersusBest)
		wantIn(t, tr, fmt.Sprintf("%d of %d</a>", len(s.Gate.Misses), s.Gate.GoldFailed),
			fmt.Sprintf(`/report/items?a=%d&amp;b=gold&amp;item=%%40gate&amp;set=frozen&amp;va=held&amp;vb=failed`, raters.Variants[v]))
	}
	// The lenient judge misses the two safety failures; its misses link
	// lists exactly them.
	if s := res.Scores[1]; s.Variant != "lenient" || len(s.Gate.Misses) != 2 || s.Gate.GoldFailed != 2 {
		t.Fatalf("lenient: %+v", s)
	}
	wantIn(t, row("score-row", "", "exact"), `data-testid="best"`)
	drill := c.get(projectPath(p, fmt.Sprintf("/report/items?a=%d&b=gold&item=%%40gate&va=held&vb=failed", raters.Variants[1])))
	wantStatus(t, drill, http.StatusOK)
	if n := strings.Count(drill.body, `data-testid="drill-item"`); n != 2 {
		t.Errorf("the misses' list has %d items, want 2", n)
	}

	// Kappa with each person, folded under its range, each linked to the
	// frozen items where the variant and that person differ.
	for _, ri := range res.RubricItems {
		for v, vr := range ri.Variants {
			tr := row("item-row", ri.Key, vr.Variant)
			if len(vr.KappaPeople) != 2 {
				t.Fatalf("%s %s: kappa with %d people", ri.Key, vr.Variant, len(vr.KappaPeople))
			}
			// The alt-test links to every item shared with the people,
			// the items it ran on, as the report's does.
			wantIn(t, tr, `data-testid="kappa-people-range"`,
				fmt.Sprintf(`href="/projects/%d/report/items?a=%d&amp;b=people&amp;item=%s"`, p.ID, raters.Variants[v], ri.Key))
			for h, pk := range vr.KappaPeople {
				li := regexp.MustCompile(`(?s)<li data-testid="kappa-person" data-person="` + regexp.QuoteMeta(pk.Person+" (imported)") + `">.*?</li>`).FindString(tr)
				if li == "" {
					t.Fatalf("%s %s: no kappa with %s in %s", ri.Key, vr.Variant, pk.Person, tr)
				}
				wantIn(t, li, fmt.Sprintf("%d items", pk.Items))
				if pk.Kappa.Value != nil {
					wantIn(t, li, fmt.Sprintf(`href="/projects/%d/report/items?a=%d&amp;b=%d&amp;item=%s&amp;set=frozen">%.2f<`,
						p.ID, raters.Variants[v], raters.Humans[h], ri.Key, *pk.Kappa.Value))
				} else {
					wantIn(t, li, pk.Kappa.Reason)
				}
			}
		}
	}
	// The lenient judge passes c2 and c3 on CQ8, which the people fail; c4
	// too, which only ann labelled and is not among the frozen items.
	var annID int64
	for h, name := range in.Humans {
		if name == "ann" {
			annID = raters.Humans[h]
		}
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{fmt.Sprintf("a=%d&b=%d&item=CQ8&set=frozen", raters.Variants[1], annID), []string{"c2", "c3"}},
		{fmt.Sprintf("a=%d&b=%d&item=CQ8", raters.Variants[1], annID), []string{"c2", "c3", "c4"}},
		{fmt.Sprintf("a=%d&b=people&item=CQ8&set=frozen", raters.Variants[1]), []string{"c2", "c3"}},
		{fmt.Sprintf("a=%d&b=people&item=CQ8&set=frozen", raters.Variants[0]), nil},
		{fmt.Sprintf("a=%d&b=gold&item=%%40gate&set=frozen&va=held&vb=failed", raters.Variants[1]), []string{"c2", "c3"}},
		{fmt.Sprintf("a=%d&b=gold&item=%%40gate&set=frozen&va=failed&vb=held", raters.Variants[1]), nil},
	} {
		if got := listed(t, c, projectPath(p, "/report/items?"+tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %v, want %v", tc.query, got, tc.want)
		}
	}
	// The safety gate's sensitivity links to the misses, its specificity
	// to the false alarms.
	for v, s := range res.Scores {
		tr := row("score-row", "", s.Variant)
		if s.Gate.Sensitivity.Value != nil {
			wantIn(t, tr, fmt.Sprintf(`/report/items?a=%d&amp;b=gold&amp;item=%%40gate&amp;set=frozen&amp;va=held&amp;vb=failed`, raters.Variants[v]))
		}
		if s.Gate.Specificity.Value != nil {
			wantIn(t, tr, fmt.Sprintf(`/report/items?a=%d&amp;b=gold&amp;item=%%40gate&amp;set=frozen&amp;va=failed&amp;vb=held`, raters.Variants[v]))
		}
		wantIn(t, tr, fmt.Sprintf(`/report/items?a=%d&amp;b=gold&amp;item=%%40pass&amp;set=frozen`, raters.Variants[v]))
	}

	// One variant alone, and bad choices.
	r = c.get(projectPath(p, "/experiment?judge=lenient"))
	wantContains(t, r, "4 frozen items, 1 variants.", `value="exact">`, `value="lenient" checked`)
	wantStatus(t, c.get(projectPath(p, "/experiment?judge=nobody")), http.StatusNotFound)
	wantStatus(t, c.get(projectPath(p, "/experiment?judge=exact@2")), http.StatusNotFound)
	if r := c.get(projectPath(p, "/experiment?judge=exact@0")); r.StatusCode < 400 || r.StatusCode >= 500 {
		t.Errorf("version 0: status %d", r.StatusCode)
	}

	// Only the project's leads.
	ca := a.client()
	ca.mustSignIn(ann)
	if r := ca.get(projectPath(p, "/experiment")); r.StatusCode != http.StatusForbidden && r.StatusCode != http.StatusNotFound {
		t.Errorf("annotator: status %d", r.StatusCode)
	}
	co := a.client()
	co.mustSignIn(other)
	wantStatus(t, co.get(projectPath(p, "/experiment")), http.StatusNotFound)
}

// verdictShown checks that a row shows the verdict against the best that
// the simultaneous interval gives, and none for the best itself.
func verdictShown(t *testing.T, row, verdict string) {
	t.Helper()
	shown := regexp.MustCompile(`data-testid="verdict-vs-best"[^>]*>([^<]*)<`).FindStringSubmatch(row)
	switch {
	case verdict == experiment.VerdictBest && shown != nil:
		t.Errorf("the best shows a verdict %q", shown[1])
	case verdict != experiment.VerdictBest && (shown == nil || shown[1] != verdict):
		t.Errorf("verdict %q not shown in %s", verdict, row)
	}
}

func wantIn(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("missing %q in %s", p, s)
		}
	}
}

func fmtStat(st experiment.Stat) string {
	if st.Value == nil {
		return "undefined: " + st.Reason
	}
	s := fmt.Sprintf("%.2f", *st.Value)
	if st.Lower != nil {
		s += fmt.Sprintf(" [%.2f–%.2f]", *st.Lower, *st.Upper)
	}
	return s
}

// TestReportAndExperimentAgree: on a project where 40 items are shared by
// three people and a judge but only some have gold, the report and the
// experiment page give the judge the same alternative annotator test —
// the same verdict and winning rate — because both run it on every
// shared item, and the experiment page says so.
func TestReportAndExperimentAgree(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := t.Context()
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{rubric: "empathetic-understanding@1"})
	c := a.client()
	c.mustSignIn(lead)
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i := range 40 {
		fmt.Fprintf(&items, `{"id":"s%d","messages":[{"role":"user","content":"I feel stuck %d"},{"role":"assistant","content":"What would help most?"}]}`+"\n", i, i)
		// The people agree on the first 19 items (gold by consensus) and
		// are far apart on the rest (no gold): the frozen set is a subset
		// of the shared items.
		vs := []int{1 + i%5, 1 + i%5, 1 + i%5}
		if i >= 19 {
			vs = []int{1, 3, 5}
		}
		for h, v := range vs {
			fmt.Fprintf(&labels, "s%d,p%d,human,understanding,%d\n", i, h, v)
		}
		fmt.Fprintf(&labels, "s%d,jd,judge,understanding,%d\n", i, vs[i%3])
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "items.jsonl", items.String()), http.StatusSeeOther)
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "labels.csv", labels.String()), http.StatusSeeOther)
	gold, err := a.db.CountGold(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := gold.Automatic + gold.Adjudicated; n == 0 || n >= 40 {
		t.Fatalf("%d items with gold, want some but not all", n)
	}

	cellText := func(body, testid string) string {
		t.Helper()
		m := regexp.MustCompile(`(?s)<td[^>]*data-testid="` + testid + `"[^>]*>(.*?)</td>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s cell in %.3000s", testid, body)
		}
		return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], " ")), " ")
	}
	rep := c.get(projectPath(p, "/report"))
	wantStatus(t, rep, http.StatusOK)
	exp := c.get(projectPath(p, "/experiment?judge=jd"))
	wantStatus(t, exp, http.StatusOK)
	wantContains(t, exp, fmt.Sprintf("%d frozen items", gold.Automatic+gold.Adjudicated), "on every item a variant and at least two people answered")

	// The report's cell: its verdict word and winning rate.
	repCell := cellText(rep.body, "verdict-alt")
	expVerdict, expRate := cellText(exp.body, "alt"), cellText(exp.body, "winning-rate")
	word := strings.Fields(repCell)[0]
	if word != "passed" && word != "failed" {
		t.Fatalf("report: %q, want a verdict on 40 shared items and three people", repCell)
	}
	if !strings.HasPrefix(expVerdict, word+" ") {
		t.Errorf("experiment says %q, report %q", expVerdict, repCell)
	}
	if !strings.Contains(repCell, expRate) {
		t.Errorf("winning rate: experiment %q, report %q", expRate, repCell)
	}

	// The same through the report and the experiment's code directly.
	proj, err := a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	full, err := report.Build(ctx, a.db, proj, report.Options{Alt: report.AltOptions{Epsilon: report.DefaultEpsilon}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := expAlt(ctx, a, proj)
	if err != nil {
		t.Fatal(err)
	}
	ra := full.RubricItems[0].Judges[0].AltTest
	if ra.Result != x.Result || ra.Tested != x.Humans || *ra.WinningRate.Value != *x.WinningRate.Value {
		t.Errorf("report %+v, experiment %+v", ra, x)
	}
}

// expAlt is the experiment's alt-test of judge jd on the project's only
// rubric item, as the page computes it.
func expAlt(ctx context.Context, a *app, p *attune.Project) (experiment.AltTest, error) {
	in, raters, err := a.db.ExperimentInput(ctx, p.ID, []experiment.Variant{{Judge: "jd", Version: 1}})
	if err != nil {
		return experiment.AltTest{}, err
	}
	if in.Def, err = a.db.FindRubricByID(ctx, p.RubricVersionID); err != nil {
		return experiment.AltTest{}, err
	}
	res, err := experiment.Run(in)
	if err != nil {
		return experiment.AltTest{}, err
	}
	if res, err = report.ExperimentAltTests(ctx, a.db, p, res, raters.Variants, report.DefaultEpsilon); err != nil {
		return experiment.AltTest{}, err
	}
	return res.RubricItems[0].Variants[0].AltTest, nil
}
