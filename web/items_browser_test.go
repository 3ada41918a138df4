package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
)

// TestBrowserItemsBrowser finds an item in a real browser: from the
// project page to the browser, a text search with a filter sent by the
// plain GET form (the view lands in the address bar), and the item found
// opened on its page.
func TestBrowserItemsBrowser(t *testing.T) {
	t.Parallel()
	a, p, _, _, _, _ := browseApp(t)
	ctx := signInBrowser(t, a, "lee@example.org", "/")
	err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+projectPath(p, "")),
		chromedp.Click(chromedp.CSS(`[data-testid=items-browser]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=browse-form]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=browse-row]').length`))
	if err != nil || rows != 3 {
		t.Fatalf("the browser opens on %d rows, want every item, 3 (%v)", rows, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=browse-filter-bar] > summary`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=browse-q]`), "alone"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=browse-gold]`), "open"),
		chromedp.Click(chromedp.CSS(`[data-testid=browse-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=browse-summary]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The summary is on the page before the search too: wait for the
	// search's page, not for the summary.
	var loc string
	for range 50 { // a navigation in flight interrupts an evaluation: ask again
		if loc, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`)); err == nil && strings.Contains(loc, "q=alone") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || !strings.Contains(loc, "q=alone") || !strings.Contains(loc, "gold=open") {
		t.Fatalf("the search is not in the address: %q (%v)", loc, err)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid=browse-item]')].map(a => a.textContent.trim())`))
	if err != nil || len(found) != 1 || found[0] != "a1" {
		t.Fatalf("found %v, want a1 (%v)", found, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=browse-item]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=item-title]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	dialogue, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=item-dialogue]`)))
	if err != nil || !strings.Contains(dialogue, "I feel alone") {
		t.Fatalf("the item's dialogue reads %q (%v)", dialogue, err)
	}
	raters, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=item-rater]').length`))
	if err != nil || raters != 3 {
		t.Fatalf("%d raters on the item's page, want 3 (%v)", raters, err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "items-browser-item")
}
