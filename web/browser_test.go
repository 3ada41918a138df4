package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// TestBrowserSignIn signs in through the real page in headless Chromium and
// lands on the home page.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.user("lee@example.org", attune.RoleLead)
	ctx := signInBrowser(t, a, "lee@example.org", "/")
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=whoami]`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(who, "lee@example.org") || !strings.Contains(who, "lead") {
		t.Fatalf("whoami = %q", who)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if loc != a.srv.URL+"/" {
		t.Fatalf("after sign-in the browser is at %q, want the home page", loc)
	}
	empty, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=projects-empty]`)))
	if err != nil || !strings.Contains(empty, "No projects yet") {
		t.Fatalf("empty state = %q, %v", empty, err)
	}
	// The stylesheet loaded under the CSP: the top bar is laid out as a row.
	display, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('.topbar')).display`))
	if err != nil || display != "flex" {
		t.Fatalf("topbar display = %q, %v: the stylesheet did not apply", display, err)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "home-lead")
}

// signInBrowser opens path in a new Chromium, signs in as email through
// the sign-in page it is sent to, and returns the browser on path.
func signInBrowser(t *testing.T, a *app, email, path string) context.Context {
	t.Helper()
	ctx := browsertest.New(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+path),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.SendKeys(chromedp.CSS(`#password`), "pw-"+email),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=whoami]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}
