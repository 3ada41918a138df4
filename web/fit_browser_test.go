package web_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// fitScreens are the widths the lead's table pages must fit: two laptops
// and a phone.
var fitScreens = []struct {
	name          string
	width, height int64
}{{"1366", 1366, 850}, {"1440", 1440, 900}, {"phone", 390, 844}}

// fitCheck says what reaches past the right edge of the screen ("" when
// nothing does): the document must not scroll sideways, and no element may
// end beyond the viewport unless it sits in a .table-scroll box, the
// pages' one explicit sideways scroll, that itself fits (or is a chart's
// shape, which its svg clips).
const fitCheck = `(() => {
	const out = [];
	const doc = document.scrollingElement;
	if (doc.scrollWidth > doc.clientWidth) out.push('the document is ' + doc.scrollWidth + 'px wide in ' + doc.clientWidth);
	const name = el => el.tagName.toLowerCase() + (el.dataset.testid ? '[' + el.dataset.testid + ']' : '') +
		(el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
	for (const el of document.body.querySelectorAll('*')) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.right <= doc.clientWidth + 1) continue;
		// A chart's shapes are clipped to the chart, which must fit.
		const chart = el.tagName.toLowerCase() !== 'svg' && el.closest('svg');
		if (chart && getComputedStyle(chart).overflow !== 'visible' && chart.getBoundingClientRect().right <= doc.clientWidth + 1) continue;
		const box = el.closest('.table-scroll');
		if (box && box !== el && getComputedStyle(box).overflowX === 'auto' && box.getBoundingClientRect().right <= doc.clientWidth + 1) continue;
		out.push(name(el) + ' ends at ' + Math.round(r.right) + 'px');
		if (out.length > 6) break;
	}
	return out.join('; ');
})()`

// TestLeadPagesFit opens the lead's pages of tables (the items browser
// with a meta column and a text search, an item's page, the items behind a
// report figure, the report, the disagreements queue and the people page)
// of a project that three people and a judge with long rationales
// answered, at 1366 and 1440 px and on a 390 px phone: nothing may reach past the screen's edge
// outside an explicit scroll box. It takes each page's screenshot into
// testdata/screenshots.
func TestLeadPagesFit(t *testing.T) {
	t.Parallel()
	a, p, lead, c := docProject(t)
	// The people page needs annotators, one with an address long enough
	// to test the wrapping.
	for _, email := range []string{"amara@example.org", "benedict.long-surname-for-wrapping@annotators.example.org"} {
		u := a.user(email, attune.RoleAnnotator)
		if err := a.db.AddMember(context.Background(), &lead.ID, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
	}
	browse := c.get(projectPath(p, "/browse?q=sleep&col=week"))
	wantStatus(t, browse, http.StatusOK)
	wantContains(t, browse, `data-testid="browse-snippet"`, "<mark>", `data-testid="browse-col"`)
	item := regexp.MustCompile(`href="(/projects/\d+/browse/\d+)"`).FindStringSubmatch(browse.body)
	report := c.get(projectPath(p, "/report"))
	drill := regexp.MustCompile(`href="(/projects/\d+/report/items\?[^"]+)"`).FindStringSubmatch(report.body)
	if item == nil || drill == nil {
		t.Fatalf("no item link (%v) or report figure link (%v)", item, drill)
	}
	pages := []struct{ name, path string }{
		{"browse", projectPath(p, "/browse?q=sleep&col=week")},
		{"browse-filters", projectPath(p, "/browse?meta=nonsense")},
		{"item", item[1]},
		{"drill", regexp.MustCompile(`&amp;`).ReplaceAllString(drill[1], "&")},
		{"report", projectPath(p, "/report")},
		{"report-refused", projectPath(p, "/report?epsilon=abc")},
		{"disagreements", projectPath(p, "/disagreements")},
		{"people", projectPath(p, "/people")},
	}
	ctx := signInBrowser(t, a, lead.Email, "/login")
	for _, s := range fitScreens {
		for _, pg := range pages {
			err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(a.srv.URL+pg.path))
			if err == nil {
				_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, s.width)))
			}
			if err != nil {
				t.Fatalf("open %s at %d px: %v", pg.path, s.width, err)
			}
			if wide := eval[string](t, ctx, fitCheck); wide != "" {
				t.Errorf("%s at %s px: %s", pg.name, s.name, wide)
			}
			browsertest.Screenshot(t, ctx, "testdata/screenshots", "fit-"+pg.name+"-"+s.name)
		}
	}
}
