// Package browsertest starts headless Chromium for tests that need a real
// browser: keyboard, focus, htmx swaps, layout. Without Chromium the tests
// are skipped, except where CI=true, where they fail.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds the browser: $CHROMIUM, then the usual names on PATH.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New returns a browser tab's context, closed when the test ends. Each call
// starts its own browser with a fresh profile, so tests share no cookies.
func New(t testing.TB) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("browsertest: Chromium is required where CI=true (apt-get install chromium)")
		}
		t.Skip("browsertest: Chromium not found; install it (apt-get install chromium) or set CHROMIUM")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in a container has no user namespace for the sandbox
		chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first action starts the browser, whose life is that context's:
	// it must carry no deadline of its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: start %s: %v", path, err)
	}
	// A hung page fails the test instead of hanging the suite. The bound
	// is for the whole test: under -race on a busy two-core machine the
	// longest tests' steps have taken more than 90 s in all.
	tctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelTimeout)
	return tctx
}

// Screenshot writes a PNG of the whole page to dir/name.png, for people to
// look at: artifacts of a test run, never compared.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browsertest: screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// PollTimeout is how long a test waits for a page to reach a state. It is
// long because a loaded machine (CI's two cores, shared with the rest of
// the suite) can take many seconds to lay out a page; a page that never
// gets there still fails, within the test's own deadline.
const PollTimeout = 2 * time.Minute

// Poll waits, as chromedp.Poll does, until expression is truthy, for up to
// PollTimeout unless opts say otherwise.
func Poll[T any](expression string, opts ...chromedp.PollOption) chromedp.Action[T] {
	return chromedp.Poll[T](expression, append([]chromedp.PollOption{chromedp.WithPollingTimeout(PollTimeout)}, opts...)...)
}
