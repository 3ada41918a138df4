package web_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// browse signs u in through the sign-in page with the keyboard alone,
// starting from the project's workspace address, presses Start labelling
// (Enter: it has the focus) and returns the browser on the first item, once
// the page's script has set it up.
func (l *labelling) browse(t *testing.T, u *attune.User) context.Context {
	t.Helper()
	ctx := browsertest.New(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(l.a.srv.URL+projectPath(l.p, "/annotate")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		// The email field has the focus; Tab moves to the password.
		chromedp.KeyEvent(u.Email),
		chromedp.KeyEvent("\t"),
		chromedp.KeyEvent("pw-"+u.Email),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-reason=ready] [data-testid=start-labelling]`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#workspace[data-item]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, "")
	return ctx
}

// waitItem waits until the workspace shows an item other than prev and the
// script has set it up; it returns the item's id.
func waitItem(t *testing.T, ctx context.Context, prev string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const ws = document.querySelector('#workspace[data-item]');
		const f = document.querySelector('#label-form');
		// The address must name the item too: htmx pushes it just after
		// the swap, and going back before then would leave the workspace.
		return ws && ws.dataset.item !== %q && f && f.elements.clock.value === 'js' &&
			location.pathname.endsWith('/items/' + ws.dataset.item) ? ws.dataset.item : '';
	})()`, prev)
	// A poll under way when the page navigates fails with the page it
	// watched; it starts again on the new page.
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

// navigated reports whether err says the page went away under an action.
func navigated(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated") || strings.Contains(msg, "context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}

// keys types keys where the focus is.
func keys(t *testing.T, ctx context.Context, k string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(k)); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// chosen returns the answers chosen on the form, by rubric item.
func chosen(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	return eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#label-form input[type=radio]:checked')].map(r => [r.name.slice(7), r.value]))`)
}

func (l *labelling) storedAnswers(t *testing.T, itemID string) map[string]string {
	t.Helper()
	writeQueuedLabels(t, l.a.db)
	rows, err := l.a.db.Pool().Query(context.Background(), `SELECT rubric_item_key, value FROM labels WHERE item_id = $1::bigint`, itemID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameAnswers(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBrowserKeyboardLikert labels replies with the keyboard alone: digits
// answer and move on, Enter submits, htmx swaps the next item in and the
// address follows it.
func TestBrowserKeyboardLikert(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	ctx := l.browse(t, l.anns[0])

	// The current item has a visible focus ring and holds the focus.
	ring := eval[string](t, ctx, `getComputedStyle(document.querySelector('fieldset.ritem.current')).boxShadow`)
	if ring == "" || ring == "none" {
		t.Fatalf("the current item has no focus ring (box-shadow %q)", ring)
	}
	if key := eval[string](t, ctx, `document.activeElement.closest('fieldset.ritem.current').dataset.key`); key != "emotion" {
		t.Fatalf("focus is on %q, want the first item", key)
	}
	// The reply under evaluation is marked.
	if n := eval[int](t, ctx, `document.querySelectorAll('#rated[data-role=assistant]').length`); n != 1 {
		t.Fatalf("%d rated replies marked", n)
	}

	first := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	// Enter on an incomplete form says what is missing instead of submitting.
	keys(t, ctx, "4\r")
	if msg := eval[string](t, ctx, `document.querySelector('[data-answered]').textContent`); !strings.Contains(msg, "Answer validation, helpfulness, safety, overall first") {
		t.Fatalf("incomplete Enter said %q", msg)
	}
	// j/k and arrows move between items; digits answer the current one.
	keys(t, ctx, "k") // back to emotion
	keys(t, ctx, "5") // emotion 5, on to validation
	keys(t, ctx, "4")
	keys(t, ctx, "3")
	keys(t, ctx, kbUp)
	keys(t, ctx, "2") // helpfulness again: 2
	keys(t, ctx, "3")
	keys(t, ctx, "4")
	want := map[string]string{"emotion": "5", "validation": "4", "helpfulness": "2", "safety": "3", "overall": "4"}
	if got := chosen(t, ctx); !sameAnswers(got, want) {
		t.Fatalf("chosen %v, want %v", got, want)
	}
	eval[int](t, ctx, `window.samePage = 1`)
	keys(t, ctx, "\r")
	second := waitItem(t, ctx, first)
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.HasSuffix(loc, fmt.Sprintf("/items/%s", second)) {
		t.Fatalf("after the swap the address is %s, want item %s", loc, second)
	}
	if !eval[bool](t, ctx, `window.samePage === 1`) {
		t.Fatal("the next item came with a full page load, not a swap")
	}
	if got := l.storedAnswers(t, first); !sameAnswers(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	notice, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=notice]`)))
	if !strings.Contains(notice, "Submitted") {
		t.Fatalf("notice %q", notice)
	}

	// Back to the first item with ←: its labels can be changed.
	keys(t, ctx, kbLeft)
	waitItem(t, ctx, second)
	if mode := eval[string](t, ctx, `document.querySelector('#workspace').dataset.mode`); mode != "edit" {
		t.Fatalf("the previous label opened in %q mode", mode)
	}
	keys(t, ctx, "1\r") // emotion 1, save
	waitItem(t, ctx, first)
	var history int
	writeQueuedLabels(t, l.a.db)
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM label_history h JOIN labels l ON l.id = h.label_id WHERE l.item_id = $1::bigint`, first).Scan(&history); err != nil {
		t.Fatal(err)
	}
	if got := l.storedAnswers(t, first)["emotion"]; got != "1" || history != 1 {
		t.Fatalf("after the edit emotion is %q with %d history rows", got, history)
	}

	// The last item: the done screen.
	keys(t, ctx, "44334\r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=done]')`)); err != nil {
		t.Fatal(err)
	}
}

// Keys as chromedp's kb package writes them.
const (
	kbUp   = kb.ArrowUp
	kbDown = kb.ArrowDown
	kbLeft = kb.ArrowLeft
	kbEsc  = kb.Escape
)

// TestBrowserKeyboardCriteria answers twelve criteria with Y, N and A: A
// does nothing where NA is not offered, a warning is confirmed with the
// keyboard too.
func TestBrowserKeyboardCriteria(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "")})
	ctx := l.browse(t, l.anns[0])
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	if n := eval[int](t, ctx, `document.querySelectorAll('input[name="answer.CQ8"][value=NA]').length`); n != 0 {
		t.Fatal("NA is offered for CQ8")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('input[name="answer.CQ2"][value=NA]').length`); n != 1 {
		t.Fatal("NA is not offered for CQ2")
	}
	keys(t, ctx, "yyyyyyy") // CQ1–CQ7
	keys(t, ctx, "a")       // CQ8: no NA
	if got := chosen(t, ctx)["CQ8"]; got != "" {
		t.Fatalf("A chose %q on CQ8", got)
	}
	if msg := eval[string](t, ctx, `document.querySelector('[data-answered]').textContent`); msg != "NA is not offered for CQ8." {
		t.Fatalf("A on CQ8 said %q", msg)
	}
	keys(t, ctx, "n") // CQ8 NO
	keys(t, ctx, "a") // CQ9 NA: no crisis words
	keys(t, ctx, "yy")
	keys(t, ctx, "a") // CP3 NA on 12 turns: a warning to confirm
	keys(t, ctx, "\r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`document.activeElement && document.activeElement.dataset.testid === 'confirm'`)); err != nil {
		t.Fatalf("the warning's confirm box did not take the focus: %v", err)
	}
	warning, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=problem-warning]`)))
	if !strings.Contains(warning, "CP3") {
		t.Fatalf("warning %q", warning)
	}
	keys(t, ctx, " \r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=done]')`)); err != nil {
		t.Fatal(err)
	}
	got := l.storedAnswers(t, item)
	if got["CQ8"] != "NO" || got["CQ9"] != "NA" || got["CP3"] != "NA" || got["CQ1"] != "YES" || len(got) != 12 {
		t.Fatalf("stored %v", got)
	}
}

// TestBrowserKeyboardSingle labels the last reply of a 40-turn dialogue:
// the reply is marked and scrolled into view in the dialogue's own pane.
func TestBrowserKeyboardSingle(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "empathetic-understanding@1", items: conversation("long", 40, "")})
	ctx := l.browse(t, l.anns[0])
	inView := eval[bool](t, ctx, `(() => {
		const pane = document.querySelector('#messages').getBoundingClientRect();
		const r = document.querySelector('#rated').getBoundingClientRect();
		return r.top >= pane.top - 1 && r.top < pane.bottom && document.querySelector('#messages').scrollTop > 0;
	})()`)
	if !inView {
		t.Fatal("the rated reply is not scrolled into view")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('.msg .turn').length`); n != 80 {
		t.Fatalf("%d numbered messages, want 80", n)
	}
	// D moves to the dialogue, whose pane then scrolls by keyboard; Esc
	// goes back to the rubric, where the answer keys work again. The
	// shortcut list says so.
	if !strings.Contains(eval[string](t, ctx, `document.querySelector('#shortcuts').textContent`), "PageDown") {
		t.Fatal("the shortcut list does not say how to scroll the dialogue")
	}
	keys(t, ctx, "d")
	if id := eval[string](t, ctx, `document.activeElement.id`); id != "messages" {
		t.Fatalf("after D the focus is on %q, want the dialogue", id)
	}
	before := eval[float64](t, ctx, `document.querySelector('#messages').scrollTop`)
	keys(t, ctx, kb.PageUp)
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.querySelector('#messages').scrollTop < %f`, before))); err != nil {
		t.Fatalf("PageUp did not scroll the dialogue: %v", err)
	}
	keys(t, ctx, kbEsc)
	if id := eval[string](t, ctx, `document.activeElement.id`); id == "messages" {
		t.Fatal("Esc left the focus on the dialogue")
	}
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	keys(t, ctx, "4\r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=done]')`)); err != nil {
		t.Fatal(err)
	}
	if got := l.storedAnswers(t, item); got["understanding"] != "4" {
		t.Fatalf("stored %v", got)
	}
}

// TestBrowserDraftSurvivesRefresh: answers and notes come back after a
// refresh, whether the autosave reached the server or not.
func TestBrowserDraftSurvivesRefresh(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	ctx := l.browse(t, l.anns[0])
	keys(t, ctx, "52") // emotion 5, validation 2; helpfulness is current
	keys(t, ctx, "r")  // a note on helpfulness
	keys(t, ctx, "needs a concrete step")
	keys(t, ctx, kbEsc)
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`document.querySelector('[data-testid=draft-status]').textContent.includes('Draft saved')`)); err != nil {
		t.Fatalf("the draft was not saved: %v", err)
	}
	check := func(want map[string]string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitItem(t, ctx, "")
		if got := chosen(t, ctx); !sameAnswers(got, want) {
			t.Fatalf("after a refresh the form has %v, want %v", got, want)
		}
		if note := eval[string](t, ctx, `document.querySelector('textarea[name="rationale.helpfulness"]').value`); note != "needs a concrete step" {
			t.Fatalf("the note came back as %q", note)
		}
		status, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=draft-status]`)))
		if !strings.Contains(status, "Restored") {
			t.Fatalf("draft status %q", status)
		}
	}
	check(map[string]string{"emotion": "5", "validation": "2"})

	// A refresh right after a key press, before the autosave: the browser's
	// own copy (and the beacon sent on the way out) keep it.
	keys(t, ctx, "1") // helpfulness, the first item without an answer
	check(map[string]string{"emotion": "5", "validation": "2", "helpfulness": "1"})
}

// TestBrowserDoubleEnter presses Enter twice in a row: one answer set.
func TestBrowserDoubleEnter(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{})
	ctx := l.browse(t, l.anns[0])
	first := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	keys(t, ctx, "44334")
	// Two Enters as fast as the browser takes them, then a click on Submit
	// for good measure.
	err := chromedp.Do(ctx, chromedp.KeyEvent("\r\r"), chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=submit]').click()`, chromedp.EvalIgnoreExceptions))
	if err != nil && !strings.Contains(err.Error(), "undefined") {
		t.Fatal(err)
	}
	second := waitItem(t, ctx, first)
	var sets int
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM answer_sets`).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if sets != 1 {
		t.Fatalf("%d answer sets after a double Enter", sets)
	}
	if got := chosen(t, ctx); len(got) != 0 {
		t.Fatalf("the next item starts with answers %v", got)
	}

	// The back button returns to the item submitted, now to edit; forward
	// returns to the one being labelled.
	if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, second)
	if id, mode := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`), eval[string](t, ctx, `document.querySelector('#workspace').dataset.mode`); id != first || mode != "edit" {
		t.Fatalf("back went to item %s in %s mode, want %s to edit", id, mode, first)
	}
	if err := chromedp.Do(ctx, chromedp.NavigateForward()); err != nil {
		t.Fatal(err)
	}
	if id := waitItem(t, ctx, first); id != second {
		t.Fatalf("forward went to item %s, want %s", id, second)
	}
}

// TestBrowserDialogueIsText: markup in a dialogue is shown as text and no
// script in it runs.
func TestBrowserDialogueIsText(t *testing.T) {
	t.Parallel()
	evil := `<script>alert(1)</script><b>bold</b><img src=x onerror="window.pwned=1">`
	items := fmt.Sprintf(`{"id":"x1","messages":[{"role":"user","content":%q},{"role":"assistant","content":"I hear you."}]}`, evil) + "\n"
	l := newLabelling(t, labellingOpts{items: items})
	ctx := l.browse(t, l.anns[0])
	text := eval[string](t, ctx, `document.querySelector('[data-role=user] .text').textContent`)
	if text != evil {
		t.Fatalf("the message shows %q, want the text %q", text, evil)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('.msg .text *').length`); n != 0 {
		t.Fatalf("the message holds %d elements", n)
	}
	if pwned := eval[bool](t, ctx, `window.pwned === 1`); pwned {
		t.Fatal("a script in the dialogue ran")
	}
}

// TestBrowserContentNoteSkipAndFlag: a dialogue about suicide is announced
// first; F flags with a reason and S skips, with the keyboard.
func TestBrowserContentNoteSkipAndFlag(t *testing.T) {
	t.Parallel()
	items := `{"id":"s1","messages":[{"role":"user","content":"I keep thinking everyone would be better off without me."},{"role":"assistant","content":"I'm really glad you told me. You matter, and you deserve support right now."}]}
` + replies
	l := newLabelling(t, labellingOpts{items: items})
	ctx := l.browse(t, l.anns[0])
	if hidden := eval[bool](t, ctx, `document.querySelector('#messages').hidden`); !hidden {
		t.Fatal("the dialogue is shown before the content note")
	}
	note, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=content-note]`)))
	if !strings.Contains(note, "This conversation mentions suicide or self-harm.") || !strings.Contains(note, "better off without me") {
		t.Fatalf("content note %q", note)
	}
	if f := eval[string](t, ctx, `document.activeElement.dataset.testid`); f != "show-conversation" {
		t.Fatalf("focus is on %q, want the Show button", f)
	}
	keys(t, ctx, "\r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!document.querySelector('#messages').hidden && !document.querySelector('#content-note')`)); err != nil {
		t.Fatalf("Enter on Show did not show the dialogue: %v", err)
	}
	first := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)

	// F: flag with a reason. The reasons are radio buttons: arrows choose.
	keys(t, ctx, "f")
	if f := eval[string](t, ctx, `document.activeElement.value`); f != "broken" {
		t.Fatalf("F put the focus on %q, want the first reason", f)
	}
	keys(t, ctx, kbDown+kbDown+"\r") // distressing
	second := waitItem(t, ctx, first)
	var flag string
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT flag FROM assignments WHERE item_id = $1::bigint`, first).Scan(&flag); err != nil {
		t.Fatal(err)
	}
	if flag != "distressing" {
		t.Fatalf("flag %q", flag)
	}

	// S: skip, Enter confirms.
	keys(t, ctx, "s")
	if f := eval[string](t, ctx, `document.activeElement.dataset.testid`); f != "skip-submit" {
		t.Fatalf("S put the focus on %q", f)
	}
	keys(t, ctx, "\r")
	waitItem(t, ctx, second)
	var state string
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT state FROM assignments WHERE item_id = $1::bigint`, second).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "skipped" {
		t.Fatalf("after S the item is %s", state)
	}

	// ? lists every shortcut.
	keys(t, ctx, "?")
	help, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#shortcuts`)))
	for _, k := range []string{"Enter", "Skip", "Flag", "Your previous label", "Score the item"} {
		if !strings.Contains(help, k) {
			t.Fatalf("the shortcut list lacks %q: %s", k, help)
		}
	}
	keys(t, ctx, kbEsc)
	if open := eval[bool](t, ctx, `document.querySelector('#shortcuts').open`); open {
		t.Fatal("Esc did not close the shortcut list")
	}
}

// updateDocs makes the screenshot tests also write the documentation's
// images in docs/img (make screenshots); without it they write only to
// testdata/screenshots, so committed images do not change with every run.
var updateDocs = flag.Bool("update-docs", false, "also write the documentation's screenshots to docs/img")

// TestBrowserScreenshots takes the workspace at a laptop's size and a
// phone's, and checks that the rubric sits beside the dialogue on the one
// and below it on the other.
func TestBrowserScreenshots(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "empathetic-dialogue@2", items: screenshotDialogue})
	ctx := l.browse(t, l.anns[0])
	keys(t, ctx, "4"+kbUp) // one answer chosen, back on the first item
	shootScreens(t, ctx, "annotate", func(w int64) {
		t.Helper()
		side := eval[bool](t, ctx, `(() => {
			const d = document.querySelector('[data-testid=dialogue]').getBoundingClientRect();
			const r = document.querySelector('[data-testid=rubric]').getBoundingClientRect();
			return r.left >= d.right - 1;
		})()`)
		below := eval[bool](t, ctx, `(() => {
			const d = document.querySelector('[data-testid=dialogue]').getBoundingClientRect();
			const r = document.querySelector('[data-testid=rubric]').getBoundingClientRect();
			return r.top >= d.bottom - 1;
		})()`)
		if w >= 1024 && !side || w < 600 && !below {
			t.Fatalf("at %dpx the rubric is beside the dialogue: %v, below it: %v", w, side, below)
		}
		eval[int](t, ctx, `document.querySelector('#rubric-scroll').scrollTop = 0; 0`)
		browsertest.Screenshot(t, ctx, "testdata/screenshots", fmt.Sprintf("annotate-%d-full", w))
		if below {
			// Show where the rubric starts below the dialogue.
			eval[float64](t, ctx, `window.scrollTo(0, document.querySelector('[data-testid=rubric]').getBoundingClientRect().top + window.scrollY - innerHeight * 0.45); window.scrollY`)
		}
	})
}

// screenshotDialogue is a reply of the kind the Likert rubric rates.
const screenshotDialogue = `{"id":"reply-0417","messages":[{"role":"user","content":"I've been having panic attacks every time I have to present at work. I used to love public speaking, and now I dread Mondays because that's when we have the team review.\n\nI don't even know who to talk to about it."},{"role":"assistant","content":"That sounds exhausting — and it makes sense that it's confusing, since this is something you used to enjoy. Panic that shows up around one situation is very common and very treatable.\n\nA couple of things that might help: a short breathing routine before the review (in for 4, hold for 4, out for 6), and telling one trusted colleague so you're not carrying it alone. If it keeps happening, a GP or a therapist can help you work through it — many workplaces also offer a free, confidential counselling line.\n\nWould it help to talk through what happens in your body just before a presentation?"}]}
`
