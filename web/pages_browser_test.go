package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
)

// screens are the two sizes every page is tried at: a laptop and a phone.
var screens = []struct {
	name          string
	width, height int64
}{
	{"laptop", 1366, 850},
	{"phone", 390, 844},
}

// TestEveryPageFitsTheScreen opens every page of the route table (each GET
// that answers a whole HTML document, in the authorization matrix's world,
// as the first of the project's lead, its annotator or an admin that may
// see it) in Chromium at a laptop's size and a phone's, and checks that
// none is wider than the screen: what does not fit must wrap, or scroll
// inside a box of its own, never drag the whole page sideways.
func TestEveryPageFitsTheScreen(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	w := m.world(t, leadIn)
	browsers := map[kind]*pageBrowser{}
	pages := 0
	for _, rule := range m.a.web.RouteRules() {
		if !strings.HasPrefix(rule.Pattern, "GET ") || rule.Token || rule.Bare && !strings.Contains(rule.Pattern, "login") {
			continue
		}
		var who kind
		for _, k := range []kind{leadIn, annIn, admin, signedOut} {
			if allowed(rule, k) {
				who = k
				break
			}
		}
		if who == "" {
			continue
		}
		path := w.path(rule.Pattern)
		// Only whole pages: not files, downloads, redirects or the htmx
		// fragments pages swap in.
		r := m.clients[who].get(path)
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
			!strings.HasPrefix(strings.ToLower(strings.TrimSpace(r.body)), "<!doctype html") {
			continue
		}
		b := browsers[who]
		if b == nil {
			b = newPageBrowser(t, m, who)
			browsers[who] = b
		}
		pages++
		for _, s := range screens {
			if wide := b.overflow(t, path, s.width, s.height); wide != "" {
				t.Errorf("%s (as %s) on a %s (%d px): %s", path, who, s.name, s.width, wide)
			}
		}
	}
	// The table holds some twenty pages; far fewer means the filter above
	// lost them, and the test would pass by checking nothing.
	if pages < 15 {
		t.Fatalf("only %d pages were checked", pages)
	}
	t.Logf("%d pages checked at %d sizes", pages, len(screens))
}

// pageBrowser is a Chromium tab signed in as one kind of user.
type pageBrowser struct {
	ctx  context.Context
	base string
}

func newPageBrowser(t *testing.T, m *matrix, who kind) *pageBrowser {
	t.Helper()
	b := &pageBrowser{ctx: browsertest.New(t), base: m.a.srv.URL}
	if u := m.users[who]; u != nil {
		err := chromedp.Do(b.ctx,
			chromedp.Navigate(b.base+"/login"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
			chromedp.SetValue(chromedp.CSS(`[data-testid=login-form] [name=email]`), u.Email),
			chromedp.SetValue(chromedp.CSS(`[data-testid=login-form] [name=password]`), "pw-"+u.Email),
			chromedp.Submit(chromedp.CSS(`[data-testid=login-form] [name=password]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`[data-testid=login-form]`)),
		)
		if err != nil {
			t.Fatalf("sign in as %s in Chromium: %v", who, err)
		}
	}
	return b
}

// overflow opens path at the given size and says what sticks out past the
// screen's right edge ("" when nothing does).
func (b *pageBrowser) overflow(t *testing.T, path string, width, height int64) string {
	t.Helper()
	err := chromedp.Do(b.ctx,
		chromedp.EmulateViewport(width, height),
		chromedp.Navigate(b.base+path),
	)
	if err == nil {
		_, err = chromedp.Run(b.ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, width)))
	}
	if err != nil {
		t.Fatalf("open %s at %d px: %v", path, width, err)
	}
	// The page is too wide when the document scrolls sideways; the
	// elements named are the outermost that reach past the edge, each
	// outside any box that scrolls or clips on its own.
	return eval[string](t, b.ctx, `(() => {
		const doc = document.documentElement;
		if (doc.scrollWidth <= window.innerWidth) return '';
		// Inside a box that scrolls or clips and itself fits, an element
		// may be as wide as it likes.
		const contained = el => {
			for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
				if (getComputedStyle(p).overflowX !== 'visible') return p.getBoundingClientRect().right <= window.innerWidth + 1;
			}
			return false;
		};
		const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
			(el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
		const wide = [...document.body.querySelectorAll('*')].filter(el => {
			const r = el.getBoundingClientRect();
			return r.right > window.innerWidth + 1 && !contained(el) &&
				!(el.parentElement && el.parentElement.getBoundingClientRect().right > window.innerWidth + 1 && !contained(el.parentElement) && el.parentElement !== document.body);
		}).slice(0, 5).map(el => name(el) + ' to ' + Math.round(el.getBoundingClientRect().right) + 'px');
		return 'the page is ' + doc.scrollWidth + 'px wide: ' + wide.join(', ');
	})()`)
}
