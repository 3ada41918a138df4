package web_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// linkCQ1 is the CQ1 answers of the link tests' twelve items c00…c11;
// every other criterion is YES for everyone. Gold covers c00…c05.
var linkCQ1 = map[string][]string{
	"Ann":  {"YES", "YES", "NO", "NA", "YES", "YES", "NO", "YES", "NA", "YES", "YES", "NO"},
	"Bo":   {"YES", "NO", "NO", "NA", "YES", "YES", "YES", "YES", "YES", "NO", "YES", "NO"},
	"Cy":   {"YES", "YES", "NO", "YES", "NO", "YES", "NO", "NA", "YES", "YES", "YES", "YES"},
	"jj":   {"YES", "YES", "YES", "NA", "NO", "NO", "NO", "YES", "YES", "YES", "NA", "NO"},
	"gold": {"YES", "NO", "NO", "YES", "NO", "YES"},
}

var linkPeople = []string{"Ann", "Bo", "Cy"}

// linkApp makes the link tests' project: three people and a judge on
// twelve items (linkCQ1), gold on six, signed in as its lead.
func linkApp(t *testing.T) (*app, *attune.Project, *client, map[string]int64) {
	t.Helper()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	var items strings.Builder
	for i := range 12 {
		fmt.Fprintf(&items, `{"id":"c%02d","messages":[{"role":"user","content":"I keep putting it off %d"},{"role":"assistant","content":"What gets in the way?"}]}`+"\n", i, i)
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "items.jsonl", items.String()), http.StatusSeeOther)
	keys := []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}
	var labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	for _, name := range []string{"Ann", "Bo", "Cy", "jj"} {
		kind := "human"
		if name == "jj" {
			kind = "judge"
		}
		for i, v := range linkCQ1[name] {
			for _, k := range keys {
				value := "YES"
				if k == "CQ1" {
					value = v
				}
				fmt.Fprintf(&labels, "c%02d,%s,%s,%s,%s,\n", i, name, kind, k, value)
			}
		}
	}
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "labels.csv", labels.String()), http.StatusSeeOther)
	for i, v := range linkCQ1["gold"] {
		if _, err := a.db.Pool().Exec(t.Context(), `INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
			SELECT id, $2, 'CQ1', $3, 'automatic' FROM items WHERE project_id = $1 AND source_id = $4`,
			p.ID, p.RubricVersionID, v, fmt.Sprintf("c%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	raters, err := a.db.ListProjectRaters(t.Context(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, x := range raters {
		ids[x.Name] = x.ID
	}
	return a, p, c, ids
}

// linkExpect works out from linkCQ1 which items a list must hold: those
// where a's answer and one of bs's differ (NA dropped first when
// naMissing).
func linkExpect(naMissing bool, differ func(i int, answer func(name string) string) bool) []string {
	var out []string
	for i := range 12 {
		answer := func(name string) string {
			vs := linkCQ1[name]
			if i >= len(vs) || (naMissing && vs[i] == "NA") {
				return ""
			}
			return vs[i]
		}
		if differ(i, answer) {
			out = append(out, fmt.Sprintf("c%02d", i))
		}
	}
	return out
}

// differsFrom says whether a answered and one of others answered
// otherwise.
func differsFrom(answer func(string) string, a string, others ...string) bool {
	x := answer(a)
	if x == "" {
		return false
	}
	for _, o := range others {
		if y := answer(o); y != "" && y != x {
			return true
		}
	}
	return false
}

// majority is the one answer most people gave, or "" on a tie or with
// fewer than two answers.
func majority(answer func(string) string) string {
	counts := map[string]int{}
	n := 0
	for _, p := range linkPeople {
		if v := answer(p); v != "" {
			counts[v]++
			n++
		}
	}
	best, top, tie := "", 0, false
	for v, c := range counts {
		switch {
		case c > top:
			best, top, tie = v, c, false
		case c == top:
			tie = true
		}
	}
	if n < 2 || tie {
		return ""
	}
	return best
}

var drillSourceRE = regexp.MustCompile(`data-testid="drill-item">\s*<h2><a [^>]*>\s*<code>([^<]+)</code>`)
var drillNextRE = regexp.MustCompile(`href="([^"]+)" data-testid="drill-next"`)

// listed follows a drill-down link through its pages and returns the
// items listed.
func listed(t *testing.T, c *client, href string) []string {
	t.Helper()
	var out []string
	for page := 0; href != ""; page++ {
		if page > 20 {
			t.Fatalf("%s: more than 20 pages", href)
		}
		r := c.get(html.UnescapeString(href))
		wantStatus(t, r, http.StatusOK)
		for _, m := range drillSourceRE.FindAllStringSubmatch(r.body, -1) {
			out = append(out, m[1])
		}
		href = ""
		if m := drillNextRE.FindStringSubmatch(r.body); m != nil {
			href = m[1]
		}
	}
	return out
}

var hrefRE = regexp.MustCompile(`href="([^"]*/report/items\?[^"]*)"`)

// cellLinks returns the drill-down links of each <td> of a table row.
func cellLinks(row string) [][]string {
	var out [][]string
	for _, cell := range strings.Split(row, "<td")[1:] {
		var links []string
		for _, m := range hrefRE.FindAllStringSubmatch(cell, -1) {
			links = append(links, html.UnescapeString(m[1]))
		}
		out = append(out, links)
	}
	return out
}

// Every figure of a judge's row links to the items behind it, and each
// list holds exactly the items where the two sides differ.
func TestReportJudgeFiguresLinkToTheirItems(t *testing.T) {
	t.Parallel()
	_, p, c, id := linkApp(t)
	judge := id["jj"]
	for _, na := range []bool{false, true} {
		q := "/report?item=CQ1&alt_min_items=2"
		extra := ""
		if na {
			q += "&na=missing"
			extra = "&na=missing"
		}
		r := c.get(projectPath(p, q))
		wantStatus(t, r, http.StatusOK)
		row := regexp.MustCompile(`(?s)<tr data-testid="judge-row" class="current">.*?</tr>`).FindString(r.body)
		if row == "" {
			t.Fatalf("no judge row for CQ1: %.3000s", r.body)
		}
		people := projectPath(p, fmt.Sprintf("/report/items?a=%d&b=people&item=CQ1%s", judge, extra))
		among := projectPath(p, "/report/items?a=people&b=people&item=CQ1"+extra)
		consensus := projectPath(p, fmt.Sprintf("/report/items?a=%d&b=consensus&item=CQ1%s", judge, extra))
		gold := projectPath(p, fmt.Sprintf("/report/items?a=%d&b=gold&item=CQ1%s", judge, extra))
		// The row's cells: items judged, those also labelled by people
		// (and gold), alt-test, ε, winning rate, advantage probability,
		// α annotators, α with the judge, κ with annotators, their range,
		// κ with their consensus.
		want := [][]string{nil, {people, gold}, {people}, nil, {people}, {people}, {among}, {people}, {people}, {among}, {consensus}}
		if got := cellLinks(row); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("na missing %v: the judge row links\n%q\nwant\n%q", na, got, want)
		}

		// Each list holds exactly the items where the sides differ.
		for _, tc := range []struct {
			href   string
			differ func(int, func(string) string) bool
		}{
			{people, func(_ int, ans func(string) string) bool { return differsFrom(ans, "jj", linkPeople...) }},
			{among, func(_ int, ans func(string) string) bool {
				return differsFrom(ans, "Ann", "Bo", "Cy") || differsFrom(ans, "Bo", "Cy")
			}},
			{consensus, func(_ int, ans func(string) string) bool {
				m := majority(ans)
				return m != "" && ans("jj") != "" && ans("jj") != m
			}},
			{gold, func(_ int, ans func(string) string) bool { return differsFrom(ans, "jj", "gold") }},
		} {
			want := linkExpect(na, tc.differ)
			if len(want) == 0 {
				t.Fatalf("%s: the fixture has no such item", tc.href)
			}
			if got := listed(t, c, tc.href); !slices.Equal(got, want) {
				t.Errorf("%s lists %v, want %v", tc.href, got, want)
			}
		}
	}

	// The engine's judge rows link their figures too.
	r := c.get(projectPath(p, "/report"))
	gate := regexp.MustCompile(`(?s)<table class="figures" data-testid="engine-gate-judges">.*?</table>`).FindString(r.body)
	wantIn(t, gate, fmt.Sprintf(`/report/items?a=%d&amp;b=people&amp;item=%%40gate" data-testid="pair-items"`, judge),
		fmt.Sprintf(`href="/projects/%d/report/items?a=%d&amp;b=people&amp;item=%%40gate" title="The items behind this figure"`, p.ID, judge))
}

// A cell of the pair matrix lists the items where its two annotators
// differ; the pair's confusion matrix stays one click away, and its
// cells list their own items.
func TestReportPairMatrixLinksToItems(t *testing.T) {
	t.Parallel()
	_, p, c, id := linkApp(t)
	ann, bo := id["Ann"], id["Bo"]
	r := c.get(projectPath(p, "/report?item=CQ1"))
	wantStatus(t, r, http.StatusOK)
	matrix := regexp.MustCompile(`(?s)<figure class="heatmap" data-testid="pair-matrix">.*?</figure>`).FindString(r.body)
	pair := fmt.Sprintf(`/projects/%d/report/items?a=%d&amp;b=%d&amp;item=CQ1`, p.ID, ann, bo)
	wantIn(t, matrix, `href="`+pair+`"`)
	want := linkExpect(false, func(_ int, ans func(string) string) bool { return differsFrom(ans, "Ann", "Bo") })
	if got := listed(t, c, pair); !slices.Equal(got, want) {
		t.Fatalf("Ann and Bo: %v, want %v", got, want)
	}

	// The list of pairs beside the matrix: the same items, and the
	// confusion matrix.
	list := regexp.MustCompile(`(?s)<details class="pairs" data-testid="pair-list">.*?</details>`).FindString(r.body)
	confusion := fmt.Sprintf(`/projects/%d/report?a=%d&amp;b=%d&amp;item=CQ1#item`, p.ID, ann, bo)
	wantIn(t, list, `href="`+pair+`" data-testid="pair-list-items"`, `href="`+confusion+`" data-testid="pair-confusion"`)
	drill := c.get(html.UnescapeString(pair))
	wantContains(t, drill, `href="`+confusion+`" data-testid="drill-confusion"`)
	r = c.get(html.UnescapeString(confusion))
	wantContains(t, r, "Confusion matrix: Ann (imported) against Bo (imported)")
	// Ann YES, Bo NO: one cell's items.
	cell := fmt.Sprintf(`/projects/%d/report/items?a=%d&amp;b=%d&amp;item=CQ1&amp;va=YES&amp;vb=NO`, p.ID, ann, bo)
	wantContains(t, r, `href="`+cell+`"`)
	want = linkExpect(false, func(_ int, ans func(string) string) bool { return ans("Ann") == "YES" && ans("Bo") == "NO" })
	if got := listed(t, c, cell); !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("Ann YES, Bo NO: %v, want %v", got, want)
	}

	// The consensus is a side b only, against a rater.
	for q, why := range map[string]string{
		"item=CQ1&a=people&b=consensus":                         "put the rater first",
		fmt.Sprintf("item=%%40gate&a=%d&b=consensus", id["jj"]): "outputs compare with the people",
		"item=CQ1&set=all":                                      "not a set of items",
		"item=CQ1&na=maybe":                                     "neither category nor missing",
	} {
		r := c.get(projectPath(p, "/report/items?"+q))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, why)
	}
}
