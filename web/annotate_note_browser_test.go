package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
)

// noteItems are three dialogues the wellbeing list announces with a
// content note.
const noteItems = `{"id":"n1","messages":[{"role":"user","content":"Some days I think about suicide."},{"role":"assistant","content":"Thank you for telling me. You deserve support right now."}]}
{"id":"n2","messages":[{"role":"user","content":"I keep thinking about suicide at night."},{"role":"assistant","content":"That sounds frightening. Is someone with you tonight?"}]}
{"id":"n3","messages":[{"role":"user","content":"Suicide has been on my mind this week."},{"role":"assistant","content":"I'm glad you said it. Can we talk about what is going on?"}]}
{"id":"n4","messages":[{"role":"user","content":"My brother died by suicide last year."},{"role":"assistant","content":"I'm so sorry. How are you coping with it now?"}]}
`

// noteState says whether the item on screen is behind its content note:
// "note" (the note, the dialogue hidden), "shown" (no note, the dialogue
// and the answers open), anything else is a page half in one state.
const noteState = `(() => {
	const note = !!document.querySelector('#content-note');
	const hidden = document.querySelector('#messages').hidden;
	const locked = document.querySelector('fieldset.answers').disabled || document.querySelector('[data-testid=submit]').disabled;
	if (note && hidden && locked) return 'note';
	if (!note && !hidden && !locked) return 'shown';
	return 'note ' + note + ', hidden ' + hidden + ', locked ' + locked;
})()`

// wantNote checks the item on screen is the one wanted, in the state
// wanted.
func wantNote(t *testing.T, ctx context.Context, how, item, want string) {
	t.Helper()
	if id := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`); id != item {
		t.Fatalf("%s: item %s on screen, want %s", how, id, item)
	}
	if got := eval[string](t, ctx, noteState); got != want {
		t.Fatalf("%s: item %s is %q, want %q", how, item, got, want)
	}
}

// reveal presses Show the conversation and waits until the page shows it.
func reveal(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, `(document.querySelector('[data-testid=show-conversation]').click(), true)`)
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](noteState+` === 'shown'`)); err != nil {
		t.Fatalf("Show the conversation did not show it: %v", err)
	}
}

// TestBrowserContentNoteStaysOpen walks the ways back to an item whose
// content note was opened — a reload, a second tab, the back and forward
// buttons after htmx swapped the next item in, ← to one's previous label,
// the item the edit of a label returns to, and an item labelled through
// the API — and checks that the note does not come back on any of them,
// while an item not opened yet keeps it.
func TestBrowserContentNoteStaysOpen(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{items: noteItems, annotators: 2, overlap: 2})
	ctx := l.browse(t, l.anns[0])
	reload := func(item string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitItem(t, ctx, "")
	}

	// The first item, a full page: opened, then reloaded.
	first := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	wantNote(t, ctx, "first visit", first, "note")
	reveal(t, ctx)
	reload(first)
	wantNote(t, ctx, "reload after opening", first, "shown")

	// A second tab on the same item.
	tab, cancel := chromedp.NewContext(ctx)
	if err := chromedp.Do(tab, chromedp.Navigate(l.a.srv.URL+projectPath(l.p, "/items/"+first))); err != nil {
		t.Fatal(err)
	}
	waitItem(t, tab, "")
	wantNote(t, tab, "second tab", first, "shown")
	cancel()

	// Submitted: htmx swaps the second item in, behind its note. A second
	// tab on it, open before the note is opened in the first, shows the
	// dialogue once reloaded.
	keys(t, ctx, "44334\r")
	second := waitItem(t, ctx, first)
	wantNote(t, ctx, "the swapped-in item", second, "note")
	tab, cancel = chromedp.NewContext(ctx)
	if err := chromedp.Do(tab, chromedp.Navigate(l.a.srv.URL+projectPath(l.p, "/items/"+second))); err != nil {
		t.Fatal(err)
	}
	waitItem(t, tab, "")
	wantNote(t, tab, "second tab before opening", second, "note")
	reveal(t, ctx)
	if err := chromedp.Do(tab, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, tab, "")
	wantNote(t, tab, "second tab reloaded after opening", second, "shown")
	cancel()

	// Back to the first item (now one's label) and forward again.
	if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, second)
	wantNote(t, ctx, "back to the submitted item", first, "shown")
	if err := chromedp.Do(ctx, chromedp.NavigateForward()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, first)
	wantNote(t, ctx, "forward to the swapped-in item", second, "shown")
	reload(second)
	wantNote(t, ctx, "reload of the swapped-in item", second, "shown")

	// ← to the previous label, and back with history.
	keys(t, ctx, kbLeft)
	waitItem(t, ctx, second)
	wantNote(t, ctx, "← to the previous label", first, "shown")
	eval[bool](t, ctx, `(history.back(), true)`)
	waitItem(t, ctx, first)
	wantNote(t, ctx, "history.back() from the previous label", second, "shown")

	// The draft: an answer autosaved, then the page again, restored from
	// the server's draft and the browser's copy.
	keys(t, ctx, "4")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`document.querySelector('[data-testid=draft-status]').textContent.includes('Draft saved')`)); err != nil {
		t.Fatalf("the draft was not saved: %v", err)
	}
	keys(t, ctx, "4")
	reload(second)
	wantNote(t, ctx, "reload with a draft", second, "shown")
	if got := chosen(t, ctx); len(got) != 2 {
		t.Fatalf("the draft came back as %v", got)
	}

	// Submitted: the third item, opened; then an edit of the first label
	// returns to it.
	keys(t, ctx, "334\r")
	third := waitItem(t, ctx, second)
	wantNote(t, ctx, "the third item", third, "note")
	reveal(t, ctx)
	keys(t, ctx, kbLeft)
	waitItem(t, ctx, third)
	wantNote(t, ctx, "← from the third item", second, "shown")
	keys(t, ctx, "1\r") // change the first answer, save
	waitItem(t, ctx, second)
	wantNote(t, ctx, "the item an edit returns to", third, "shown")
	if mode := eval[string](t, ctx, `document.querySelector('#workspace').dataset.mode`); mode == "edit" {
		t.Fatalf("an edit returned to item %s in edit mode", third)
	}
	reload(third)
	wantNote(t, ctx, "reload after the edit", third, "shown")

	// The skip dialog opened and closed again, then a reload.
	keys(t, ctx, "s")
	if open := eval[bool](t, ctx, `document.querySelector('details.skip').open`); !open {
		t.Fatal("S did not open the skip dialog")
	}
	keys(t, ctx, kbEsc)
	wantNote(t, ctx, "the skip dialog closed", third, "shown")
	reload(third)
	wantNote(t, ctx, "reload after the skip dialog", third, "shown")
	if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, third)
	wantNote(t, ctx, "back from the item an edit returned to", second, "shown")

	// Forward to the third item, labelled; the fourth, opened and skipped:
	// back to it shows no note (the item is no longer one's to label).
	if err := chromedp.Do(ctx, chromedp.NavigateForward()); err != nil {
		t.Fatal(err)
	}
	waitItem(t, ctx, second)
	wantNote(t, ctx, "forward to the third item", third, "shown")
	keys(t, ctx, "44334\r")
	fourth := waitItem(t, ctx, third)
	wantNote(t, ctx, "the fourth item", fourth, "note")
	reveal(t, ctx)
	keys(t, ctx, "s")
	keys(t, ctx, "\r")
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=done]')`)); err != nil {
		t.Fatalf("skipping the last item did not end the queue: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	back := fmt.Sprintf(`location.pathname.endsWith('/items/%s') && document.readyState === 'complete' && !!document.querySelector('main')`, fourth)
	for attempt := 0; ; attempt++ {
		_, err := chromedp.Run(ctx, browsertest.Poll[bool](back))
		if err == nil {
			break
		}
		if attempt == 5 || !navigated(err) {
			t.Fatalf("back after the skip: %v", err)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#content-note').length`); n != 0 {
		t.Fatalf("back to the skipped item shows its content note again: %s", eval[string](t, ctx, `document.body.innerText`))
	}

	// Another annotator opens and labels an item through the API, then
	// looks at it in the browser: no note.
	other := l.anns[1]
	api := l.a.apiFor(other)
	status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status != 200 {
		t.Fatalf("next: %d %v", status, next)
	}
	item := fmt.Sprintf("%.0f", next["item"].(map[string]any)["id"].(float64))
	asg := next["assignment"].(map[string]any)["id"].(float64)
	if status, body := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/items/%s/content-note", l.p.ID, item), nil); status != 204 {
		t.Fatalf("open through the API: %d %v", status, body)
	}
	if status, body := api.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers, "confirm_warnings": true}); status != 201 {
		t.Fatalf("API submit: %d %v", status, body)
	}
	octx := l.browse(t, other) // claims the next item, behind its note
	wantNote(t, octx, "the other annotator's next item", eval[string](t, octx, `document.querySelector('#workspace').dataset.item`), "note")
	if err := chromedp.Do(octx, chromedp.Navigate(l.a.srv.URL+projectPath(l.p, "/items/"+item))); err != nil {
		t.Fatal(err)
	}
	waitItem(t, octx, "")
	wantNote(t, octx, "an item labelled through the API", item, "shown")
}

// TestBrowserContentNoteStaysOpenWithoutScript: with the page's scripts
// off, Show the conversation is a plain form post; the item then shows its
// dialogue, after a submit and on the way back to it too.
func TestBrowserContentNoteStaysOpenWithoutScript(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{items: noteItems})
	u := l.anns[0]
	ctx := browsertest.New(t)
	onItem := `(() => { const ws = document.querySelector('#workspace[data-item]'); return ws && location.pathname.endsWith('/items/' + ws.dataset.item) ? ws.dataset.item : ''; })()`
	// wait returns the item on screen once it is other than prev.
	wait := func(prev string) string {
		t.Helper()
		js := fmt.Sprintf(`(() => { const id = %s; return id !== %q ? id : ''; })()`, onItem, prev)
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
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(l.a.srv.URL+projectPath(l.p, "/annotate")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-form]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), u.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "pw-"+u.Email+"\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-reason=ready] [data-testid=start-labelling]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=start-labelling]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	first := wait("")
	if ran := eval[string](t, ctx, `document.querySelector('#label-form').elements.clock.value`); ran != "" {
		t.Fatalf("the page's script ran (clock %q)", ran)
	}
	wantNote(t, ctx, "first visit", first, "note")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=show-conversation]`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](noteState+` === 'shown'`)); err != nil && !navigated(err) {
		t.Fatal(err)
	}
	wait("")
	wantNote(t, ctx, "after the form post", first, "shown")
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait("")
	wantNote(t, ctx, "reload", first, "shown")

	// Answer with the mouse and submit: the next item, then back.
	for k, v := range likertAnswers {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="answer.%s"][value="%s"]`, k, v)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=submit]`))); err != nil {
		t.Fatal(err)
	}
	second := wait(first)
	wantNote(t, ctx, "the next item", second, "note")
	if n := l.answerSets(itemIDOfString(t, first)); n != 1 {
		t.Fatalf("%d answer sets after the submit", n)
	}
	if err := chromedp.Do(ctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	wait(second)
	wantNote(t, ctx, "back to the submitted item", first, "shown")
	if err := chromedp.Do(ctx, chromedp.NavigateForward()); err != nil {
		t.Fatal(err)
	}
	wait(first)
	wantNote(t, ctx, "forward to the next item", second, "note")
}

func itemIDOfString(t *testing.T, id string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(id, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
