package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// TestBrowserReportVerdictsFirst opens the report on a laptop's screen
// (1366×850): the verdicts — each judge's alt-test and each rubric item's
// alpha with its band — sit on the first screen, the filters are one
// closed line, and a table too wide for its panel scrolls in its own box,
// its first column kept in view, while the page never scrolls sideways.
func TestBrowserReportVerdictsFirst(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.client()
	c.mustSignIn(lead)
	seedBrowserReport(t, c, p)

	ctx := signInBrowser(t, a, "lee@example.org", "/")
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1366, 850),
		chromedp.Navigate(a.srv.URL+projectPath(p, "/report")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=verdicts]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "report-verdicts")
	// What the first screen shows, for people to look at.
	first, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/screenshots/report-verdicts-first-screen.png", first, 0o644); err != nil {
		t.Fatal(err)
	}

	type box struct {
		Judges, Items, Bands int
		Bottom, ViewHeight   float64
		ScrollY              float64
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(() => {
		const panel = document.querySelector('[data-testid=verdicts]');
		let bottom = 0;
		for (const el of panel.querySelectorAll('[data-testid=verdict-judge], [data-testid=verdict-item]')) {
			bottom = Math.max(bottom, el.getBoundingClientRect().bottom);
		}
		return {
			Judges: panel.querySelectorAll('[data-testid=verdict-judge] [data-testid=verdict-judge-result]').length,
			Items: panel.querySelectorAll('[data-testid=verdict-item] [data-testid=verdict-band]').length,
			Bands: [...panel.querySelectorAll('[data-testid=verdict-band]')].filter(b => /^(good|tentative|poor|undefined)$/.test(b.textContent.trim())).length,
			Bottom: bottom, ViewHeight: window.innerHeight, ScrollY: window.scrollY,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if v.Judges != 2 || v.Items != 12 || v.Bands != 12 {
		t.Fatalf("verdicts: %d judges, %d rubric items, %d band words; want 2, 12, 12", v.Judges, v.Items, v.Bands)
	}
	if v.ViewHeight != 850 || v.ScrollY != 0 {
		t.Fatalf("the window is %v px high, scrolled %v: want 850 and 0", v.ViewHeight, v.ScrollY)
	}
	if v.Bottom > 850 || v.Bottom == 0 {
		t.Fatalf("the last verdict ends %v px down: want it within the first 850 px", v.Bottom)
	}

	// The filters are one closed line saying what they keep.
	type bar struct {
		Open        bool
		FormVisible bool
		Height      float64
		Summary     string
	}
	f, err := chromedp.Run(ctx, chromedp.Evaluate[bar](`(() => {
		const d = document.querySelector('[data-testid=report-filter-bar]');
		const form = d.querySelector('[data-testid=report-filters]');
		return {Open: d.open, FormVisible: form.checkVisibility(), Height: d.querySelector('summary').getBoundingClientRect().height,
			Summary: d.querySelector('summary').textContent};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Open || f.FormVisible || f.Height > 40 {
		t.Fatalf("filter bar open=%v, form shown=%v, summary %v px high: want closed, hidden, one line", f.Open, f.FormVisible, f.Height)
	}
	if !strings.Contains(f.Summary, "All raters · all dates · NA an answer · ε 0.15") {
		t.Errorf("the filter bar says %q", f.Summary)
	}
	// It opens without a script of ours: a details element.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=report-filter-bar] summary`))); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid=report-filters]').checkVisibility()`))
	if err != nil || !shown {
		t.Fatalf("the filter form is not shown once its bar is clicked (%v)", err)
	}

	// The annotators' table, a leniency column per rubric item, is wider
	// than its panel: its box scrolls, the page does not.
	type scroll struct {
		PageWidth, ViewWidth       float64
		Wide, Client, Left         float64
		Overflow, ScrollbarWidth   string
		ScrollbarColor             string
		FirstBefore, FirstAfter    float64
		PageScrollX, SecondShifted float64
	}
	s, err := chromedp.Run(ctx, chromedp.Evaluate[scroll](`(() => {
		const box = document.querySelector('[data-testid=annotators] .table-scroll');
		const first = box.querySelector('tbody tr th');
		const second = box.querySelector('tbody tr td');
		const before = first.getBoundingClientRect().left, secondBefore = second.getBoundingClientRect().left;
		box.scrollLeft = 300;
		const style = getComputedStyle(box);
		return {
			PageWidth: document.documentElement.scrollWidth, ViewWidth: window.innerWidth,
			Wide: box.scrollWidth, Client: box.clientWidth, Left: box.scrollLeft,
			Overflow: style.overflowX, ScrollbarWidth: style.scrollbarWidth, ScrollbarColor: style.scrollbarColor,
			FirstBefore: before, FirstAfter: first.getBoundingClientRect().left,
			PageScrollX: window.scrollX, SecondShifted: secondBefore - second.getBoundingClientRect().left,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if s.PageWidth > s.ViewWidth {
		t.Errorf("the page is %v px wide in a %v px window: it scrolls sideways", s.PageWidth, s.ViewWidth)
	}
	if s.Wide <= s.Client || s.Left == 0 {
		t.Fatalf("the annotators' table box: %v px of table in %v px, scrolled to %v: want it to scroll", s.Wide, s.Client, s.Left)
	}
	// The test's browser hides every scrollbar (chromedp starts it so):
	// the box's own style must ask for one that shows.
	if s.Overflow != "auto" || s.ScrollbarWidth == "none" || s.ScrollbarColor == "auto" {
		t.Errorf("the table box: overflow-x %s, scrollbar-width %s, scrollbar-color %s: want a scrollbar that shows, coloured",
			s.Overflow, s.ScrollbarWidth, s.ScrollbarColor)
	}
	if s.FirstAfter != s.FirstBefore || s.SecondShifted <= 0 {
		t.Errorf("after scrolling the box, the first column moved from %v to %v px and the second by %v: want the first to stay",
			s.FirstBefore, s.FirstAfter, s.SecondShifted)
	}
	if s.PageScrollX != 0 {
		t.Errorf("the page scrolled %v px sideways", s.PageScrollX)
	}
}

// TestBrowserImportRefusedBanner: after a refused upload the page shows,
// on its first screen, a banner saying so, and its link brings the list
// of problems, far below, into view.
func TestBrowserImportRefusedBanner(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	bad := filepath.Join(t.TempDir(), "broken.jsonl")
	if err := os.WriteFile(bad, []byte(goodJSONL+`{"id":"a3","messages":[{"role":"user","content":"hello"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := signInBrowser(t, a, "lee@example.org", projectPath(p, ""))
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1366, 850),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=import-form]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#import-file`), []string{bad}),
		chromedp.Click(chromedp.CSS(`[data-testid=import-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=import-banner]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	type where struct {
		Banner, List, ScrollY float64
		Text                  string
	}
	at := func() where {
		w, err := chromedp.Run(ctx, chromedp.Evaluate[where](`({
			Banner: document.querySelector('[data-testid=import-banner]').getBoundingClientRect().bottom,
			List: document.getElementById('import-errors').getBoundingClientRect().top,
			ScrollY: window.scrollY,
			Text: document.querySelector('[data-testid=import-banner]').textContent,
		})`))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	before := at()
	if before.Banner > 850 || before.ScrollY != 0 || !strings.Contains(before.Text, "The upload was refused: 1 problem") {
		t.Fatalf("banner %q ends %v px down, page scrolled %v: want it on the first screen", before.Text, before.Banner, before.ScrollY)
	}
	if before.List < 850 {
		t.Logf("the list is already on the first screen (%v px down)", before.List)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=import-banner-link]`))); err != nil {
		t.Fatal(err)
	}
	after := at()
	if after.List < 0 || after.List > 850 {
		t.Fatalf("after the banner's link the list is %v px down: want it in view", after.List)
	}
}
