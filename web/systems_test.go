package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestSystemsDrawForm posts the systems view's draw form: a k of 0 comes
// back on the page with 422 and the field's message, nothing drawn; a
// good draw goes back (303) to the view, which lists what it sent; an
// unknown judge is a note on the page, not an error page.
func TestSystemsDrawForm(t *testing.T) {
	t.Parallel()
	w := newSystemsWorld(t)
	c := w.a.client()
	c.mustSignIn(w.lead)
	path := fmt.Sprintf("/projects/%d/draws", w.p.ID)
	form := url.Values{"judge": {"@gpt"}, "rubric_item": {"emotion"}, "system_key": {"system"}, "k": {"0"}}
	r := c.post(path, form)
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, `data-testid="draw-error-k"`) || !strings.Contains(r.body, "k is 0") {
		t.Fatalf("k = 0: %d %.500s", r.StatusCode, r.body)
	}
	if strings.Contains(r.body, `data-testid="draw-row"`) {
		t.Error("a refused draw is listed")
	}
	form.Set("k", "2")
	form.Set("system", "v1")
	r = c.post(path, form)
	loc := r.Header.Get("Location")
	if r.StatusCode != http.StatusSeeOther || !strings.Contains(loc, fmt.Sprintf("/projects/%d/systems?", w.p.ID)) || !strings.Contains(loc, "draw=") {
		t.Fatalf("draw: %d to %q", r.StatusCode, loc)
	}
	r = c.get(loc)
	if n := len(regexp.MustCompile(`data-testid="drawn-item"><bdi>sv(0\d|1[01])</bdi>`).FindAllString(r.body, -1)); r.StatusCode != http.StatusOK || n != 2 {
		t.Errorf("after the draw: %d, %d v1 items shown sent", r.StatusCode, n)
	}
	r = c.get(fmt.Sprintf("/projects/%d/systems?judge=nobody&rubric_item=emotion", w.p.ID))
	if r.StatusCode != http.StatusOK || !strings.Contains(r.body, `data-testid="systems-note"`) || !strings.Contains(r.body, "nobody") {
		t.Errorf("an unknown judge: %d %.300s", r.StatusCode, r.body)
	}
}
