package web_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
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
		// What is not drawn (inside a closed <details>, say) reaches nowhere.
		if (!el.checkVisibility()) continue;
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
				_, err = chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, s.width)))
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

// legendsInside says which criterion's title is not wholly inside its box
// ("" when every one is): a two-line title that straddled the box's top
// border, as a fieldset's legend does by default, read across the line.
const legendsInside = `(() => {
	for (const fs of document.querySelectorAll('fieldset.ritem')) {
		const lg = fs.querySelector(':scope > legend');
		if (!lg) continue;
		const b = fs.getBoundingClientRect(), r = lg.getBoundingClientRect();
		if (b.width === 0 || r.width === 0) continue;
		const border = parseFloat(getComputedStyle(fs).borderTopWidth);
		if (r.top < b.top + border - 0.5 || r.bottom > b.bottom || r.left < b.left || r.right > b.right + 0.5) return fs.dataset.key;
	}
	return '';
})()`

// TestAnnotatePageFits opens the annotator's workspace on the coaching
// rubric, the longest built-in one (twelve criteria, two-line titles), at
// both laptop widths and on a phone: nothing reaches past the screen's
// edge (nor does the skip-or-flag panel, open), every criterion's title sits inside its box, and on load the
// rubric pane shows its own title rather than having scrolled it away.
func TestAnnotatePageFits(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, strings.Repeat("It has been like this for months and I do not know where to start. ", 3))})
	ctx := l.browse(t, l.anns[0])
	path := l.a.srv.URL + projectPath(l.p, "/annotate")
	for _, s := range fitScreens {
		err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(path))
		if err == nil {
			_, err = chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d && !!document.querySelector('#workspace[data-item]')`, s.width)))
		}
		if err != nil {
			t.Fatalf("open the workspace at %d px: %v", s.width, err)
		}
		if wide := eval[string](t, ctx, fitCheck); wide != "" {
			t.Errorf("annotate at %s px: %s", s.name, wide)
		}
		// The skip-or-flag panel opens over the page and must fit too.
		if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=skip-panel] > summary`)); err != nil {
			t.Fatal(err)
		}
		if wide := eval[string](t, ctx, fitCheck); wide != "" {
			t.Errorf("annotate with the skip panel open at %s px: %s", s.name, wide)
		}
		if key := eval[string](t, ctx, legendsInside); key != "" {
			t.Errorf("annotate at %s px: the title of %s is not inside its box", s.name, key)
		}
		// The heading is in view within the pane (on a phone the pane
		// does not scroll on its own and the page starts at the top).
		if !eval[bool](t, ctx, `(() => {
			const h = document.getElementById('rubric-heading'), pane = h.closest('.pane-scroll') || document.scrollingElement;
			const r = h.getBoundingClientRect(), p = pane === document.scrollingElement ? {top: 0} : pane.getBoundingClientRect();
			return pane.scrollTop === 0 || r.top >= p.top - 1;
		})()`) {
			t.Errorf("annotate at %s px: the rubric pane scrolled its title away on load", s.name)
		}
		browsertest.Screenshot(t, ctx, "testdata/screenshots", "fit-annotate-coaching-"+s.name)
	}
}
