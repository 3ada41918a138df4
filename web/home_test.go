package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

func TestHomeLinksAnnotatorsToTheirWork(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p, _ := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	c := a.client()
	c.mustSignIn(ann)
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	wantContains(t, home, `data-testid="start-labelling"`, fmt.Sprintf(`<form method="post" action="/projects/%d/annotate"`, p.ID))
	// The button leads straight to an item of the project.
	r := c.post(fmt.Sprintf("/projects/%d/annotate", p.ID), nil)
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); !strings.HasPrefix(loc, fmt.Sprintf("/projects/%d/items/", p.ID)) {
		t.Fatalf("annotate redirects to %q", loc)
	}
}

// TestHomeShowsASystemKeyOtherThanTheDefault: the project list names a
// project's system key where its lead chose one (arm), and says nothing
// of the default (system), which every other project has.
func TestHomeShowsASystemKeyOtherThanTheDefault(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	arm, _ := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	plain, _ := apiProject(t, a, "coaching-conversation@2.0", 1, twoItems, ann)
	if _, err := a.db.Pool().Exec(t.Context(), `UPDATE projects SET system_key = '<arm>' WHERE id = $1`, arm.ID); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	c.mustSignIn(ann)
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	cards := strings.Split(home.body, `<li data-testid="project">`)
	if len(cards) != 3 {
		t.Fatalf("%d project cards, want 2", len(cards)-1)
	}
	for _, card := range cards[1:] {
		key := strings.Contains(card, `data-testid="project-system-key">&lt;arm&gt;</code>`)
		switch {
		case strings.Contains(card, fmt.Sprintf(`href="/projects/%d"`, arm.ID)) && !key:
			t.Errorf("the card of the project keyed by <arm> does not name its key, escaped: %s", card)
		case strings.Contains(card, fmt.Sprintf(`href="/projects/%d"`, plain.ID)) && strings.Contains(card, "project-system-key"):
			t.Errorf("the card of a project with the default key names it: %s", card)
		}
	}
}
