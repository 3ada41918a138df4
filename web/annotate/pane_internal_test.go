package annotate

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/attune/attune/internal/rubric"
	aview "github.com/attune/attune/web/views/annotate"
)

// paneCase is a workspace as a page shows it, under one built-in rubric
// and one state of the form.
type paneCase struct {
	name string
	def  *rubric.Definition
	v    aview.Workspace
}

// paneCases lays out every built-in rubric blank, and again with every
// item answered, noted, and the engine's problems beside some, under facts
// that fill every condition's text.
func paneCases(t *testing.T) []paneCase {
	t.Helper()
	var out []paneCase
	for _, def := range rubric.Builtins() {
		blank := aview.Workspace{ItemID: 7, SourceID: "s7", URLs: aview.URLs{Submit: "/projects/1/items/7/labels"}}
		blank.Rubric, blank.Problems = aview.RubricOf(def, rubric.Facts{Turns: 3}, nil, nil, nil)
		out = append(out, paneCase{name: def.Ref().String() + "/blank", def: def, v: blank})

		st := formState{answers: map[string]string{}, rationales: map[string]string{}, rationale: "overall <b>note</b>"}
		var issues rubric.Issues
		for i, it := range def.Items {
			if allowed := def.Allowed(&def.Items[i]); len(allowed) > 0 {
				st.answers[it.Key] = string(allowed[i%len(allowed)])
			}
			if i%2 == 0 {
				st.rationales[it.Key] = fmt.Sprintf("note on %s & <i>why</i>", it.Key)
			}
			switch i % 3 {
			case 0:
				issues = append(issues, rubric.Issue{Item: it.Key, Severity: rubric.Blocking, Message: "needs an answer"})
			case 1:
				issues = append(issues, rubric.Issue{Item: it.Key, Severity: rubric.Warning, Message: "check this <one>"})
			}
		}
		issues = append(issues, rubric.Issue{Item: "nowhere", Severity: rubric.Blocking, Message: "general"})
		full := aview.Workspace{ItemID: 8, SourceID: "s8", Editing: true, URLs: aview.URLs{Submit: "/projects/1/items/8/labels"}}
		facts := rubric.Facts{Turns: 40, Terms: []string{"suicide", "self harm"}, Marked: true, Crisis: rubric.Signalled}
		full.Rubric, full.Problems = aview.RubricOf(def, facts, st.answers, st.rationales, issues)
		out = append(out, paneCase{name: def.Ref().String() + "/answered", def: def, v: full})
	}
	return out
}

func renderView(t *testing.T, v aview.Workspace) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := aview.View(v).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRubricPaneRendersAsFresh checks that a page written with its
// rubric's pane rendered before is the page rendered whole, for every
// built-in rubric, blank and answered.
func TestRubricPaneRendersAsFresh(t *testing.T) {
	t.Parallel()
	for i, c := range paneCases(t) {
		t.Run(c.name, func(t *testing.T) {
			fresh := renderView(t, c.v)
			panes := newPaneCache(paneCacheSize)
			rp, err := panes.get(context.Background(), int64(i/2+1), c.def)
			if err != nil {
				t.Fatal(err)
			}
			if c.v.Rubric.Pane != nil {
				t.Fatal("the case already has a pane")
			}
			c.v.Rubric.Pane = rp.pane
			if c.v.Rubric.Pane.Fits(c.v.Rubric) == false {
				t.Fatal("the pane does not fit its own rubric, so the page rendered it afresh")
			}
			if cached := renderView(t, c.v); !bytes.Equal(cached, fresh) {
				t.Errorf("with the pane rendered before, the page differs:\n%s", firstDifference(cached, fresh))
			}
			// Filled from the cached layout, the page is the same again.
			v := c.v
			v.Rubric, v.Problems = aview.FillRubric(c.def, rp.base, rubric.Facts{}, nil, nil, nil)
			v.Rubric.Pane = rp.pane
			blank := c.v
			blank.Rubric, blank.Problems = aview.RubricOf(c.def, rubric.Facts{}, nil, nil, nil)
			if got, want := renderView(t, v), renderView(t, blank); !bytes.Equal(got, want) {
				t.Errorf("filled from the cached layout, the page differs:\n%s", firstDifference(got, want))
			}
		})
	}
}

// TestRubricPanesKeptPerVersion checks that each rubric version has its
// own pane, that a pane never stands in for another version's, and that
// the cache keeps no more than its size.
func TestRubricPanesKeptPerVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	defs := rubric.Builtins()
	if len(defs) < 3 {
		t.Fatalf("%d built-in rubrics; the test needs three", len(defs))
	}
	panes := newPaneCache(2)
	a, err := panes.get(ctx, 1, defs[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := panes.get(ctx, 2, defs[1])
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a.pane == b.pane {
		t.Fatal("two rubric versions share one pane")
	}
	if again, _ := panes.get(ctx, 1, defs[0]); again != a {
		t.Error("the pane of version 1 was rendered again while kept")
	}

	// The pane of version 2 set on a page of version 1 is not used: the
	// page is rendered afresh, as version 1.
	v := aview.Workspace{ItemID: 1, SourceID: "x"}
	v.Rubric, v.Problems = aview.RubricOf(defs[0], rubric.Facts{Turns: 2}, nil, nil, nil)
	fresh := renderView(t, v)
	v.Rubric.Pane = b.pane
	if b.pane.Fits(v.Rubric) {
		t.Fatal("the pane of one rubric fits another")
	}
	if got := renderView(t, v); !bytes.Equal(got, fresh) {
		t.Errorf("a page of %s with the pane of %s differs from its own:\n%s", defs[0].Ref(), defs[1].Ref(), firstDifference(got, fresh))
	}

	// A third version evicts the least recently used (version 2).
	if _, err := panes.get(ctx, 3, defs[2]); err != nil {
		t.Fatal(err)
	}
	if n := panes.order.Len(); n != 2 {
		t.Errorf("the cache keeps %d panes, want at most 2", n)
	}
	if again, _ := panes.get(ctx, 1, defs[0]); again != a {
		t.Error("version 1, used last, was evicted")
	}
	if again, _ := panes.get(ctx, 2, defs[1]); again == b {
		t.Error("version 2, used least recently, was kept")
	}
}

// firstDifference shows where two pages part.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-80, 0)
	return fmt.Sprintf("at byte %d:\n got %q\nwant %q", i, got[from:min(i+80, len(got))], want[from:min(i+80, len(want))])
}
