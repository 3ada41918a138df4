package web_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"testing"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// TestEvidenceAPI: through real HTTP, turn evidence the project's policy
// or the rubric's rule refuses is a 422 whose problems name the item, and
// nothing is stored; evidence it takes is stored and given back with the
// caller's own labels, and an edit without turns clears them. The items
// are one-turn replies.
func TestEvidenceAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLabelling(t, labellingOpts{})
	setPolicy := func(policy rubric.EvidencePolicy) {
		t.Helper()
		p := l.p
		if err := l.a.db.UpdateProject(ctx, l.lead.ID, p.ID, store.ProjectChanges{Name: p.Name, Instructions: p.Instructions,
			Overlap: p.Overlap, Lease: p.Lease, EvidencePolicy: policy}); err != nil {
			t.Fatal(err)
		}
	}
	setPolicy(rubric.EvidenceRequired)
	api := l.a.apiFor(l.anns[0])
	status, next := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", l.p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := int64(next["assignment"].(map[string]any)["id"].(float64))
	item := int64(next["item"].(map[string]any)["id"].(float64))
	failing := maps.Clone(likertAnswers)
	failing["emotion"] = "2"
	submit := func(evidence map[string][]int) (int, map[string]any) {
		body := map[string]any{"answers": failing, "active_ms": 4000}
		if evidence != nil {
			body["evidence"] = evidence
		}
		return api.call("POST", fmt.Sprintf("/api/v1/assignments/%d/labels", asg), body)
	}
	labelsPath := fmt.Sprintf("/api/v1/projects/%d/items/%d/labels", l.p.ID, item)
	edit := func(evidence map[string][]int) (int, map[string]any) {
		body := map[string]any{"answers": failing, "active_ms": 1000}
		if evidence != nil {
			body["evidence"] = evidence
		}
		return api.call("PUT", labelsPath, body)
	}
	rows := func() string { return labelingRows(t, l, item, l.anns[0]) + evidenceRows(t, l, asg) }
	// refused holds a response to a 422 naming item, and the stored rows
	// to what they were.
	refused := func(what string, status int, body map[string]any, item string, before string) {
		t.Helper()
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d %v, want 422", what, status, body)
		}
		problems, _ := body["problems"].([]any)
		named := false
		for _, p := range problems {
			named = named || p.(map[string]any)["item"] == item
		}
		if !named {
			t.Errorf("%s: problems %v name no %s", what, problems, item)
		}
		if now := rows(); now != before {
			t.Errorf("%s: stored rows changed:\n before %s\n after  %s", what, before, now)
		}
	}
	before := rows()
	status, body := submit(nil)
	refused("a failing answer without turns, required", status, body, "emotion", before)
	status, body = submit(map[string][]int{"emotion": {2}})
	refused("a turn past the dialogue's end", status, body, "emotion", before)
	status, body = submit(map[string][]int{"emotion": {1}, "validation": {1}})
	refused("turns on a passing answer", status, body, "validation", before)
	if status, body = submit(map[string][]int{"emotion": {1}}); status != http.StatusCreated {
		t.Fatalf("a failing answer with its turn: %d %v", status, body)
	}
	own := func() map[string]any {
		t.Helper()
		status, body := api.call("GET", labelsPath, nil)
		if status != http.StatusOK {
			t.Fatalf("own labels: %d %v", status, body)
		}
		ev, _ := body["evidence"].(map[string]any)
		return ev
	}
	if got, want := own(), map[string]any{"emotion": []any{1.0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("own labels' evidence = %v, want %v", got, want)
	}

	before = rows()
	status, body = edit(nil)
	refused("an edit dropping the turns, required", status, body, "emotion", before)
	setPolicy(rubric.EvidenceOff)
	status, body = edit(map[string][]int{"emotion": {1}})
	refused("an edit with turns, off", status, body, "emotion", before)
	if status, body = edit(nil); status != http.StatusOK {
		t.Fatalf("an edit without turns, off: %d %v", status, body)
	}
	if got := own(); len(got) != 0 {
		t.Errorf("after an edit without turns the evidence is %v, want none", got)
	}
}

// evidenceRows are the turns stored on the labels of an assignment's item.
func evidenceRows(t *testing.T, l *labelling, assignmentID int64) string {
	t.Helper()
	var s string
	writeQueuedLabels(t, l.a.db)
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT coalesce(string_agg(l.rubric_item_key || '=' || l.evidence::text, ',' ORDER BY l.rubric_item_key), '')
		FROM labels l JOIN assignments a ON a.item_id = l.item_id AND a.rater_id = l.rater_id WHERE a.id = $1`, assignmentID).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return " | evidence " + s
}
