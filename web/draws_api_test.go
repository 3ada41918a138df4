package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestDrawsAPI draws over real HTTP: a lead draws two v2 items with a
// seed given as a string, the annotator is then given exactly those, the
// list shows the draw; k of 0, k beyond the pool and a bad seed are
// refused naming the field, and an annotator may not draw.
func TestDrawsAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("drawer-ann@example.org", attune.RoleAnnotator)
	var items strings.Builder
	for i, sys := range []string{"v1", "v1", "v2", "v2", "v2"} {
		fmt.Fprintf(&items, `{"id":"s%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}],"meta":{"system":%q}}`+"\n", i, i, sys)
	}
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 1, items.String(), ann)
	path := fmt.Sprintf("/api/v1/projects/%d/draws", p.ID)
	status, out := lead.call("POST", path, map[string]any{"k": 2, "system": "v2", "seed": "18446744073709551615"})
	if status != http.StatusCreated {
		t.Fatalf("draw: %d %v", status, out)
	}
	if out["seed"] != "18446744073709551615" || out["k"] != float64(2) || out["system"] != "v2" {
		t.Errorf("draw = %v", out)
	}
	drawn := map[string]bool{}
	for _, x := range out["items"].([]any) {
		id := x.(map[string]any)["source_id"].(string)
		if id != "s2" && id != "s3" && id != "s4" {
			t.Errorf("drew %s, not a v2 item", id)
		}
		drawn[id] = true
	}
	if len(drawn) != 2 {
		t.Fatalf("drawn %v", drawn)
	}
	ac := a.apiFor(ann)
	got := map[string]bool{}
	for range 3 {
		status, next := ac.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
		if status != http.StatusOK {
			break
		}
		item, _ := next["item"].(map[string]any)
		got[fmt.Sprint(item["source_id"])] = true
		asg := next["assignment"].(map[string]any)
		if s, body := ac.call("POST", fmt.Sprintf("/api/v1/assignments/%v/labels", asg["id"]), map[string]any{"answers": likertAnswers}); s != http.StatusOK && s != http.StatusCreated {
			t.Fatalf("submit: %d %v", s, body)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(drawn) {
		t.Errorf("the annotator was given %v, want the drawn %v", got, drawn)
	}
	status, list := lead.call("GET", path, nil)
	if ds, _ := list["draws"].([]any); status != http.StatusOK || len(ds) != 1 || ds[0].(map[string]any)["id"] != out["id"] {
		t.Errorf("list: %d %v", status, list)
	}

	for _, c := range []struct {
		body  map[string]any
		names string
	}{
		{map[string]any{"k": 0}, "k is 0"},
		{map[string]any{}, "give k"},
		{map[string]any{"k": 3, "system": "v1"}, `only 2 judge-only items of system \"v1\"`},
		{map[string]any{"k": 1, "seed": "-4"}, "seed"},
	} {
		status, body := lead.call("POST", path, c.body)
		if status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprintf("%q", fmt.Sprint(body)), c.names) {
			t.Errorf("%v: %d %v, want 422 saying %s", c.body, status, body, c.names)
		}
	}
	if status, body := ac.call("POST", path, map[string]any{"k": 1}); status != http.StatusForbidden {
		t.Errorf("an annotator drawing: %d %v", status, body)
	}
}
