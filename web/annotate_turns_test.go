package web_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// setEvidence sets the project's turn evidence setting.
func (l *labelling) setEvidence(t *testing.T, policy rubric.EvidencePolicy) {
	t.Helper()
	p := l.p
	if err := l.a.db.UpdateProject(context.Background(), l.lead.ID, p.ID, store.ProjectChanges{Name: p.Name, Instructions: p.Instructions,
		Overlap: p.Overlap, Lease: p.Lease, EvidencePolicy: policy}); err != nil {
		t.Fatal(err)
	}
}

// ownTurns is the turn evidence stored with the annotator's answers to an
// item.
func (l *labelling) ownTurns(t *testing.T, itemID int64) rubric.Evidence {
	t.Helper()
	set, err := l.a.db.FindOwnAnswerSet(context.Background(), l.p.ID, itemID, l.anns[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return set.Evidence
}

// TestAnnotateTurnsPlainForm marks turns with plain form posts, as a
// browser without JavaScript does: each criterion that can fail has a
// labelled turns field; a required project refuses NO without turns, a
// word that is no number and a turn past the dialogue, each beside the
// criterion with what was typed kept and nothing stored; turns it takes are
// stored, shown again when the label is changed, and replaced by an edit.
func TestAnnotateTurnsPlainForm(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{rubric: "coaching-conversation@2.0", items: conversation("c4", 4, "")})
	l.setEvidence(t, rubric.EvidenceRequired)
	c := l.signedIn(l.anns[0])
	path, page := l.start(c)
	item := itemIDOf(t, path)
	wantContains(t, page, `data-evidence="required"`, `name="evidence.CQ3"`, `data-testid="turns-CQ3"`,
		`<label for="evidence-CQ3">`, "Turns where CQ3 fails", "(required with NO)", `aria-describedby="evidence-CQ3-help"`,
		`data-testid="answer-CQ3-NO" data-fails`, `data-turn="4"`)
	wantLacks(t, page, `data-testid="answer-CQ3-YES" data-fails`)

	answers := maps.Clone(criteriaAllYes)
	answers["CQ3"] = "NO"
	for _, c2 := range []struct {
		name, turns string
		says        []string
	}{
		{"no turns", "", []string{"CQ3 (", "this project requires the turn or turns where the item fails with answer NO; mark at least one turn"}},
		{"a word", "2, x", []string{`CQ3: &#34;x&#34; is not a turn number`, `value="2, x"`}},
		{"past the dialogue", "2, 9", []string{"turn 9 does not exist; this dialogue has 4 turns", `value="2, 9"`}},
		{"turns on YES", "", nil},
	} {
		f := form(answers, "evidence.CQ3", c2.turns)
		if c2.says == nil {
			// Turns on an answer that takes none are the rubric's to refuse.
			f = form(criteriaAllYes, "evidence.CQ3", "2")
			c2.says = []string{"turn evidence goes only with NO"}
		}
		r := c.post(path, f)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, append([]string{`data-testid="problems"`, `data-testid="item-error"`}, c2.says...)...)
		if n := l.answerSets(item); n != 0 {
			t.Fatalf("%s: %d answer sets stored, want none", c2.name, n)
		}
	}

	r := c.post(path, form(answers, "evidence.CQ3", " 3, 1 "))
	wantStatus(t, r, http.StatusSeeOther)
	if got := l.ownTurns(t, item); len(got) != 1 || !slices.Equal(got["CQ3"], []int{1, 3}) {
		t.Fatalf("stored turns %v, want CQ3 at 1 and 3", got)
	}

	// Changing the label shows the turns marked, and keeps what is posted.
	edit := c.get(path)
	wantContains(t, edit, `data-mode="edit"`, `name="evidence.CQ3" value="1, 3"`)
	r = c.post(path, form(answers, "mode", "edit", "evidence.CQ3", "4"))
	wantStatus(t, r, http.StatusSeeOther)
	if got := l.ownTurns(t, item); !slices.Equal(got["CQ3"], []int{4}) {
		t.Fatalf("after the edit the turns are %v, want CQ3 at 4", got)
	}
	r = c.post(path, form(answers, "mode", "edit", "evidence.CQ3", "four"))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, `CQ3: &#34;four&#34; is not a turn number`)
	if got := l.ownTurns(t, item); !slices.Equal(got["CQ3"], []int{4}) {
		t.Fatalf("a refused edit changed the turns to %v", got)
	}

	// With turn evidence off there is no field to mark turns in.
	l.setEvidence(t, rubric.EvidenceOff)
	wantLacks(t, c.get(path), `name="evidence.CQ3"`)
}
