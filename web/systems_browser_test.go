package web_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/evaluation"
)

// systemsWorld is a project of 24 items, 12 of system v1 and 12 of v2, a
// judge (@gpt) that rated every item on emotion, a person from an earlier
// round who labelled four of each, and an annotator.
type systemsWorld struct {
	a    *app
	p    *attune.Project
	lead *attune.User
	ann  *attune.User
}

func newSystemsWorld(t *testing.T) systemsWorld {
	t.Helper()
	a := newApp(t)
	ann := a.user("systems-ann@example.org", attune.RoleAnnotator)
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i := range 24 {
		sys := "v1"
		if i >= 12 {
			sys = "v2"
		}
		fmt.Fprintf(&items, `{"id":"sv%02d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}],"meta":{"system":%q}}`+"\n", i, i, sys)
		j := 2 + i%4
		if sys == "v2" {
			j = 3 + i%3
		}
		fmt.Fprintf(&labels, "sv%02d,@gpt,judge,emotion,%d\n", i, j)
		if i%12 < 4 {
			fmt.Fprintf(&labels, "sv%02d,earlier,human,emotion,%d\n", i, min(5, j+i%2))
		}
	}
	p, lc := apiProject(t, a, "empathetic-dialogue@2", 1, items.String(), ann)
	if status, body := lc.call("POST", fmt.Sprintf("/api/v1/projects/%d/labels", p.ID), labels.String()); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("labels import: %d %v", status, body)
	}
	// A lead of a short name: the header must fit a phone with it.
	lead := a.user("systems-lead@example.org", attune.RoleLead)
	if err := a.db.AddMember(context.Background(), nil, p.ID, lead.ID, attune.MemberLead); err != nil {
		t.Fatal(err)
	}
	return systemsWorld{a: a, p: p, lead: lead, ann: ann}
}

func (w systemsWorld) path() string {
	return fmt.Sprintf("/projects/%d/systems?judge=@gpt&rubric_item=emotion", w.p.ID)
}

// TestBrowserSystemsView: the lead reaches the systems view from the
// report, sees per system the three figures with λ and the difference
// between the systems, says the sample was not drawn by attune, and the
// page fits at the widths of the fit test.
func TestBrowserSystemsView(t *testing.T) {
	t.Parallel()
	w := newSystemsWorld(t)
	ctx := signInBrowser(t, w.a, w.lead.Email, projectPath(w.p, "/report"))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.a.srv.URL+projectPath(w.p, "/report")),
		chromedp.Click(chromedp.CSS(`[data-testid=systems-view]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=systems-estimates]`)),
	); err != nil {
		t.Fatal(err)
	}
	est, err := evaluation.Estimate(context.Background(), w.a.db, evaluation.Query{ProjectID: w.p.ID, Judge: "@gpt", RubricItem: "emotion"})
	if err != nil {
		t.Fatal(err)
	}
	for _, se := range est.Systems {
		row := fmt.Sprintf(`document.querySelector('[data-testid=system][data-system="%s"]')`, se.System)
		got := eval[[]string](t, ctx, `['ppi', 'human', 'judge', 'lambda', 'n-labelled'].map(k => `+row+`.querySelector('[data-testid=' + k + ']').innerText)`)
		want := []string{fmt.Sprintf("%.2f [%.2f, %.2f]", se.PPI.Mean, se.PPI.Low, se.PPI.High), fmt.Sprintf("%.2f [%.2f, %.2f]", se.Human.Mean, se.Human.Low, se.Human.High),
			fmt.Sprintf("%.2f [%.2f, %.2f]", se.Judge.Mean, se.Judge.Low, se.Judge.High), fmt.Sprintf("%.2f", se.PPI.Lambda), fmt.Sprint(se.NLabelled)}
		if !slices.Equal(got, want) {
			t.Errorf("%s shown %v, want %v", se.System, got, want)
		}
	}
	if len(est.Systems) != 2 {
		t.Fatalf("estimated %d systems, want v1 and v2", len(est.Systems))
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid=difference][data-system="v1 − v2"]').length`); n != 1 {
		t.Errorf("%d rows of the difference v1 − v2", n)
	}
	if s := eval[string](t, ctx, `document.querySelector('[data-testid=systems-sample]').dataset.drawn`); s != "false" {
		t.Errorf("the sample is said drawn (%s) before any draw", s)
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-testid=systems-conclusion]').innerText`); strings.TrimSpace(got) != est.Conclusion.Summary {
		t.Errorf("conclusion shown %q, want %q", got, est.Conclusion.Summary)
	}
	// Against the gold, of which there is none yet: the page says there
	// is nothing to estimate, and keeps the choice.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#systems-human`), "gold"),
		chromedp.Click(chromedp.CSS(`[data-testid=systems-show]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=systems-note]`)),
	); err != nil {
		t.Fatal(err)
	}
	if h := eval[string](t, ctx, `document.querySelector('#systems-human').value`); h != "gold" {
		t.Errorf("the human choice came back as %q", h)
	}
	for _, s := range fitScreens {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height), chromedp.Navigate(w.a.srv.URL+w.path())); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`document.readyState === 'complete' && window.innerWidth === %d`, s.width))); err != nil {
			t.Fatal(err)
		}
		if wide := eval[string](t, ctx, fitCheck); wide != "" {
			t.Errorf("systems at %s px: %s", s.name, wide)
		}
		browsertest.Screenshot(t, ctx, "testdata/screenshots", "systems-"+s.name)
	}
}

// TestBrowserSystemsBudgetPreview: typing k into the preview swaps in the
// half-widths ppi projects for that k, without reloading the page.
func TestBrowserSystemsBudgetPreview(t *testing.T) {
	t.Parallel()
	w := newSystemsWorld(t)
	ctx := signInBrowser(t, w.a, w.lead.Email, w.path())
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid=budget-k]`))); err != nil {
		t.Fatal(err)
	}
	est, err := evaluation.Estimate(context.Background(), w.a.db, evaluation.Query{ProjectID: w.p.ID, Judge: "@gpt", RubricItem: "emotion"})
	if err != nil {
		t.Fatal(err)
	}
	v1 := est.Systems[0]
	pr, err := v1.Project(5)
	if err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `window.notReloaded = true`)
	eval[string](t, ctx, `document.querySelector('#budget-k').value = ''`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#budget-k`), "5")); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("± %.3f", pr.PPI)
	js := fmt.Sprintf(`(() => { const c = document.querySelector('[data-testid=projection][data-system=v1] [data-testid=ppi-then]'); return !!c && c.innerText.trim() === %q && document.querySelector('#budget-k').value === '5'; })()`, want)
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](js)); err != nil {
		t.Fatalf("the preview never showed %s for k = 5: %v (shows %q)", want, err,
			eval[string](t, ctx, `document.querySelector('[data-testid=projection][data-system=v1] [data-testid=ppi-then]').innerText`))
	}
	if !eval[bool](t, ctx, `window.notReloaded === true`) {
		t.Error("the page reloaded instead of swapping the preview in")
	}
	if human := eval[string](t, ctx, `document.querySelector('[data-testid=projection][data-system=v1] [data-testid=human-then]').innerText`); strings.TrimSpace(human) != fmt.Sprintf("± %.3f", pr.Human) {
		t.Errorf("human-only half-width with 5 more: %q, want ± %.3f", human, pr.Human)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid=separate-pair]').length`); n != 1 {
		t.Errorf("%d pairs to separate, want 1", n)
	}
	eval[string](t, ctx, `document.querySelector('#budget-k').value = ''`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#budget-k`), "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, browsertest.Poll[bool](`!!document.querySelector('[data-testid=budget-error]')`)); err != nil {
		t.Fatalf("a k that is not a number was not refused: %v", err)
	}
}

// TestBrowserDrawPutsItemsIntoQueues: the lead draws three v2 items with a
// seed from the page, which shows what was sent; the annotator, signing
// in afterwards, is given a drawn item and nothing else.
func TestBrowserDrawPutsItemsIntoQueues(t *testing.T) {
	t.Parallel()
	w := newSystemsWorld(t)
	ctx := signInBrowser(t, w.a, w.lead.Email, w.path())
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=draw-form]`)),
		chromedp.SetValue(chromedp.CSS(`#draw-k`), "3"),
		chromedp.SetValue(chromedp.CSS(`#draw-system`), "v2"),
		chromedp.SendKeys(chromedp.CSS(`#draw-seed`), "99"),
		chromedp.Click(chromedp.CSS(`[data-testid=draw-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=draw-done]`)),
	); err != nil {
		t.Fatal(err)
	}
	drawn := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid=drawn-item]')].map(li => li.innerText.trim())`)
	if len(drawn) != 3 {
		t.Fatalf("the page shows %v drawn", drawn)
	}
	for _, id := range drawn {
		if id < "sv12" {
			t.Errorf("drew %s, not a v2 item", id)
		}
	}
	if seed := eval[string](t, ctx, `document.querySelector('[data-testid=draw-seed]').innerText`); seed != "99" {
		t.Errorf("seed shown %q", seed)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid=draw-row]').length`); n != 1 {
		t.Errorf("%d draws listed", n)
	}

	actx := signInBrowser(t, w.a, w.ann.Email, projectPath(w.p, "/annotate"))
	if err := chromedp.Do(actx,
		chromedp.Navigate(w.a.srv.URL+projectPath(w.p, "/annotate")),
		chromedp.WaitVisible(chromedp.CSS(`[data-reason=ready] [data-testid=start-labelling]`)),
		chromedp.Click(chromedp.CSS(`[data-reason=ready] [data-testid=start-labelling]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workspace[data-item]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := eval[string](t, actx, `document.querySelector('#workspace').dataset.source`); !slices.Contains(drawn, got) {
		t.Errorf("the annotator was given %s, not one of the drawn %v", got, drawn)
	}
}
