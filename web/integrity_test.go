package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestRemovedAnnotatorCannotSubmit: an assignment taken before a removal
// stores nothing afterwards, through the API's submit, edit and skip.
func TestRemovedAnnotatorCannotSubmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p, _ := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	c := a.apiFor(ann)
	status, first := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, first)
	}
	asg := first["assignment"].(map[string]any)["id"].(float64)
	itemID := first["item"].(map[string]any)["id"].(float64)
	if status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers, "next": true}); status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, body)
	}
	status, second := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, second)
	}
	held := second["assignment"].(map[string]any)["id"].(float64)

	if err := a.db.RemoveMember(ctx, nil, p.ID, ann.ID); err != nil {
		t.Fatal(err)
	}
	status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", held), map[string]any{"answers": likertAnswers})
	if status != http.StatusForbidden {
		t.Errorf("submit after removal: %d %v, want 403", status, body)
	}
	edited := map[string]string{"emotion": "5", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}
	status, body = c.call("PUT", fmt.Sprintf("/api/v1/projects/%d/items/%.0f/labels", p.ID, itemID), map[string]any{"answers": edited})
	if status != http.StatusForbidden && status != http.StatusNotFound {
		t.Errorf("edit after removal: %d %v, want 403 or 404", status, body)
	}
	status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", held), map[string]string{})
	if status != http.StatusForbidden {
		t.Errorf("skip after removal: %d %v, want 403", status, body)
	}
	var sets, done, revision int
	if err := a.db.Pool().QueryRow(ctx, `SELECT count(*), max(revision) FROM answer_sets WHERE project_id = $1`, p.ID).Scan(&sets, &revision); err != nil {
		t.Fatal(err)
	}
	if err := a.db.Pool().QueryRow(ctx, `SELECT sum(done) FROM item_counts WHERE project_id = $1`, p.ID).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if sets != 1 || revision != 1 || done != 1 {
		t.Fatalf("after removal: %d answer sets at revision %d, %d items done; want the one from before, unchanged", sets, revision, done)
	}
}

// TestAPIActiveTimeBounded: the API takes an item's active time within the
// bound the workspace keeps, and refuses more with a 422 naming the field
// (a stored int64 max once made every later edit of the item a 500).
func TestAPIActiveTimeBounded(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p, _ := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	c := a.apiFor(ann)
	status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	itemID := next["item"].(map[string]any)["id"].(float64)
	submit := fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg)
	edit := fmt.Sprintf("/api/v1/projects/%d/items/%.0f/labels", p.ID, itemID)
	for _, bad := range []string{"9223372036854775807", "-1", "86400001"} {
		body := `{"answers":{"emotion":"4","validation":"4","helpfulness":"3","safety":"3","overall":"4"},"active_ms":` + bad + `}`
		status, out := c.call("POST", submit, body)
		if status != http.StatusUnprocessableEntity || out["fields"] == nil || out["fields"].(map[string]any)["active_ms"] == nil {
			t.Errorf("submit with active_ms %s: %d %v, want 422 naming active_ms", bad, status, out)
		}
	}
	if status, out := c.call("POST", submit, map[string]any{"answers": likertAnswers, "active_ms": 86400000}); status != http.StatusCreated {
		t.Fatalf("submit with a day's active time: %d %v", status, out)
	}
	status, out := c.call("PUT", edit, `{"answers":{"emotion":"5","validation":"4","helpfulness":"3","safety":"3","overall":"4"},"active_ms":9223372036854775807}`)
	if status != http.StatusUnprocessableEntity || out["fields"] == nil {
		t.Errorf("edit with active_ms int64 max: %d %v, want 422 naming active_ms", status, out)
	}
	for range 2 {
		if status, out := c.call("PUT", edit, map[string]any{"answers": likertAnswers, "active_ms": 86400000}); status != http.StatusOK {
			t.Fatalf("edit: %d %v", status, out)
		}
	}
}
