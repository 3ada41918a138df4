package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
)

// TestBrowserPeopleRequalify: on the people page a lead sees the annotator
// who failed qualification as failed, re-qualifies them with the row's
// button, and the page comes back saying so with the person in progress
// in their second attempt; the page fits at 1366 and 1440 px and on a
// 390 px phone, where each person is a card of labelled lines.
func TestBrowserPeopleRequalify(t *testing.T) {
	t.Parallel()
	l := failingLabelling(t)
	failed := l.anns[0]
	path := projectPath(l.p, "/people")
	ctx := signInBrowser(t, l.a, l.lead.Email, path)
	row := fmt.Sprintf(`document.querySelector('[data-testid=person][data-email="%s"]')`, failed.Email)
	if err := chromedp.Do(ctx, chromedp.Navigate(l.a.srv.URL+path), chromedp.WaitVisible(chromedp.CSS(`[data-testid=people]`))); err != nil {
		t.Fatal(err)
	}
	if q := eval[string](t, ctx, row+`.querySelector('[data-testid=qualification]').innerText`); q != "failed" {
		t.Fatalf("qualification shown %q, want failed", q)
	}
	for _, s := range fitScreens {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(l.a.srv.URL+path)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, s.width))); err != nil {
			t.Fatal(err)
		}
		if wide := eval[string](t, ctx, fitCheck); wide != "" {
			t.Errorf("people at %s px: %s", s.name, wide)
		}
		// On the phone the header row is hidden and each cell names its
		// column.
		label := eval[string](t, ctx, `getComputedStyle(`+row+`.querySelector('td[data-label=Qualification]'), '::before').content`)
		if s.name == "phone" && !strings.Contains(label, "Qualification") {
			t.Errorf("on the phone the qualification cell is not labelled: %q", label)
		}
		browsertest.Screenshot(t, ctx, "testdata/screenshots", "people-"+s.name)
	}

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1366, 850),
		chromedp.Navigate(l.a.srv.URL+path),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=people]`)),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-testid=person][data-email="%s"] [data-testid=requalify] button`, failed.Email))),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	); err != nil {
		t.Fatal(err)
	}
	if flash := eval[string](t, ctx, `document.querySelector('[data-testid=flash]').innerText`); !strings.Contains(flash, "attempt 2 has begun") {
		t.Fatalf("flash %q", flash)
	}
	if q := eval[string](t, ctx, row+`.querySelector('[data-testid=qualification]').innerText`); q != "in progress" {
		t.Fatalf("after re-qualifying: %q, want in progress", q)
	}
	if a := eval[string](t, ctx, row+`.querySelector('[data-testid=attempt]').innerText`); !strings.Contains(a, "attempt 2") || !strings.Contains(a, "0 of 2 passed") {
		t.Fatalf("attempt shown %q", a)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "people-requalified")
}
