package web_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/rubric"
)

// turnsLabelling is a project on the coaching rubric that requires turn
// evidence, with one conversation of four turns.
func turnsLabelling(t *testing.T) *labelling {
	t.Helper()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c4", 4, "")})
	l.setEvidence(t, rubric.EvidenceRequired)
	return l
}

// waitFor polls js in the browser until it is true.
func waitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](js)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

func idOf(t *testing.T, item string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(item, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

const turnsFocused = `document.activeElement && document.activeElement.id === 'evidence-CQ3'`

// answerRest answers CQ4 to CP3 of the coaching rubric on a four-turn
// conversation by keyboard, from CQ4 in hand: afterwards the submit button
// has the focus.
func answerRest(t *testing.T, ctx context.Context) {
	t.Helper()
	keys(t, ctx, "yyyyy") // CQ4–CQ8
	keys(t, ctx, "a")     // CQ9 NA: no crisis words
	keys(t, ctx, "yy")    // CP1, CP2
	keys(t, ctx, "a")     // CP3 NA: under 10 turns
	waitFor(t, ctx, "the submit button takes the focus", `document.activeElement && document.activeElement.dataset.testid === 'submit'`)
}

// TestBrowserTurnsKeyboard: on a project that requires turn evidence, NO
// by keyboard puts the focus in the criterion's labelled turns field; the
// turns typed there are shown on the dialogue, Enter goes on, and the
// submission stores them. No mouse is used.
func TestBrowserTurnsKeyboard(t *testing.T) {
	t.Parallel()
	l := turnsLabelling(t)
	ctx := l.browse(t, l.anns[0])
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	// Before a failing answer no turns field shows.
	if !eval[bool](t, ctx, `document.querySelector('[data-testid=evidence-CQ3]').hidden`) {
		t.Fatal("the turns field of CQ3 shows before any answer")
	}
	keys(t, ctx, "yy") // CQ1, CQ2
	keys(t, ctx, "n")  // CQ3 NO
	waitFor(t, ctx, "NO on CQ3 puts the focus in its turns field", turnsFocused)
	if label := eval[string](t, ctx, `document.activeElement.labels[0].textContent.replace(/\s+/g, ' ').trim()`); label != "Turns where CQ3 fails (required with NO)" {
		t.Fatalf("the turns field is labelled %q", label)
	}
	if got := chosen(t, ctx)["CQ3"]; got != "NO" {
		t.Fatalf("CQ3 is %q, and the n was typed into the field?", got)
	}
	keys(t, ctx, "4, 2")
	tags := eval[[]string](t, ctx, `[...document.querySelectorAll('#messages li[data-turn]')].map(li => li.dataset.turn + ':' + li.querySelector('[data-testid=turn-tags]').textContent)`)
	for _, want := range []string{"2:Fails here: CQ3", "4:Fails here: CQ3", "1:", "3:"} {
		if !slices.Contains(tags, want) {
			t.Fatalf("the dialogue's marks are %v, want %q among them", tags, want)
		}
	}
	keys(t, ctx, "\r") // done with CQ3: on to CQ4
	waitFor(t, ctx, "Enter in the turns field goes on to CQ4", `document.activeElement.name === 'answer.CQ4' && document.querySelector('fieldset.ritem.current').dataset.key === 'CQ4'`)
	if n := l.answerSets(idOf(t, item)); n != 0 {
		t.Fatalf("Enter in the turns field submitted the form (%d answer sets)", n)
	}
	answerRest(t, ctx)
	keys(t, ctx, "\r")
	waitFor(t, ctx, "the submission is stored", `!!document.querySelector('[data-testid=done]')`)
	got := l.ownTurns(t, idOf(t, item))
	if len(got) != 1 || !slices.Equal(got["CQ3"], []int{2, 4}) {
		t.Fatalf("stored turns %v, want CQ3 at 2 and 4", got)
	}
	if a := l.storedAnswers(t, item); a["CQ3"] != "NO" || len(a) != 12 {
		t.Fatalf("stored answers %v", a)
	}
}

// TestBrowserTurnsClick marks turns with the buttons on the dialogue's
// messages for the criterion in hand: a second press takes a mark off,
// an answer that takes no turns clears them and hides the buttons, and
// the turns marked are stored.
func TestBrowserTurnsClick(t *testing.T) {
	t.Parallel()
	l := turnsLabelling(t)
	ctx := l.browse(t, l.anns[0])
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	if n := eval[int](t, ctx, `[...document.querySelectorAll('[data-testid=turn-mark]')].filter(b => !b.hidden).length`); n != 0 {
		t.Fatalf("%d mark buttons show before a failing answer", n)
	}
	keys(t, ctx, "yyn")
	waitFor(t, ctx, "NO on CQ3 puts the focus in its turns field", turnsFocused)
	mark := func(turn string) string {
		return `#messages li[data-turn="` + turn + `"][data-role=assistant] [data-testid=turn-mark]`
	}
	if text := eval[string](t, ctx, `document.querySelector('`+mark("3")+`').textContent`); text != "Mark turn 3 for CQ3" {
		t.Fatalf("the mark button says %q", text)
	}
	click(t, ctx, mark("3"))
	click(t, ctx, mark("1"))
	click(t, ctx, mark("2"))
	click(t, ctx, mark("2")) // off again
	value := func() string { return eval[string](t, ctx, `document.querySelector('#evidence-CQ3').value`) }
	if v := value(); v != "1, 3" {
		t.Fatalf("after the clicks the turns are %q, want 1, 3", v)
	}
	pressed := eval[[]string](t, ctx, `[...document.querySelectorAll('#messages li[data-role=user] [data-testid=turn-mark]')].map(b => b.getAttribute('aria-pressed'))`)
	if !slices.Equal(pressed, []string{"true", "false", "true", "false"}) {
		t.Fatalf("the mark buttons of turns 1–4 are pressed %v", pressed)
	}
	if tag := eval[string](t, ctx, `document.querySelector('#messages li[data-turn="3"] [data-testid=turn-tags]').textContent`); tag != "Fails here: CQ3" {
		t.Fatalf("turn 3 says %q", tag)
	}

	// YES takes no turns: they are cleared, and nothing is marked.
	click(t, ctx, "#evidence-CQ3")
	keys(t, ctx, kbEsc) // back to CQ3's answer
	keys(t, ctx, "y")   // CQ3 YES, on to CQ4
	if v := value(); v != "" {
		t.Fatalf("YES on CQ3 kept the turns %q", v)
	}
	if !eval[bool](t, ctx, `document.querySelector('[data-testid=evidence-CQ3]').hidden && !document.querySelector('#messages li.marked') &&
		[...document.querySelectorAll('[data-testid=turn-mark]')].every(b => b.hidden)`) {
		t.Fatal("after YES on CQ3 its turns field or the marks still show")
	}
	if msg := eval[string](t, ctx, `document.querySelector('[data-answered]').textContent`); !strings.Contains(msg, "Cleared the turns marked for CQ3") {
		t.Fatalf("clearing the turns said %q", msg)
	}

	keys(t, ctx, "k") // back to CQ3
	keys(t, ctx, "n")
	waitFor(t, ctx, "NO on CQ3 again puts the focus in its turns field", turnsFocused)
	click(t, ctx, mark("4"))
	click(t, ctx, mark("1"))
	if v := value(); v != "1, 4" {
		t.Fatalf("the turns are %q, want 1, 4", v)
	}
	click(t, ctx, "#evidence-CQ3")
	keys(t, ctx, "\r")
	waitFor(t, ctx, "Enter goes on to CQ4", `document.querySelector('fieldset.ritem.current').dataset.key === 'CQ4'`)
	answerRest(t, ctx)
	click(t, ctx, "[data-testid=submit]")
	waitFor(t, ctx, "the submission is stored", `!!document.querySelector('[data-testid=done]')`)
	got := l.ownTurns(t, idOf(t, item))
	if len(got) != 1 || !slices.Equal(got["CQ3"], []int{1, 4}) {
		t.Fatalf("stored turns %v, want CQ3 at 1 and 4", got)
	}
}

// TestBrowserTurnsRequiredRefused: NO without turns on a project that
// requires them is refused beside the criterion, named in the problems,
// and nothing is stored; with a turn typed in, the same answers are stored.
func TestBrowserTurnsRequiredRefused(t *testing.T) {
	t.Parallel()
	l := turnsLabelling(t)
	ctx := l.browse(t, l.anns[0])
	item := eval[string](t, ctx, `document.querySelector('#workspace').dataset.item`)
	itemID := idOf(t, item)
	keys(t, ctx, "yyn")
	waitFor(t, ctx, "NO on CQ3 puts the focus in its turns field", turnsFocused)
	keys(t, ctx, "\r") // no turns
	answerRest(t, ctx)
	keys(t, ctx, "\r")
	waitFor(t, ctx, "the refusal is shown", `!!document.querySelector('[data-testid=problems]')`)
	problem := eval[string](t, ctx, `document.querySelector('[data-testid=problem-error]').textContent`)
	beside := eval[string](t, ctx, `(document.querySelector('#item-CQ3 [data-testid=item-error]') || {}).textContent || ''`)
	for _, s := range []string{problem, beside} {
		if !strings.Contains(s, "CQ3") || !strings.Contains(s, "mark at least one turn") {
			t.Fatalf("the refusal says %q beside CQ3 and %q in the problems", beside, problem)
		}
	}
	if n := l.answerSets(itemID); n != 0 {
		t.Fatalf("%d answer sets stored after the refusal", n)
	}
	if eval[bool](t, ctx, `document.querySelector('[data-testid=evidence-CQ3]').hidden`) {
		t.Fatal("after the refusal CQ3's turns field is hidden")
	}
	click(t, ctx, "#evidence-CQ3")
	keys(t, ctx, "3")
	click(t, ctx, "[data-testid=submit]")
	waitFor(t, ctx, "the submission is stored", `!!document.querySelector('[data-testid=done]')`)
	if got := l.ownTurns(t, itemID); !slices.Equal(got["CQ3"], []int{3}) {
		t.Fatalf("stored turns %v, want CQ3 at 3", got)
	}
}
