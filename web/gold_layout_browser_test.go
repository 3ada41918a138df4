package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/store"
)

// rationaleOf is what a rater wrote on a rubric item: a couple of
// sentences, as people and judges write them.
func rationaleOf(who, key string) string {
	return fmt.Sprintf("%s on %s: the assistant keeps to the point across the turns, names the pressure the user describes "+
		"and asks before it advises; nothing here stands out as a problem for this criterion.", who, key)
}

// TestBrowserAdjudicateFits opens a disagreement on the twelve-criterion
// coaching rubric, rated by two people and a judge, on a laptop's screen:
// the whole page fits in about two screens, the safety gate's items come
// first, a key and a label show the rationales, the page stacks on a
// phone without scrolling sideways, and saving the gold still works.
func TestBrowserAdjudicateFits(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", overlap: 2, annotators: 2,
		items: conversation("long", 8, "I stay late every night and still fall behind.")})
	l.labelThroughAPI(t, func(i int, source string) map[string]string {
		if i == 1 {
			return criteria("CQ3", "NO", "CQ8", "NO")
		}
		return criteria()
	}, func(i int, source string) map[string]string {
		out := map[string]string{}
		for k := range criteriaAllYes {
			out[k] = rationaleOf(fmt.Sprintf("rater %d", i), k)
		}
		return out
	})
	l.judge(t, "strict", map[string]map[string]string{"long": criteria("CQ3", "NO")})
	if _, err := l.a.db.ApplyConsensus(context.Background(), l.p.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	id := l.itemID(t, "long")
	ctx := browsertest.New(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1366, 850)); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(l.a.srv.URL+c3PathOf(projectPath(l.p, ""), id)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.KeyEvent(l.lead.Email),
		chromedp.KeyEvent("\t"),
		chromedp.KeyEvent("pw-"+l.lead.Email),
		chromedp.KeyEvent("\r"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitAdjudicate(t, ctx, ""); got != "long" {
		t.Fatalf("the page shows %q, want long", got)
	}

	// The height the page needs to show everything: the document's, and
	// what a pane of its own would hide below its fold.
	height := func() int {
		t.Helper()
		return eval[int](t, ctx, `(() => {
			const s = document.querySelector('#adj-scroll');
			const hidden = s ? Math.max(0, s.scrollHeight - s.clientHeight) : 0;
			return document.documentElement.scrollHeight + hidden;
		})()`)
	}
	h := height()
	t.Logf("adjudication page at 1366×850: %dpx tall", h)
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "adjudicate-coaching")
	if h > 2*850+120 {
		t.Fatalf("the page is %dpx tall at 1366×850, want at most about two screens (%dpx)", h, 2*850+120)
	}
	// The dialogue beside the table, narrower.
	side := eval[string](t, ctx, `(() => {
		const d = document.querySelector('[data-testid=dialogue]').getBoundingClientRect();
		const r = document.querySelector('[data-testid=adj-rows]').getBoundingClientRect();
		return [r.left >= d.right - 1, d.width < r.width].join(' ');
	})()`)
	if side != "true true" {
		t.Fatalf("beside, and the dialogue narrower: %s", side)
	}

	// One row per rubric item, the safety gate's first; every rater's
	// answer in the row, and a mark where they differ.
	order := eval[string](t, ctx, `[...document.querySelectorAll('[data-testid=gold-item]')].map(e => e.dataset.key).join(' ')`)
	if keys := strings.Fields(order); len(keys) != 12 || keys[0] != "CQ8" || keys[1] != "CQ9" {
		t.Fatalf("rubric items in the order %q, want 12 with CQ8 and CQ9 first", order)
	}
	rows := eval[string](t, ctx, `['CQ8', 'CQ3', 'CQ1'].map(k => {
		const row = document.querySelector('[data-testid=gold-item][data-key=' + k + ']');
		return k + ':' + row.querySelectorAll('[data-testid=chip]').length + ':' + !!row.querySelector('[data-testid=differs]');
	}).join(' ')`)
	if rows != "CQ8:3:true CQ3:3:true CQ1:3:false" {
		t.Fatalf("chips and marks: %s", rows)
	}

	// W shows the rationales and the judge's raw reply, and hides them
	// again; without the script, the label does the same.
	shown := func() string {
		t.Helper()
		return eval[string](t, ctx, `(() => {
			const row = document.querySelector('[data-testid=gold-item][data-key=CQ3]');
			const vis = sel => [...row.querySelectorAll(sel)].some(e => e.checkVisibility());
			return [vis('[data-testid=rationale]'), vis('[data-testid=raw-reply]'), vis('[data-testid=definition]')].join(' ');
		})()`)
	}
	if s := shown(); s != "false false false" {
		t.Fatalf("before W, rationale, raw reply and definition shown: %s", s)
	}
	keys(t, ctx, "w")
	if s := shown(); s != "true true true" {
		t.Fatalf("after W, rationale, raw reply and definition shown: %s", s)
	}
	if text := eval[string](t, ctx, `document.querySelector('[data-testid=gold-item][data-key=CQ3]').innerText`); !strings.Contains(text, "rater 1 on CQ3") || !strings.Contains(text, "raw reply on CQ3") {
		t.Fatalf("the CQ3 row shows %q", text)
	}
	keys(t, ctx, "W")
	if s := shown(); s != "false false false" {
		t.Fatalf("after W twice, shown: %s", s)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`label[for=adj-why]`))); err != nil {
		t.Fatal(err)
	}
	if s := shown(); s != "true true true" {
		t.Fatalf("after a click on the label, shown: %s", s)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "adjudicate-coaching-why")

	// On a phone: stacked, and nothing scrolls sideways.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`window.innerWidth === 390`)); err != nil {
		t.Fatal(err)
	}
	phone := eval[string](t, ctx, `(() => {
		const d = document.querySelector('[data-testid=dialogue]').getBoundingClientRect();
		const r = document.querySelector('[data-testid=adj-rows]').getBoundingClientRect();
		return [r.top >= d.bottom - 1, document.documentElement.scrollWidth].join(' ');
	})()`)
	if phone != "true 390" {
		t.Fatalf("on a phone, stacked and page width: %s", phone)
	}
	browsertest.Screenshot(t, ctx, "testdata/screenshots", "adjudicate-coaching-phone")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1366, 850)); err != nil {
		t.Fatal(err)
	}

	// Saving: the lead's call on the two disputed items, the consensus on
	// the rest.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=gold-CQ8-YES]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=gold-CQ3-NO]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=accept-consensus]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		_, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=queue-empty]')`))
		if err == nil {
			break
		}
		if attempt == 5 || !navigated(err) {
			t.Fatalf("the queue is not empty after saving: %v", err)
		}
	}
	got := goldValues(t, l.a, id)
	if got["CQ8"] != "YES/adjudicated" || got["CQ3"] != "NO/adjudicated" || got["CQ1"] != "YES/adjudicated" || len(got) != 12 {
		t.Fatalf("gold = %v", got)
	}
}
