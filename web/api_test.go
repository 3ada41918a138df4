package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// apiClient calls the JSON API with a personal token.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func (a *app) apiFor(u *attune.User) *apiClient {
	a.t.Helper()
	token, _, err := a.db.CreateAPIToken(context.Background(), nil, u.ID, "test", false)
	if err != nil {
		a.t.Fatal(err)
	}
	return &apiClient{t: a.t, base: a.srv.URL, token: token}
}

func (c *apiClient) call(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := contractClient(c.t).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(raw) > 0 && raw[0] == '{' {
		json.Unmarshal(raw, &out)
	} else if len(raw) > 0 {
		out["_list"] = string(raw)
	}
	return resp.StatusCode, out
}

const twoItems = `{"id":"a1","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely. What do you miss most?"}]}
{"id":"a2","messages":[{"role":"user","content":"My exams are soon and I panic."},{"role":"assistant","content":"Exam panic is common. Shall we plan together?"}]}
`

// apiProject makes a project of the given rubric, imports items through the
// API as its lead, and adds the annotators.
func apiProject(t *testing.T, a *app, rubricRef string, overlap int, items string, annotators ...*attune.User) (*attune.Project, *apiClient) {
	t.Helper()
	ctx := context.Background()
	if err := a.db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	lead := a.user(fmt.Sprintf("lead-%d@example.org", time.Now().UnixNano()), attune.RoleLead)
	ref, _ := rubric.ParseRef(rubricRef)
	_, rv, err := a.db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.db.CreateProject(ctx, &lead.ID, store.NewProject{Name: "api-" + t.Name() + rubricRef, RubricVersionID: rv.ID, Overlap: overlap, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	lc := a.apiFor(lead)
	status, body := lc.call("POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), items)
	if status != http.StatusOK {
		t.Fatalf("import: %d %v", status, body)
	}
	for _, u := range annotators {
		if err := a.db.AddMember(ctx, &lead.ID, p.ID, u.ID, attune.MemberAnnotator); err != nil {
			t.Fatal(err)
		}
	}
	return p, lc
}

var likertAnswers = map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}

func TestAPILabelling(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	c := a.apiFor(ann)

	status, body := c.call("GET", "/api/v1/projects", nil)
	if status != 200 || !strings.Contains(fmt.Sprint(body["projects"]), p.Name) {
		t.Fatalf("projects: %d %v", status, body)
	}
	status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != 200 || next["rubric"] != "empathetic-dialogue@2" {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	item := next["item"].(map[string]any)
	if msgs := item["messages"].([]any); len(msgs) != 2 {
		t.Fatalf("item messages: %v", msgs)
	}

	// A label that breaks the rubric is refused with the engine's message.
	status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": map[string]string{"emotion": "7"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(body["problems"]), "emotion") {
		t.Fatalf("bad label: %d %v", status, body)
	}
	// The rubric's edge rule (safety 1 means harmful advice: helpfulness must
	// be 1) is a warning that needs confirming.
	warn := map[string]string{"emotion": "2", "validation": "2", "helpfulness": "3", "safety": "1", "overall": "1"}
	status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": warn})
	if status != http.StatusUnprocessableEntity || body["confirm_warnings"] != true {
		t.Fatalf("warning not asked to confirm: %d %v", status, body)
	}
	status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg),
		map[string]any{"answers": likertAnswers, "rationale": "warm but generic", "active_ms": 12000, "next": true})
	if status != http.StatusCreated || body["created"] != true {
		t.Fatalf("submit: %d %v", status, body)
	}
	if score := body["score"].(map[string]any); score["score"] != 4.0 || score["dimension_mean"] != 3.5 {
		t.Fatalf("score: %v", score)
	}
	if body["next"] == nil {
		t.Fatalf("no next assignment in %v", body)
	}
	// A retry of the same submission stores nothing new.
	status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers, "rationale": "warm but generic"})
	if status != http.StatusOK || body["created"] != false {
		t.Fatalf("retry: %d %v", status, body)
	}
	// Other answers for a submitted assignment are refused, never dropped
	// silently: they are an edit.
	status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers})
	if status != http.StatusConflict || !strings.Contains(fmt.Sprint(body["error"]), fmt.Sprintf("PUT /api/v1/projects/%d/items/", p.ID)) {
		t.Fatalf("a different second submission: %d %v", status, body)
	}
	// Edit own labels; history keeps the old value.
	itemID := item["id"].(float64)
	edited := map[string]string{"emotion": "5", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}
	status, body = c.call("PUT", fmt.Sprintf("/api/v1/projects/%d/items/%.0f/labels", p.ID, itemID), map[string]any{"answers": edited})
	if status != 200 || body["revision"] != 2.0 {
		t.Fatalf("edit: %d %v", status, body)
	}
	status, body = c.call("GET", fmt.Sprintf("/api/v1/projects/%d/items/%.0f/labels", p.ID, itemID), nil)
	if status != 200 || body["answers"].(map[string]any)["emotion"] != "5" {
		t.Fatalf("own labels: %d %v", status, body)
	}
	// Skip the second item with a flag; then the queue is empty.
	status, next = c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	asg2 := next["assignment"].(map[string]any)["id"].(float64)
	if status, body = c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", asg2), map[string]string{"flag": "distressing", "note": "hard day"}); status != http.StatusNoContent {
		t.Fatalf("skip: %d %v", status, body)
	}
	if status, _ = c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil); status != http.StatusNoContent {
		t.Fatalf("empty queue: %d", status)
	}
	// Progress: the lead sees every annotator, the annotator only themself.
	status, body = lead.call("GET", fmt.Sprintf("/api/v1/projects/%d", p.ID), nil)
	pr := body["progress"].(map[string]any)
	if status != 200 || pr["complete"] != 1.0 || len(pr["annotators"].([]any)) != 1 {
		t.Fatalf("progress: %d %v", status, body)
	}
}

func TestAPIRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	other := a.user("other@example.org", attune.RoleAnnotator)
	p, _ := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)

	none := &apiClient{t: t, base: a.srv.URL}
	if status, _ := none.call("GET", "/api/v1/projects", nil); status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", status)
	}
	bogus := &apiClient{t: t, base: a.srv.URL, token: "att_notarealtoken"}
	if status, _ := bogus.call("GET", "/api/v1/me", nil); status != http.StatusUnauthorized {
		t.Fatalf("bogus token: %d", status)
	}
	// A revoked token stops working at once.
	token, tok, _ := a.db.CreateAPIToken(ctx, nil, ann.ID, "script", false)
	c := &apiClient{t: t, base: a.srv.URL, token: token}
	if status, _ := c.call("GET", "/api/v1/me", nil); status != 200 {
		t.Fatalf("fresh token: %d", status)
	}
	a.db.RevokeAPIToken(ctx, nil, ann.ID, tok.ID)
	if status, _ := c.call("GET", "/api/v1/me", nil); status != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d", status)
	}
	// Another user's project is not there for them, whatever they try.
	oc := a.apiFor(other)
	for _, rt := range []struct{ method, path string }{
		{"GET", fmt.Sprintf("/api/v1/projects/%d", p.ID)},
		{"POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID)},
		{"POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID)},
	} {
		if status, _ := oc.call(rt.method, rt.path, twoItems); status != http.StatusNotFound {
			t.Errorf("%s %s as a non-member: %d, want 404", rt.method, rt.path, status)
		}
	}
	// Someone else's assignment cannot be submitted or skipped.
	ac := a.apiFor(ann)
	_, next := ac.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	asg := next["assignment"].(map[string]any)["id"].(float64)
	if status, _ := oc.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers}); status != http.StatusNotFound {
		t.Fatalf("submit another's assignment: %d", status)
	}
	// An annotator cannot import.
	if status, _ := ac.call("POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), twoItems); status != http.StatusForbidden {
		t.Fatalf("annotator import: %d", status)
	}
	// Unknown fields in a body are an error, not silently ignored.
	if status, body := ac.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), `{"answer":{}}`); status != http.StatusUnprocessableEntity {
		t.Fatalf("typo in body: %d %v", status, body)
	}
}

func TestAPIImportErrors(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	p, lead := apiProject(t, a, "empathetic-understanding@1", 1, twoItems)
	bad := twoItems + `{"id":"a3","messages":[{"role":"assistant","content":"Hello"},{"role":"user","content":"bye"}]}` + "\n"
	status, body := lead.call("POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), bad)
	lines, _ := body["lines"].([]any)
	if status != http.StatusUnprocessableEntity || len(lines) != 1 || lines[0].(map[string]any)["Line"] != 3.0 {
		t.Fatalf("bad import: %d %v, want one error naming line 3", status, body)
	}
	// Re-importing the good file changes nothing.
	status, body = lead.call("POST", fmt.Sprintf("/api/v1/projects/%d/items", p.ID), twoItems)
	if status != 200 || body["inserted"] != 0.0 || body["unchanged"] != 2.0 {
		t.Fatalf("re-import: %d %v", status, body)
	}
}

// TestConcurrentAnnotatorsTwoServers has 50 annotators work a project
// through two server processes on one database: every item ends with
// exactly k labels and nobody labels an item twice.
func TestConcurrentAnnotatorsTwoServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	db1, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db1.Close)
	db2, _ := store.Open(ctx, url)
	t.Cleanup(db2.Close)
	s1, s2 := startApp(t, db1), startApp(t, db2)

	const nItems, overlap, nAnnotators = 60, 3, 50
	var lines strings.Builder
	for i := range nItems {
		fmt.Fprintf(&lines, `{"id":"c%03d","messages":[{"role":"user","content":"worry %d"},{"role":"assistant","content":"I hear you."}]}`+"\n", i, i)
	}
	var anns []*attune.User
	for i := range nAnnotators {
		anns = append(anns, s1.user(fmt.Sprintf("a%02d@example.org", i), attune.RoleAnnotator))
	}
	p, _ := apiProject(t, s1, "empathetic-dialogue@2", overlap, lines.String(), anns...)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i, u := range anns {
		srv := []*app{s1, s2}[i%2]
		c := srv.apiFor(u)
		wg.Go(func() {
			for range nItems + 1 {
				status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
				if status == http.StatusNoContent {
					return
				}
				if status != 200 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("next: %d %v", status, next))
					mu.Unlock()
					return
				}
				asg := next["assignment"].(map[string]any)["id"].(float64)
				status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers})
				if status != http.StatusCreated {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("submit: %d %v", status, body))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	var wrong, total, dup int
	if err := db1.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE n <> $2), coalesce(sum(n), 0) FROM (
		SELECT i.id, count(s.id) AS n FROM items i LEFT JOIN answer_sets s ON s.item_id = i.id WHERE i.project_id = $1 GROUP BY i.id) x`,
		p.ID, overlap).Scan(&wrong, &total); err != nil {
		t.Fatal(err)
	}
	if err := db1.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT item_id, rater_id FROM answer_sets GROUP BY 1, 2 HAVING count(*) > 1) d`).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || total != nItems*overlap || dup != 0 {
		t.Fatalf("%d items without exactly %d labels, %d answer sets (want %d), %d doubled", wrong, overlap, total, nItems*overlap, dup)
	}
}

// TestAPIBearerSchemeIsCaseInsensitive sends the token under the scheme
// spelt as RFC 9110 allows: any case.
func TestAPIBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	u := a.user("ann@example.org", attune.RoleAnnotator)
	c := a.apiFor(u)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		req, _ := http.NewRequest(http.MethodGet, c.base+"/api/v1/me", nil)
		req.Header.Set("Authorization", scheme+" "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, want 200", scheme, resp.StatusCode)
		}
	}
	for _, header := range []string{"Basic " + c.token, "Bearer", "Bearer" + c.token, c.token} {
		req, _ := http.NewRequest(http.MethodGet, c.base+"/api/v1/me", nil)
		req.Header.Set("Authorization", header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: status %d, want 401", header, resp.StatusCode)
		}
	}
}
