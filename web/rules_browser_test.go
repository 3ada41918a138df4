package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/rubric"
)

// TestBrowserForbiddenAnswerIsInert: on a 12-turn conversation CP1's NA is
// shown disabled; its key A does nothing but say why, the reason is the
// tooltip and the accessible description a screen reader reads, and the
// other answers still work from the keyboard.
func TestBrowserForbiddenAnswerIsInert(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c12", 12, "")})
	ctx := l.browse(t, l.anns[0])
	def, _ := rubric.Builtin("coaching-conversation@2.0")
	it, _ := def.Item("CP1")
	reason, _ := def.Forbids(it, rubric.NA, rubric.Facts{Turns: 12})

	if !eval[bool](t, ctx, `document.querySelector('input[name="answer.CP1"][value=NA]').disabled`) {
		t.Fatal("CP1's NA is enabled")
	}
	if got := eval[string](t, ctx, `document.querySelector('input[name="answer.CP1"][value=NA]').closest('label').title`); got != reason {
		t.Fatalf("tooltip %q, want %q", got, reason)
	}

	// The accessible description, as the browser computes it for
	// assistive technology.
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS(`input[name="answer.CP1"][value=NA]`)))
	if err != nil || len(nodes) != 1 {
		t.Fatalf("CP1's NA: %d nodes, %v", len(nodes), err)
	}
	no := false
	var ax accessibility.GetPartialAXTreeResult
	ax, err = chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: nodes[0].BackendNodeID, FetchRelatives: &no})
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	for _, n := range ax.Nodes {
		if n.BackendDOMNodeID == nodes[0].BackendNodeID && n.Description != nil {
			json.Unmarshal(n.Description.Value, &desc)
		}
	}
	if !strings.Contains(desc, reason) {
		t.Fatalf("accessible description %q does not hold the reason %q", desc, reason)
	}

	keys(t, ctx, "yyyyyyy") // CQ1–CQ7
	keys(t, ctx, "n")       // CQ8
	keys(t, ctx, "a")       // CQ9 NA: no crisis words, so offered
	if got := eval[string](t, ctx, `document.querySelector('fieldset.ritem.current').dataset.key`); got != "CP1" {
		t.Fatalf("the current item is %q, want CP1", got)
	}
	keys(t, ctx, "a") // CP1 NA: not offered
	if got := chosen(t, ctx)["CP1"]; got != "" {
		t.Fatalf("A chose %q on CP1", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('fieldset.ritem.current').dataset.key`); got != "CP1" {
		t.Fatalf("A on CP1 moved on to %q", got)
	}
	if msg := eval[string](t, ctx, `document.querySelector('[data-answered]').textContent`); msg != "Not offered here. "+reason {
		t.Fatalf("A on CP1 said %q", msg)
	}
	keys(t, ctx, "y") // CP1 YES, on to CP2
	got := chosen(t, ctx)
	if got["CP1"] != "YES" || got["CQ9"] != "NA" {
		t.Fatalf("chosen %v", got)
	}
	if key := eval[string](t, ctx, `document.querySelector('fieldset.ritem.current').dataset.key`); key != "CP2" {
		t.Fatalf("after Y on CP1 the current item is %q", key)
	}
}
