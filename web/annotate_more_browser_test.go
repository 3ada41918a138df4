package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserRestoredNotice: "Restored your unsaved answers." shows only
// when answers came back, and whole on a phone's width.
func TestBrowserRestoredNotice(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	ctx := l.browse(t, l.anns[0])
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	status := func() string {
		t.Helper()
		return eval[string](t, ctx, `document.querySelector('[data-testid=draft-status]').textContent.trim()`)
	}
	reload := func() {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitItem(t, ctx, "")
	}
	if s := status(); s != "" {
		t.Fatalf("a fresh item says %q", s)
	}
	// The browser's copy of a fresh item that kept only the time spent (as
	// leaving the page or the half-minute save writes it) restores nothing.
	eval[bool](t, ctx, `(() => {
		const ws = document.querySelector('#workspace');
		localStorage.setItem('attune:draft:' + ws.dataset.owner + ':' + ws.dataset.item,
			JSON.stringify({t: Date.now(), base: ws.dataset.base, active: 40000, fields: [['rationale', '']]}));
		return true;
	})()`)
	reload()
	if s := status(); s != "" {
		t.Fatalf("a fresh item with only time kept says %q", s)
	}

	keys(t, ctx, "4")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('[data-testid=draft-status]').textContent.includes('Draft saved')`)); err != nil {
		t.Fatalf("the draft was not saved: %v", err)
	}
	reload()
	if s := status(); s != "Restored your unsaved answers." {
		t.Fatalf("after a refresh with an answer chosen the status is %q", s)
	}
	// Whole, inside the screen, not cut short.
	fit := eval[string](t, ctx, `(() => {
		const el = document.querySelector('[data-testid=draft-status]');
		const r = el.getBoundingClientRect();
		return [el.scrollWidth <= el.clientWidth, r.left >= 0, r.right <= innerWidth, getComputedStyle(el).textOverflow].join(' ');
	})()`)
	if fit != "true true true clip" {
		t.Fatalf("at 390px the status does not fit whole (fits, left in, right in, text-overflow): %s", fit)
	}
	if got := chosen(t, ctx); !sameAnswers(got, map[string]string{"emotion": "4"}) {
		t.Fatalf("restored %v", got)
	}
}
