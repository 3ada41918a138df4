package web_test

import (
	"context"
	"testing"

	"github.com/attune/attune/internal/browsertest"
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
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`document.querySelector('[data-testid=draft-status]').textContent.includes('Draft saved')`)); err != nil {
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

// TestBrowserContentNoteLocksAnswers: while a content note hides the
// dialogue, answer keys, Enter and clicks answer nothing and submit
// nothing; Show the conversation records the opening on the server, so the
// dialogue stays shown on a later visit, and the answers then work.
func TestBrowserContentNoteLocksAnswers(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{items: sensitiveItems})
	ctx := l.browse(t, l.anns[0])
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	if !eval[bool](t, ctx, `!!document.querySelector('#content-note') && document.querySelector('#messages').hidden`) {
		t.Fatal("the first item is not behind its content note")
	}
	opened := func() int {
		t.Helper()
		var n int
		if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM content_notes_opened WHERE item_id = $1::bigint`, item).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Keys with the focus away from the note's buttons, and a click on an
	// answer.
	eval[bool](t, ctx, `(document.activeElement.blur(), true)`)
	keys(t, ctx, "44334")
	keys(t, ctx, "\r")
	keys(t, ctx, "jy5\r")
	eval[bool](t, ctx, `(document.querySelector('input[name="answer.emotion"][value="4"]').click(), true)`)
	if got := chosen(t, ctx); len(got) != 0 {
		t.Fatalf("behind the note the form took answers %v", got)
	}
	if !eval[bool](t, ctx, `!!document.querySelector('#content-note') && document.querySelector('#messages').hidden`) {
		t.Fatal("keys took the content note away")
	}
	var requests int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM answer_sets`).Scan(&requests); err != nil || requests != 0 {
		t.Fatalf("%d answer sets stored behind the note (%v)", requests, err)
	}
	if n := opened(); n != 0 {
		t.Fatalf("the note counts as opened %d times before Show", n)
	}

	// Show the conversation: recorded, then shown, the answers unlocked.
	eval[bool](t, ctx, `(document.querySelector('[data-testid=show-conversation]').focus(), true)`)
	keys(t, ctx, "\r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!document.querySelector('#content-note') && !document.querySelector('#messages').hidden &&
		!document.querySelector('fieldset.answers').disabled && !document.querySelector('[data-testid=submit]').disabled`)); err != nil {
		t.Fatalf("Show did not open the dialogue: %v", err)
	}
	if n := opened(); n != 1 {
		t.Fatalf("the opening was recorded %d times", n)
	}

	// A later visit, with nothing kept in the tab, shows it at once.
	eval[bool](t, ctx, `(sessionStorage.clear(), true)`)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, "")
	if !eval[bool](t, ctx, `!document.querySelector('#content-note') && !document.querySelector('#messages').hidden`) {
		t.Fatal("the revisit shows the content note again")
	}
	keys(t, ctx, "44334\r")
	waitItem(t, ctx, item)
	if got := l.storedAnswers(t, item); !sameAnswers(got, map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}) {
		t.Fatalf("stored %v", got)
	}
}

// TestBrowserTwoTabs: the same item open in two tabs, answered differently
// in each. The second tab's submit shows both answer sets side by side;
// keeping stores the second as an edit with history, discarding keeps the
// first.
func TestBrowserTwoTabs(t *testing.T) {
	t.Parallel()
	items := replies + `{"id":"r3","messages":[{"role":"user","content":"I lost my job."},{"role":"assistant","content":"That is a shock."}]}` + "\n"
	l := newLabelling(t, labellingOpts{items: items})
	tab1 := l.browse(t, l.anns[0])
	// A second tab of the same browser, on the same item.
	tab2, closeTab := chromedp.NewContext(tab1)
	defer closeTab()
	sameItem := func() string {
		t.Helper()
		loc, err := chromedp.Run(tab1, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(tab2, chromedp.Navigate(loc)); err != nil {
			t.Fatal(err)
		}
		return waitItem(t, tab2, "")
	}
	history := func(item string) int {
		t.Helper()
		var n int
		writeQueuedLabels(t, l.a.db)
		if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM label_history h JOIN labels x ON x.id = h.label_id WHERE x.item_id = $1::bigint`, item).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	conflict := func(keys2 string) {
		t.Helper()
		keys(t, tab2, keys2+"\r")
		// Settled, not just swapped in: until htmx settles, the panel wears
		// the old workspace's class and its layout, and the buttons move
		// when it settles, so a click aimed before then can land elsewhere.
		if _, err := chromedp.Run(tab2, browsertest.Poll[bool](`!!document.querySelector('[data-testid=resubmitted]:not(.htmx-settling)')`)); err != nil {
			t.Fatalf("the second tab's submit did not show both answer sets: %v", err)
		}
		rows := eval[map[string]string](t, tab2, `Object.fromEntries([...document.querySelectorAll('[data-testid=compare-row][data-key]')].map(r =>
			[r.dataset.key, r.querySelector('[data-testid=first]').textContent.trim() + '|' + r.querySelector('[data-testid=second]').textContent.trim() + '|' + r.dataset.differs]))`)
		if rows["emotion"] != "4|2|true" || rows["safety"] != "3|2|true" {
			t.Fatalf("the comparison shows %v", rows)
		}
	}

	// Keep: the second tab's answers become an edit of the first ones.
	first := sameItem()
	keys(t, tab1, "44334\r")
	waitItem(t, tab1, first)
	conflict("22222")
	if got := l.storedAnswers(t, first); got["emotion"] != "4" {
		t.Fatalf("before choosing, stored %v", got)
	}
	if err := chromedp.Do(tab2, chromedp.Click(chromedp.CSS(`[data-testid=keep-new]`))); err != nil {
		t.Fatal(err)
	}
	waitItem(t, tab2, first)
	want := map[string]string{"emotion": "2", "validation": "2", "helpfulness": "2", "safety": "2", "overall": "2"}
	if got := l.storedAnswers(t, first); !sameAnswers(got, want) || history(first) != 5 {
		t.Fatalf("after keeping, stored %v with %d history rows", got, history(first))
	}

	// Discard: the first tab's answers stay, untouched.
	second := sameItem()
	keys(t, tab1, "44334\r")
	waitItem(t, tab1, second)
	conflict("22222")
	if err := chromedp.Do(tab2, chromedp.Click(chromedp.CSS(`[data-testid=discard-new]`))); err != nil {
		t.Fatal(err)
	}
	if third := waitItem(t, tab2, second); third == first {
		t.Fatalf("discarding went back to %s", third)
	}
	want = map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}
	if got := l.storedAnswers(t, second); !sameAnswers(got, want) || history(second) != 0 {
		t.Fatalf("after discarding, stored %v with %d history rows", got, history(second))
	}
}
