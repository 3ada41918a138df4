package web_test

import (
	"context"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/settingscorpus"
	"github.com/attune/attune/web"
)

// fieldErrorRE finds a form's field messages as the pages write them.
var fieldErrorRE = regexp.MustCompile(`data-testid="error-([a-z_]+)">([^<]*)<`)

// pageErrors returns the field messages a form page shows.
func pageErrors(body string) map[string]string {
	out := map[string]string{}
	for _, m := range fieldErrorRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// TestSettingsCorpusWeb posts every case of the settings corpus through
// the judge and project forms: each is refused on the fields the rules
// refuse, with the rules' messages, and only what they accept is stored.
func TestSettingsCorpusWeb(t *testing.T) {
	t.Parallel()
	c := settingscorpus.Load()
	a := newApp(t, func(o *web.Options) { o.JudgePolicy = c.JudgePolicy() })
	lead := a.user("lead@example.org", attune.RoleLead)
	cl := a.client()
	cl.mustSignIn(lead)
	check := func(what string, r response, want map[string]string) {
		t.Helper()
		if len(want) == 0 {
			if r.StatusCode != http.StatusSeeOther {
				t.Errorf("%s: status %d, want 303; errors %v", what, r.StatusCode, pageErrors(r.body))
			}
			return
		}
		if r.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422", what, r.StatusCode)
			return
		}
		if got := pageErrors(r.body); !maps.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", what, got, want)
		}
	}
	for i, k := range c.Judges {
		v := c.Values(c.JudgeBase, k)
		if v["name"] != "" {
			v["name"] = fmt.Sprintf("%s%d", v["name"], i)
		}
		form := url.Values{}
		for f, x := range v {
			form.Set(f, x)
		}
		r := cl.post("/judges", form)
		check("judge "+k.Name, r, c.WantJudge(v))
		wantLacks(t, r, "hunter2-secret", "Zq81mN0pLkQ7vB2xC4dE6fG8hJ")
	}
	rubricID := strconv.FormatInt(a.rubricID("empathetic-understanding@1"), 10)
	stored := map[string]map[string]string{} // the accepted cases by name
	for i, k := range c.Projects {
		v := c.Values(c.ProjectBase, k)
		want := c.WantProject(v)
		if len(want) == 0 {
			v["name"] = fmt.Sprintf("%s %d", v["name"], i)
		}
		form := url.Values{"rubric": {rubricID}}
		for f, x := range v {
			form.Set(f, x)
		}
		check("project "+k.Name, cl.post("/projects", form), want)
		if len(want) == 0 {
			stored[v["name"]] = v
		}
	}
	js, err := a.db.ListJudges(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := a.db.ListAllProjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := acceptedCases(c.Judges); len(js) != n {
		t.Errorf("%d judges stored, want %d", len(js), n)
	}
	if n := acceptedCases(c.Projects); len(ps) != n {
		t.Errorf("%d projects stored, want %d", len(ps), n)
	}
	for name, v := range stored {
		p, err := a.db.FindProjectByName(context.Background(), name)
		if err != nil {
			t.Errorf("project %q: %v", name, err)
			continue
		}
		th, err := a.db.ProbeThresholds(context.Background(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := settingscorpus.StoredDiffers(v, p, th); len(d) > 0 {
			t.Errorf("project %q: stored %v unlike the case: %+v", name, d, p)
		}
	}
}

func acceptedCases(cases []settingscorpus.Case) int {
	n := 0
	for _, k := range cases {
		if len(k.Refused) == 0 {
			n++
		}
	}
	return n
}
