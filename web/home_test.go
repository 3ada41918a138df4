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
