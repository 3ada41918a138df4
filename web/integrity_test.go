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
	if err := a.db.Pool().QueryRow(ctx, `SELECT sum(done) FROM items WHERE project_id = $1`, p.ID).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if sets != 1 || revision != 1 || done != 1 {
		t.Fatalf("after removal: %d answer sets at revision %d, %d items done; want the one from before, unchanged", sets, revision, done)
	}
}
