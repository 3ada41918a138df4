package web_test

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// TestBrowserReport reads a report in a real browser: the heatmaps are
// drawn, a cell of the pair matrix lists the items where that pair
// differs, the list leads to the pair's confusion matrix, and a figure's
// explanation opens with a click.
func TestBrowserReport(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	seedBrowserReport(t, c, p)

	ctx := signInBrowser(t, a, "lee@example.org", "/")
	err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+projectPath(p, "")),
		chromedp.Click(chromedp.CSS(`[data-testid=agreement-report]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=pair-matrix] g.cell').length`))
	if err != nil || cells != 25 {
		t.Fatalf("pair matrix has %d cells, want 5 × 5 (%v)", cells, err)
	}
	height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('[data-testid=pair-matrix] svg').getBoundingClientRect().height`))
	if err != nil || height < 200 {
		t.Fatalf("the pair matrix is %v px high: not drawn (%v)", height, err)
	}
	// The cell of Bo (row 2) and judge-b (column 5) lists the items where
	// they differ, and that list leads to their confusion matrix.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=pair-matrix] svg a:nth-of-type(8) rect`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=drill-title]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=drill-title]`)))
	if err != nil || !strings.Contains(heading, "Bo (imported) against judge-b (judge)") {
		t.Fatalf("the cell's list is titled %q (%v)", heading, err)
	}
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=drill-item]').length`))
	if err != nil || listed == 0 {
		t.Fatalf("the cell's list holds %d items (%v)", listed, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=drill-confusion]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=confusion-figures]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=confusion-matrix] figcaption strong`)))
	if err != nil || !strings.Contains(title, "Bo (imported) against judge-b (judge)") {
		t.Fatalf("confusion matrix title %q (%v)", title, err)
	}
	// An explanation opens with a click.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=explain-gwet_ac1] summary`))); err != nil {
		t.Fatal(err)
	}
	open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid=explain-gwet_ac1]').open`))
	if err != nil || !open {
		t.Fatalf("explanation open = %v (%v)", open, err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "report-lead")
}

// seedBrowserReport imports 60 dialogues into p and labels them on every
// criterion: three people and two judges near a per-item truth; one
// person says NO more often than the others, the second judge errs more.
func seedBrowserReport(t *testing.T, c *client, p *attune.Project) {
	t.Helper()
	var items strings.Builder
	for i := range 60 {
		fmt.Fprintf(&items, `{"id":"c%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}]}`+"\n", i, i)
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "pilot.jsonl", items.String()), http.StatusSeeOther)
	// Three people and two judges near a per-item truth; one person says
	// NO more often than the others, the second judge errs more.
	keys := []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(k string) string {
		switch x := rng.IntN(10); {
		case x < 7:
			return "YES"
		case x < 9 || k == "CQ8" || k == "CP2":
			return "NO"
		}
		return "NA"
	}
	var b strings.Builder
	b.WriteString("item,rater,rater_kind,rubric_item,value\n")
	w := csv.NewWriter(&b)
	for i := range 60 {
		for _, k := range keys {
			truth := pick(k)
			for j, r := range []string{"Ann", "Bo", "Cy"} {
				v := truth
				if rng.IntN(6) == 0 {
					v = pick(k)
				}
				if j == 2 && v == "YES" && rng.IntN(4) == 0 {
					v = "NO"
				}
				w.Write([]string{fmt.Sprintf("c%d", i), r, "human", k, v})
			}
			for j, r := range []string{"judge-a", "judge-b"} {
				v := truth
				if rng.IntN(6-3*j) == 0 {
					v = pick(k)
				}
				w.Write([]string{fmt.Sprintf("c%d", i), r, "judge", k, v})
			}
		}
	}
	w.Flush()
	wantStatus(t, c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "round1.csv", b.String()), http.StatusSeeOther)
}
