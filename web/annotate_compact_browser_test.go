package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/attune/attune/internal/browsertest"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// compactLaptop is the screen the compact rubric is measured on.
const compactW, compactH = 1366, 850

// rubricHeight is the height of the rubric column's content: the whole
// scrolled pane, and the submit bar under it.
const rubricHeightJS = `document.querySelector('#rubric-scroll').scrollHeight + document.querySelector('.submitbar').offsetHeight`

// shows returns, by criterion, whether its definition is shown.
func shows(t *testing.T, ctx context.Context, sel string) map[string]bool {
	t.Helper()
	return eval[map[string]bool](t, ctx, fmt.Sprintf(`Object.fromEntries([...document.querySelectorAll('fieldset.ritem')].map(f => {
		const el = f.querySelector(%q);
		return [f.dataset.key, !!el && el.checkVisibility() && el.getBoundingClientRect().height > 0];
	}))`, sel))
}

func onlyShown(t *testing.T, got map[string]bool, keys ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	if len(got) != 12 {
		t.Fatalf("%d criteria on the page, want 12", len(got))
	}
	for k, v := range got {
		if v != want[k] {
			t.Fatalf("shown %v, want only %v", got, keys)
		}
	}
}

// TestBrowserCompactRubric: the twelve criteria of the coaching rubric fit
// in about two screens of a laptop; a criterion shows its definition and
// levels when it is the one in hand (by the keyboard, a click on an answer
// or on its Definition link) and closes when the focus moves on; with the
// preference "keep every criterion expanded" every definition shows
// without the focus, and the keys answer as before.
func TestBrowserCompactRubric(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "") + conversation("d12", 12, "")})
	ctx := l.browse(t, l.anns[0])
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(compactW, compactH)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`window.innerWidth === %d`, compactW))); err != nil {
		t.Fatal(err)
	}
	// Beside the dialogue, in its own scrolled pane.
	if !eval[bool](t, ctx, `document.querySelector('[data-testid=rubric]').getBoundingClientRect().left > 500`) {
		t.Fatal("at a laptop's width the rubric is not beside the dialogue")
	}
	compact := eval[float64](t, ctx, rubricHeightJS)
	t.Logf("compact rubric column: %.0f px (screen %d px)", compact, compactH)
	if limit := 2*compactH + 40; compact > float64(limit) {
		t.Fatalf("the compact rubric column is %.0f px tall, more than %d", compact, limit)
	}

	// The first criterion is in hand: its definition and levels show,
	// nobody else's.
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ1")
	onlyShown(t, shows(t, ctx, ".odesc"), "CQ1")
	// The keyboard moves on: the next opens, the one before closes.
	keys(t, ctx, "j")
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ2")
	keys(t, ctx, "yy") // CQ2, CQ3 YES; CQ4 in hand
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ4")
	if got := chosen(t, ctx); !sameAnswers(got, map[string]string{"CQ2": "YES", "CQ3": "YES"}) {
		t.Fatalf("chosen %v", got)
	}
	// A click on a closed criterion's answer answers it and opens it.
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`label[for="answer-CP1-NO"]`), chromedp.Click(`label[for="answer-CP1-NO"]`)); err != nil {
		t.Fatal(err)
	}
	if got := chosen(t, ctx)["CP1"]; got != "NO" {
		t.Fatalf("a click on CP1's NO chose %q", got)
	}
	onlyShown(t, shows(t, ctx, ".rtext"), "CP1")
	if key := eval[string](t, ctx, `document.activeElement.closest('fieldset.ritem').dataset.key`); key != "CP1" {
		t.Fatalf("after the click the focus is on %q", key)
	}
	// Its Definition link opens a criterion without answering it.
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#item-CQ6 [data-action=more]`), chromedp.Click(`#item-CQ6 [data-action=more]`)); err != nil {
		t.Fatal(err)
	}
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ6")
	if got := chosen(t, ctx)["CQ6"]; got != "" {
		t.Fatalf("opening CQ6 answered it: %q", got)
	}
	// The keys go on from the criterion opened.
	keys(t, ctx, "n")
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ7")
	if got := chosen(t, ctx)["CQ6"]; got != "NO" {
		t.Fatalf("N after opening CQ6 chose %q", got)
	}

	// Keep every criterion expanded, from the toggle on the page.
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=rubric-toggle-button]`)); err != nil {
		t.Fatal(err)
	}
	// The post and the redirect load the page afresh: a poll under way
	// when it goes starts again on the new one.
	for attempt := 0; ; attempt++ {
		_, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('.rubric-pane.expanded')`))
		if err == nil {
			break
		}
		if attempt == 5 || !navigated(err) {
			t.Fatalf("the toggle did not expand the rubric: %v", err)
		}
	}
	if id := waitItem(t, ctx, ""); id != item {
		t.Fatalf("the toggle came back to item %s, want %s", id, item)
	}
	// Nothing has the focus, and yet every definition and level shows.
	eval[bool](t, ctx, `(document.activeElement.blur(), true)`)
	all := []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}
	onlyShown(t, shows(t, ctx, ".rtext"), all...)
	onlyShown(t, shows(t, ctx, ".odesc"), all...)
	expanded := eval[float64](t, ctx, rubricHeightJS)
	t.Logf("expanded rubric column: %.0f px", expanded)
	if expanded <= compact {
		t.Fatalf("expanded (%.0f px) is no taller than compact (%.0f px)", expanded, compact)
	}
	// The answers chosen came back (the draft), and the keys still answer.
	if got := chosen(t, ctx); !sameAnswers(got, map[string]string{"CQ2": "YES", "CQ3": "YES", "CP1": "NO", "CQ6": "NO"}) {
		t.Fatalf("after the toggle the form has %v", got)
	}
	if err := chromedp.Do(ctx, chromedp.Focus(`#answer-CQ1-YES`)); err != nil {
		t.Fatal(err)
	}
	keys(t, ctx, "y")
	if got := chosen(t, ctx)["CQ1"]; got != "YES" {
		t.Fatalf("Y on CQ1 chose %q", got)
	}
}

// TestBrowserCompactRubricWithoutScript: without the page's script the
// compact rubric still opens the criterion the keyboard is on, closes it
// when the focus moves on, opens one asked for with its Definition link,
// and answers on a click.
func TestBrowserCompactRubricWithoutScript(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "")})
	ctx := l.browse(t, l.anns[0])
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(compactW, compactH),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}),
		chromedp.Reload(),
		chromedp.WaitVisible(`#workspace[data-item]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if eval[bool](t, ctx, `document.querySelector('#label-form').elements.clock.value === 'js'`) {
		t.Fatal("the page's script ran")
	}
	// Nothing is in hand: every criterion is closed.
	onlyShown(t, shows(t, ctx, ".rtext"))
	// Tab from the top of the page to the first criterion, then on to the
	// next: the one the keyboard is on opens, the one before closes.
	tabTo := func(key string) {
		t.Helper()
		for range 40 {
			keys(t, ctx, "\t")
			if eval[string](t, ctx, `document.activeElement.closest('fieldset.ritem')?.dataset.key || ''`) == key {
				return
			}
		}
		t.Fatalf("Tab did not reach %s", key)
	}
	tabTo("CQ1")
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ1")
	onlyShown(t, shows(t, ctx, ".odesc"), "CQ1")
	tabTo("CQ2")
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ2")
	// The Definition link opens the criterion it names.
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#item-CQ9 [data-action=more]`), chromedp.Click(`#item-CQ9 [data-action=more]`)); err != nil {
		t.Fatal(err)
	}
	onlyShown(t, shows(t, ctx, ".rtext"), "CQ9")
	// A click on a closed criterion's answer chooses it.
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`label[for="answer-CP2-NO"]`), chromedp.Click(`label[for="answer-CP2-NO"]`)); err != nil {
		t.Fatal(err)
	}
	if got := chosen(t, ctx); !sameAnswers(got, map[string]string{"CP2": "NO"}) {
		t.Fatalf("chosen %v", got)
	}
}
