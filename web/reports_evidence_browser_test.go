package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
)

// evidenceColumns says, for every turn grid of the page, what is out of
// place ("" when nothing is): each rater's mark must be shown, and sit
// under its rater's heading, in the row of the turn it names, so that the
// columns read side by side.
const evidenceColumns = `(() => {
	const out = [];
	const grids = document.querySelectorAll('[data-testid=drill-evidence] table');
	if (grids.length === 0) return 'no turn grid';
	for (const table of grids) {
		const heads = [...table.querySelectorAll('thead th')];
		for (const row of table.querySelectorAll('tbody tr')) {
			const turn = row.querySelector('th').textContent.trim();
			[...row.querySelectorAll('td')].slice(1).forEach((cell, i) => {
				const mark = cell.querySelector('[data-testid=drill-evidence-mark]');
				if (!mark) return;
				const m = mark.getBoundingClientRect(), h = heads[i + 2].getBoundingClientRect();
				if (m.width === 0 || m.height === 0) out.push('turn ' + turn + ': a hidden mark');
				const x = m.left + m.width / 2;
				if (x < h.left || x > h.right) out.push('turn ' + turn + ': a mark outside its rater column ' + (i + 1));
				if (!mark.title.endsWith('marks turn ' + turn)) out.push('turn ' + turn + ': a mark titled ' + mark.title);
			});
		}
	}
	return out.join('; ');
})()`

// TestReportDrillEvidenceBrowser: in a real browser, the drill-down of
// the items both people call failing fits every screen the lead's pages
// fit (the grid scrolls in its own box), and each mark is shown under its
// rater's column in the row of the turn it names.
func TestReportDrillEvidenceBrowser(t *testing.T) {
	t.Parallel()
	a, p, _ := evidenceApp(t)
	ctx := signInBrowser(t, a, "lee@example.org", "/login")
	path := projectPath(p, "/report/items?item=CQ1&a=people&b=people&fails=1")
	for _, s := range fitScreens {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(a.srv.URL+path)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, s.width))); err != nil {
			t.Fatal(err)
		}
		if wide := eval[string](t, ctx, fitCheck); wide != "" {
			t.Errorf("at %s px: %s", s.name, wide)
		}
		if bad := eval[string](t, ctx, evidenceColumns); bad != "" {
			t.Errorf("at %s px: %s", s.name, bad)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid=drill-evidence-mark]').length`); n != 15 {
			t.Errorf("at %s px: %d marks, want 15", s.name, n)
		}
	}
}
