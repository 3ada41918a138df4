package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/store"
)

// waitAdjudicate waits until the adjudication page shows an item other
// than prev and its script has set it up; it returns the item's id in the
// dataset.
func waitAdjudicate(t *testing.T, ctx context.Context, prev string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const p = document.querySelector('#adjudicate');
		const help = document.querySelector('[data-action=shortcuts]');
		return p && p.dataset.source !== %q && help && !help.hidden ? p.dataset.source : '';
	})()`, prev)
	for attempt := 0; ; attempt++ {
		id, err := chromedp.Run(ctx, browsertest.Poll[string](js))
		if err == nil {
			return id
		}
		if attempt == 5 || !navigated(err) {
			t.Fatalf("waiting for an item after %q: %v", prev, err)
		}
	}
}

// TestBrowserAdjudicateKeyboard settles two disagreements with the keyboard
// alone: digits set the gold and move on, Enter saves and the next
// disagreement appears; C takes the consensus where there is one.
func TestBrowserAdjudicateKeyboard(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{overlap: 2, annotators: 2})
	l.labelThroughAPI(t, func(i int, source string) map[string]string {
		if source == "r1" { // the wider spread: first
			return map[string]string{"emotion": []string{"2", "4"}[i], "validation": "4", "helpfulness": "3", "safety": "4", "overall": "4"}
		}
		return map[string]string{"emotion": []string{"3", "4"}[i], "validation": "5", "helpfulness": "4", "safety": "4", "overall": "4"}
	}, nil)
	if _, err := l.a.db.ApplyConsensus(context.Background(), l.p.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.New(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(l.a.srv.URL+projectPath(l.p, "/disagreements")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.KeyEvent(l.lead.Email),
		chromedp.KeyEvent("\t"),
		chromedp.KeyEvent("pw-"+l.lead.Email),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=start-adjudicating]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=start-adjudicating]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitAdjudicate(t, ctx, ""); got != "r1" {
		t.Fatalf("the queue started with %s, want r1", got)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "adjudicate-likert")
	// The focus is on the first rubric item; five digits set all five, and
	// Enter on the save button saves.
	keys(t, ctx, "34344")
	if focus := eval[string](t, ctx, `document.activeElement.dataset.testid || ''`); focus != "save-gold" {
		t.Fatalf("after the last item the focus is on %q, want the save button", focus)
	}
	keys(t, ctx, "\r")
	if got := waitAdjudicate(t, ctx, "r1"); got != "r2" {
		t.Fatalf("after saving, the page shows %s, want r2", got)
	}
	if got := goldValues(t, l.a, l.itemID(t, "r1")); got["emotion"] != "3/adjudicated" || got["helpfulness"] != "3/adjudicated" || got["overall"] != "4/adjudicated" {
		t.Fatalf("r1 gold = %v", got)
	}
	// C takes the consensus of the four items that have one and stops on
	// emotion, which has none; 4 sets it, and Enter saves.
	keys(t, ctx, "c")
	if current := eval[string](t, ctx, `document.querySelector('.ritem.current').dataset.key`); current != "emotion" {
		t.Fatalf("after C the current item is %q, want emotion", current)
	}
	keys(t, ctx, "4\r")
	for attempt := 0; ; attempt++ {
		_, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=queue-empty]')`))
		if err == nil {
			break
		}
		if attempt == 5 || !navigated(err) {
			t.Fatalf("the queue is not empty after the last: %v", err)
		}
	}
	want := map[string]string{"emotion": "4/adjudicated", "validation": "5/adjudicated", "helpfulness": "4/adjudicated", "safety": "4/adjudicated", "overall": "4/adjudicated"}
	if got := goldValues(t, l.a, l.itemID(t, "r2")); !sameAnswers(got, want) {
		t.Fatalf("r2 gold = %v, want %v", got, want)
	}
}
