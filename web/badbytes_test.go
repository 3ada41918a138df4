package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web"
)

// badBytes are the two kinds of text PostgreSQL cannot store.
var badBytes = map[string]string{"NUL": "a\x00b", "invalid UTF-8": "a\xffb"}

// TestBadBytesRefused sends a NUL byte and invalid UTF-8 in every kind of
// text input — form fields, query parameters, the API's JSON, the fields
// and lines of uploaded files — and expects a 422 naming the field (and
// the line, for files), never a 500.
func TestBadBytesRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	lead := a.user("lee@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p, _ := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	a.member(p, lead, attune.MemberLead)
	api, leadAPI := a.apiFor(ann), a.apiFor(lead)
	status, first := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, first)
	}
	labelled := first["item"].(map[string]any)["id"].(float64)
	status, out := api.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", first["assignment"].(map[string]any)["id"].(float64)),
		map[string]any{"answers": likertAnswers, "next": true})
	if status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, out)
	}
	next := out["next"].(map[string]any)
	asg := next["assignment"].(map[string]any)["id"].(float64)
	held := next["item"].(map[string]any)["id"].(float64)

	clients := map[*attune.User]*client{}
	for _, u := range []*attune.User{admin, lead, ann} {
		clients[u] = a.client()
		clients[u].mustSignIn(u)
	}
	answers := url.Values{"answer.emotion": {"4"}, "answer.validation": {"4"}, "answer.helpfulness": {"3"},
		"answer.safety": {"3"}, "answer.overall": {"4"}}
	with := func(v url.Values, kv ...string) url.Values {
		out := url.Values{}
		for k, vs := range v {
			out[k] = vs
		}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	projectURL := fmt.Sprintf("/projects/%d", p.ID)
	itemURL := fmt.Sprintf("%s/items/%.0f", projectURL, held)

	for kind, bad := range badBytes {
		forms := []struct {
			who   *attune.User
			path  string
			form  url.Values
			field string
		}{
			{nil, "/login", url.Values{"email": {bad + "@example.org"}, "password": {"x"}}, "email"},
			{admin, "/admin/users", url.Values{"email": {"new@example.org"}, "name": {bad}, "role": {"annotator"}, "password": {"long-enough-pw"}}, "name"},
			{lead, "/projects", url.Values{"name": {bad}, "rubric": {"empathetic-dialogue@2"}, "overlap": {"2"}, "lease": {"30"}}, "name"},
			{lead, projectURL + "/edit", url.Values{"name": {"Pilot"}, "instructions": {bad}, "overlap": {"1"}, "lease": {"30"}}, "instructions"},
			{lead, projectURL + "/sensitive", url.Values{"ids": {bad}}, "ids"},
			{lead, "/judges", url.Values{"name": {bad}, "provider": {"openai"}, "base_url": {"http://127.0.0.1:1/v1"}, "model": {"m"}, "key_env": {"ATTUNE_TEST_KEY"}}, "name"},
			{ann, "/account/tokens", url.Values{"name": {bad}}, "name"},
			{ann, itemURL + "/labels", with(answers, "rationale", bad), "rationale"},
			{ann, itemURL + "/labels", with(answers, "rationale.safety", bad), "rationale.safety"},
			{ann, itemURL + "/draft", with(answers, "rationale", bad), "rationale"},
			{ann, itemURL + "/skip", url.Values{"flag": {"other"}, "note": {bad}}, "note"},
		}
		for _, f := range forms {
			c := a.client()
			if f.who != nil {
				c = clients[f.who]
			}
			r := c.post(f.path, f.form)
			if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, f.field) {
				t.Errorf("%s in %s of POST %s: %d, want 422 naming the field; body: %.300s", kind, f.field, f.path, r.StatusCode, r.body)
			}
		}
		// A query parameter.
		r := clients[lead].get(projectURL + "/report?rater=" + url.QueryEscape(bad))
		if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "rater") {
			t.Errorf("%s in a query parameter: %d, want 422 naming it; body: %.300s", kind, r.StatusCode, r.body)
		}
		// Uploads: the form's own fields and the file's lines.
		meta := `{"id":"m1","meta":{"` + bad + `":"x"},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}` + "\n"
		if kind == "NUL" {
			meta = strings.Replace(meta, "a\x00b", `a\u0000b`, 1) // JSON spells a NUL as an escape
		}
		labels := "item,rater,rater_kind,rubric_item,value,rationale\na1,Bo,human,emotion,4," + bad + "\n"
		uploads := []struct {
			path   string
			fields []formPart
			file   string
			want   []string
		}{
			{projectURL + "/import", nil, meta, []string{"line 1", "meta"}},
			{projectURL + "/import", []formPart{{"update", bad}}, goodJSONL, []string{"update"}},
			{projectURL + "/labels/import", nil, labels, []string{"line 2", "rationale"}},
		}
		for _, u := range uploads {
			r := clients[lead].upload(u.path, u.fields, "f.csv", u.file)
			if r.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("%s in an upload to %s: %d, want 422; body: %.300s", kind, u.path, r.StatusCode, r.body)
				continue
			}
			for _, w := range u.want {
				if !strings.Contains(strings.ToLower(r.body), w) {
					t.Errorf("%s in an upload to %s: the page does not say %q; body: %.600s", kind, u.path, w, r.body)
				}
			}
		}

		// The API's JSON: the raw bytes, or the escape for a NUL.
		js := bad
		if kind == "NUL" {
			js = `a\u0000b`
		}
		calls := []struct {
			method, path, body, field string
		}{
			{"POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg),
				`{"answers":{"emotion":"4","validation":"4","helpfulness":"3","safety":"3","overall":"4"},"rationale":"` + js + `"}`, "rationale"},
			{"POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg),
				`{"answers":{"emotion":"4","validation":"4","helpfulness":"3","safety":"3","overall":"4"},"rationales":{"safety":"` + js + `"}}`, "rationales.safety"},
			{"PUT", fmt.Sprintf("/api/v1/projects/%d/items/%.0f/labels", p.ID, labelled),
				`{"answers":{"emotion":"4","validation":"4","helpfulness":"3","safety":"3","overall":"4"},"rationale":"` + js + `"}`, "rationale"},
			{"POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", asg), `{"flag":"other","note":"` + js + `"}`, "note"},
		}
		for _, c := range calls {
			status, out := api.call(c.method, c.path, c.body)
			fields, _ := out["fields"].(map[string]any)
			if status != http.StatusUnprocessableEntity || fields[c.field] == nil {
				t.Errorf("%s in %s of %s %s: %d %v, want 422 naming the field", kind, c.field, c.method, c.path, status, out)
			}
		}
		// A NUL is an escape inside valid JSON, named by its field; invalid
		// UTF-8 is found before the line is parsed, named by its byte.
		where := map[string]string{"NUL": "meta", "invalid UTF-8": "UTF-8 at byte"}[kind]
		status, out := leadAPI.call("POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), meta)
		if status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(out["lines"]), "Line:1") ||
			!strings.Contains(fmt.Sprint(out["lines"]), where) {
			t.Errorf("%s in an API import's meta key: %d %v, want 422 naming line 1 and %q", kind, status, out, where)
		}
	}
	if logs := a.log.String(); strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("bad bytes were logged as server errors:\n%.2000s", logs)
	}
}

// TestAPIImportTooLarge: an import over the size limit is a 413, as on the
// web, not a 500 — whether the body says its length or is streamed.
func TestAPIImportTooLarge(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(o *web.Options) { o.MaxUpload = 1 << 20 })
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{})
	c := a.apiFor(lead)
	for name, body := range map[string]io.Reader{
		// Blank lines, which the reader reads past, so that the limit is
		// what stops it.
		"streamed":    io.LimitReader(blankLines{}, 2<<20),
		"with length": strings.NewReader(strings.Repeat("\n", 2<<20)),
	} {
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/projects/%d/items?format=jsonl", c.base, p.ID), body)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := contractClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "1 MiB") {
			t.Errorf("%s, an import of 2 MiB over a limit of 1: %d %s, want 413 naming the limit", name, resp.StatusCode, raw)
		}
	}
	if n := a.items(p); n != 0 {
		t.Fatalf("%d items stored", n)
	}
}

type blankLines struct{}

func (blankLines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '\n'
	}
	return len(p), nil
}
