package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/browsertest"
	"github.com/attune/attune/internal/calibration"
)

// TestBrowserQualification has a new annotator qualify on practice items
// before real ones: a missed answer is followed by feedback with the gold
// answer, the lead's explanation and the rubric's text for the level chosen;
// a passed one by the news that real items come next, and the next item
// is a real one.
func TestBrowserQualification(t *testing.T) {
	t.Parallel()
	items := replies + `{"id":"r3","messages":[{"role":"user","content":"I cannot sleep before interviews."},{"role":"assistant","content":"That is common. What helps you unwind?"}]}` + "\n"
	l := newLabelling(t, labellingOpts{items: items})
	ctx := context.Background()
	for _, source := range []string{"r1", "r2"} {
		l.goldOn(t, source, calibrationGold)
		if _, err := l.a.db.AddCalibration(ctx, &l.lead.ID, l.p.ID, source, map[string]string{"emotion": "The reply names the loneliness of moving."}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.a.db.SetCalibrationPolicy(ctx, &l.lead.ID, l.p.ID, calibration.Policy{Qualify: 1, PassPercent: 80}); err != nil {
		t.Fatal(err)
	}
	r3 := fmt.Sprint(l.itemID(t, "r3"))

	b := l.browse(t, l.anns[0])
	first := eval[string](t, b, `document.querySelector('#workspace').dataset.item`)
	if first == r3 {
		t.Fatal("a real item came before qualifying")
	}
	// The practice item is served like any other: nothing marks it.
	if body := eval[string](t, b, `document.body.innerText.toLowerCase()`); strings.Contains(body, "calibration") || strings.Contains(body, "practice") {
		t.Fatal("the item page marks a calibration item")
	}
	keys(t, b, "11111") // every rubric item at 1: far from gold
	keys(t, b, "\r")
	if err := chromedp.Do(b, chromedp.WaitVisible(chromedp.CSS(`[data-testid=feedback]`))); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, b, "testdata/screenshots", "qualification-feedback")
	summary := eval[string](t, b, `document.querySelector('[data-testid=feedback-summary]').innerText`)
	if !strings.Contains(summary, "did not pass") || !strings.Contains(summary, "0 of 1") {
		t.Fatalf("summary %q", summary)
	}
	emotion := eval[string](t, b, `document.querySelector('[data-testid=feedback-item][data-key=emotion]').textContent`)
	for _, want := range []string{"differs", "Poor", "The reply names the loneliness of moving.", "4"} {
		if !strings.Contains(emotion, want) {
			t.Fatalf("emotion feedback %q lacks %q", emotion, want)
		}
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`[data-testid=feedback-continue]`))); err != nil {
		t.Fatal(err)
	}
	second := waitItem(t, b, "")
	if second == r3 || second == first {
		t.Fatalf("after a failed practice item came %s (first %s, real %s), want the other practice item", second, first, r3)
	}
	keys(t, b, "44354") // gold
	keys(t, b, "\r")
	if err := chromedp.Do(b, chromedp.WaitVisible(chromedp.CSS(`[data-testid=feedback]`))); err != nil {
		t.Fatal(err)
	}
	summary = eval[string](t, b, `document.querySelector('[data-testid=feedback-summary]').innerText`)
	if !strings.Contains(summary, "passed it") || !strings.Contains(summary, "1 of 1") || !strings.Contains(summary, "Real items come next") {
		t.Fatalf("summary %q", summary)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`[data-testid=feedback-continue]`))); err != nil {
		t.Fatal(err)
	}
	if got := waitItem(t, b, ""); got != r3 {
		t.Fatalf("after qualifying came item %s, want the real item %s", got, r3)
	}
	// The practice answers are no labels: neither item has an answer set.
	var sets int
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets WHERE project_id = $1`, l.p.ID).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if sets != 0 {
		t.Fatalf("%d answer sets after two practice items", sets)
	}
}
