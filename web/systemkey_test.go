package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestAPIProjectSystemKey: a project's system key is set on create
// (system when left out), shown by GET, changed by PATCH and kept by a
// PATCH that leaves it out; an empty, blank or overlong key is refused
// with a 422 naming system_key, and nothing changes.
func TestAPIProjectSystemKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if err := a.db.LoadBuiltinRubrics(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := a.apiFor(a.user("lee@example.org", attune.RoleLead))
	long := strings.Repeat("k", attune.MaxSystemKey+1)
	for _, bad := range []string{"", "   ", long} {
		status, raw := c.send("POST", "/api/v1/projects", map[string]any{"name": "X", "rubric": "coaching-conversation@2.0", "system_key": bad}, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"system_key"`) {
			t.Errorf("create with the key %q: %d %s, want 422 naming system_key", bad, status, raw)
		}
	}
	type project struct {
		ID        int64  `json:"id"`
		SystemKey string `json:"system_key"`
	}
	var plain, arm project
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Plain", "rubric": "coaching-conversation@2.0"}, &plain)
	c.must(http.StatusCreated, "POST", "/api/v1/projects", map[string]any{"name": "Arms", "rubric": "coaching-conversation@2.0", "system_key": "arm"}, &arm)
	if plain.SystemKey != attune.DefaultSystemKey || arm.SystemKey != "arm" {
		t.Fatalf("created with keys %q and %q", plain.SystemKey, arm.SystemKey)
	}
	path := fmt.Sprintf("/api/v1/projects/%d", arm.ID)
	get := func() string {
		t.Helper()
		var p project
		c.must(http.StatusOK, "GET", path, nil, &p)
		return p.SystemKey
	}
	if got := get(); got != "arm" {
		t.Fatalf("GET: %q", got)
	}
	for _, bad := range []string{"", long} {
		status, raw := c.send("PATCH", path, map[string]any{"system_key": bad, "overlap": 4}, nil)
		if status != http.StatusUnprocessableEntity || !strings.Contains(raw, `"system_key"`) {
			t.Errorf("PATCH the key %q: %d %s, want 422 naming system_key", bad, status, raw)
		}
	}
	if p, err := a.db.FindProjectByID(t.Context(), arm.ID); err != nil || p.SystemKey != "arm" || p.Overlap == 4 {
		t.Fatalf("a refused PATCH changed the project: %+v %v", p, err)
	}
	c.must(http.StatusOK, "PATCH", path, map[string]any{"overlap": 2}, nil)
	if got := get(); got != "arm" {
		t.Fatalf("a PATCH without the key made it %q", got)
	}
	c.must(http.StatusOK, "PATCH", path, map[string]any{"system_key": " model "}, nil)
	if got := get(); got != "model" {
		t.Fatalf("PATCH: %q, want model", got)
	}
}

// TestEstimatesReadProjectSystemKey: on a project whose system key is
// arm, estimates asked for without system_key group the items by their
// meta arm, not system; asked for with system_key they group by it; the
// items API and the items browser show each item's arm.
func TestEstimatesReadProjectSystemKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	var items strings.Builder
	arms := []string{"a", "a", "a", "b", "b", "b", ""}
	for i, arm := range arms {
		meta := `{"system":"s"}`
		if arm != "" {
			meta = fmt.Sprintf(`{"system":"s","arm":%q}`, arm)
		}
		fmt.Fprintf(&items, `{"id":"r%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}],"meta":%s}`+"\n", i, i, meta)
	}
	p, api := apiProject(t, a, "empathetic-dialogue@2", 2, items.String(), ann)
	if status, body := api.call("PATCH", fmt.Sprintf("/api/v1/projects/%d", p.ID), map[string]any{"system_key": "arm"}); status != http.StatusOK {
		t.Fatalf("set the key: %d %v", status, body)
	}
	labels := "item,rater,rater_kind,rubric_item,value\n" +
		"r0,ann,human,emotion,4\nr0,@gpt,judge,emotion,3\nr1,ann,human,emotion,5\nr1,@gpt,judge,emotion,5\nr2,@gpt,judge,emotion,2\n" +
		"r3,ann,human,emotion,4\nr3,@gpt,judge,emotion,4\nr4,ann,human,emotion,2\nr4,@gpt,judge,emotion,3\nr5,@gpt,judge,emotion,3\n" +
		"r6,ann,human,emotion,3\nr6,@gpt,judge,emotion,3\n"
	if status, body := api.call("POST", fmt.Sprintf("/api/v1/projects/%d/labels", p.ID), labels); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("labels import: %d %v", status, body)
	}
	estimate := func(query string) (string, []string) {
		t.Helper()
		status, out := api.call("GET", fmt.Sprintf("/api/v1/projects/%d/estimates?judge=@gpt&rubric_item=emotion%s", p.ID, query), nil)
		if status != http.StatusOK {
			t.Fatalf("estimates%s: %d %v", query, status, out)
		}
		var systems []string
		for _, x := range out["systems"].([]any) {
			systems = append(systems, x.(map[string]any)["system"].(string))
		}
		for _, x := range out["skipped"].([]any) {
			systems = append(systems, "skipped "+x.(map[string]any)["system"].(string))
		}
		slices.Sort(systems)
		key, _ := out["system_key"].(string)
		return key, systems
	}
	if key, systems := estimate(""); key != "arm" || !slices.Equal(systems, []string{"a", "b", "skipped (none)"}) {
		t.Errorf("estimates without system_key: key %q, systems %v; want arm's a and b, and the item naming none skipped", key, systems)
	}
	if key, systems := estimate("&system_key=system"); key != "system" || !slices.Equal(systems, []string{"s"}) {
		t.Errorf("estimates by system: key %q, systems %v", key, systems)
	}

	status, body := api.call("GET", fmt.Sprintf("/api/v1/projects/%d/items?sort=source", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("items: %d %v", status, body)
	}
	got := map[string]any{}
	for _, x := range body["items"].([]any) {
		it := x.(map[string]any)
		sys, ok := it["system"]
		if !ok {
			t.Fatalf("an item without system: %v", it)
		}
		got[it["source_id"].(string)] = sys
	}
	for i, arm := range arms {
		var want any = arm
		if arm == "" {
			want = nil
		}
		if g := got[fmt.Sprintf("r%d", i)]; g != want {
			t.Errorf("r%d: system %v, want %v", i, g, want)
		}
	}
	for _, it := range body["items"].([]any) {
		it := it.(map[string]any)
		status, detail := api.call("GET", fmt.Sprintf("/api/v1/projects/%d/items/%v", p.ID, it["id"]), nil)
		if sys, ok := detail["system"]; status != http.StatusOK || !ok || sys != it["system"] {
			t.Errorf("item %v: %d, system %v, want %v as in the list", it["source_id"], status, detail["system"], it["system"])
		}
	}

	lead := a.user("lee@example.org", attune.RoleLead)
	a.member(p, lead, attune.MemberLead)
	c := a.client()
	c.mustSignIn(lead)
	r := c.get(projectPath(p, "/browse?id=r3"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="browse-system-col">System <span class="muted">(<code>arm</code>)`, `<td class="meta-cell" data-testid="browse-system">b</td>`)

	// The systems page starts from the project's key; a draw asked for
	// without one is recorded under it.
	r = c.get(projectPath(p, "/systems"))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `name="system_key" value="arm"`)
	wantLacks(t, r, `name="system_key" value="system"`)
	status, body = api.call("POST", fmt.Sprintf("/api/v1/projects/%d/draws", p.ID), map[string]any{"k": 1, "system": "b"})
	if status != http.StatusCreated || body["system_key"] != "arm" {
		t.Fatalf("draw: %d %v, want it made under arm", status, body)
	}
	if items := body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["source_id"] != "r5" {
		t.Errorf("drew %v, want r5, b's only judge-only item", items)
	}
}

// TestProjectSystemKeyForm: the create form offers the default key and
// stores the one typed; the edit form shows the stored key, refuses an
// empty or overlong one under its field and changes nothing then, saves
// another, and keeps it when a form without the field is posted; the
// project page shows it.
func TestProjectSystemKeyForm(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	c := a.client()
	c.mustSignIn(lead)
	wantContains(t, c.get("/projects/new"), `name="system_key" value="system"`)
	r := c.post("/projects", url.Values{"name": {"Arms"}, "rubric": {strconv.FormatInt(a.rubricID("coaching-conversation@2.0"), 10)},
		"overlap": {"2"}, "lease": {"30"}, "annotators": {"trained"}, "system_key": {" arm "}})
	wantStatus(t, r, http.StatusSeeOther)
	p, err := a.db.FindProjectByName(t.Context(), "Arms")
	if err != nil || p.SystemKey != "arm" {
		t.Fatalf("created: %+v, %v", p, err)
	}
	wantContains(t, c.get(projectPath(p, "")), `data-testid="project-system-key"><code>arm</code>`)
	wantContains(t, c.get(projectPath(p, "/edit")), `name="system_key" value="arm"`)
	form := func(key ...string) url.Values {
		v := url.Values{"name": {"Arms"}, "overlap": {"2"}, "lease": {"30"}, "annotators": {"trained"}}
		if len(key) > 0 {
			v.Set("system_key", key[0])
		}
		return v
	}
	for _, bad := range []string{"", strings.Repeat("k", attune.MaxSystemKey+1)} {
		r = c.post(projectPath(p, "/edit"), form(bad))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantContains(t, r, `data-testid="error-system_key"`, "the item meta key that names an item&#39;s system")
	}
	wantStatus(t, c.post(projectPath(p, "/edit"), form("model")), http.StatusSeeOther)
	wantStatus(t, c.post(projectPath(p, "/edit"), form()), http.StatusSeeOther)
	if got, err := a.db.FindProjectByID(t.Context(), p.ID); err != nil || got.SystemKey != "model" {
		t.Fatalf("after the edits: %+v, %v", got, err)
	}
}
