package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
)

// walkPages reads every page of the list at path (its rows under key),
// limit rows a page, following next_cursor, and returns field of every
// row in the order read. Every page but the last must be full and carry a
// cursor; the last must carry next_cursor null.
func walkPages(t *testing.T, c *apiClient, path, key, field string, limit int) []string {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatalf("%s: the cursors do not end", path)
		}
		q := fmt.Sprintf("%s%slimit=%d", path, sep, limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var page map[string]json.RawMessage
		c.must(http.StatusOK, "GET", q, nil, &page)
		var rows []map[string]any
		if err := json.Unmarshal(page[key], &rows); err != nil {
			t.Fatalf("%s: %s is not a list: %v", q, key, err)
		}
		raw, ok := page["next_cursor"]
		if !ok {
			t.Fatalf("%s: no next_cursor", q)
		}
		var next *string
		json.Unmarshal(raw, &next)
		for _, r := range rows {
			seen = append(seen, fmt.Sprint(r[field]))
		}
		if next == nil {
			if len(rows) > limit {
				t.Fatalf("%s: a page of %d rows", q, len(rows))
			}
			return seen
		}
		if len(rows) != limit {
			t.Fatalf("%s: %d rows on a page that is not the last, want %d", q, len(rows), limit)
		}
		cursor = *next
	}
}

// refusesBadPages checks that the list at path refuses a cursor attune did
// not make, a cursor of another list, and a page size out of bounds, each
// with a 422 naming the parameter.
func refusesBadPages(t *testing.T, c *apiClient, path, otherCursor string) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for q, field := range map[string]string{
		"cursor=nonsense":                        "cursor",
		"cursor=" + url.QueryEscape(otherCursor): "cursor",
		"limit=0":                                "limit",
		"limit=101":                              "limit",
		"limit=ten":                              "limit",
	} {
		status, raw := c.send("GET", path+sep+q, nil, nil)
		if e := decodeErr(t, raw); status != http.StatusUnprocessableEntity || e.Fields[field] == "" {
			t.Errorf("%s%s%s: %d %s, want 422 naming %s", path, sep, q, status, raw, field)
		}
	}
}

// firstCursor is the next_cursor of the first page of one row of path.
func firstCursor(t *testing.T, c *apiClient, path string) string {
	t.Helper()
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	c.must(http.StatusOK, "GET", path+"?limit=1", nil, &page)
	if page.NextCursor == nil {
		t.Fatalf("%s: one page only", path)
	}
	return *page.NextCursor
}

// TestAPIPagesProjectsMembersWebhooks: the projects, a project's members,
// its webhooks and a webhook's deliveries page by cursor, every row once,
// in the list's order.
func TestAPIPagesProjectsMembersWebhooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lead := a.user("lead@example.org", attune.RoleLead)
	var p *attune.Project
	for _, name := range []string{"P4", "P2", "P1", "P5", "P3"} {
		pp := a.project(lead, projectOpts{name: name})
		if name == "P1" {
			p = pp
		}
	}
	c := a.apiFor(lead)
	var p2 struct{ ID int64 }
	for _, pr := range walkPagesRows(t, c, "/api/v1/projects") {
		if pr["name"] == "P2" {
			p2.ID = int64(pr["id"].(float64))
		}
	}
	c.must(http.StatusOK, "PATCH", fmt.Sprintf("/api/v1/projects/%d", p2.ID), map[string]any{"status": "archived"}, nil)
	for _, limit := range []int{1, 2, 5, 100} {
		if got := strings.Join(walkPages(t, c, "/api/v1/projects", "projects", "name", limit), ","); got != "P1,P3,P4,P5,P2" {
			t.Errorf("projects, %d a page: %s, want the archived P2 last", limit, got)
		}
	}
	projectsCursor := firstCursor(t, c, "/api/v1/projects")

	base := fmt.Sprintf("/api/v1/projects/%d", p.ID)
	for _, e := range []string{"a3@example.org", "a1@example.org", "a4@example.org", "a2@example.org"} {
		a.member(p, a.user(e, attune.RoleAnnotator), attune.MemberAnnotator)
	}
	if got := strings.Join(walkPages(t, c, base+"/members", "members", "email", 2), ","); got != "lead@example.org,a1@example.org,a2@example.org,a3@example.org,a4@example.org" {
		t.Errorf("members: %s, want the lead first, then by email", got)
	}

	var want []string
	for i := range 5 {
		var hook struct{ ID int64 }
		c.must(http.StatusCreated, "POST", base+"/webhooks", map[string]any{"url": fmt.Sprintf("http://127.0.0.1:9/hook%d", i),
			"events": []string{"gold.changed"}}, &hook)
		want = append(want, fmt.Sprint(hook.ID))
	}
	if got := walkPages(t, c, base+"/webhooks", "webhooks", "id", 2); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("webhooks: %v, want %v", got, want)
	}
	for range 5 {
		if err := a.db.Announce(ctx, p.ID, attune.EventGoldChanged, map[string]any{"items": 1}); err != nil {
			t.Fatal(err)
		}
	}
	hook := base + "/webhooks/" + want[0]
	ds, err := a.db.ListWebhookDeliveries(ctx, p.ID, mustInt(t, want[0]), 100)
	if err != nil || len(ds) != 5 {
		t.Fatalf("deliveries %v %v", ds, err)
	}
	want = nil
	for _, d := range ds {
		want = append(want, d.UUID)
	}
	if got := walkPages(t, c, hook+"/deliveries", "deliveries", "id", 2); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("deliveries: %v, want newest first %v", got, want)
	}

	refusesBadPages(t, c, "/api/v1/projects", firstCursor(t, c, base+"/members"))
	refusesBadPages(t, c, base+"/members", projectsCursor)
	refusesBadPages(t, c, base+"/webhooks", projectsCursor)
	refusesBadPages(t, c, hook+"/deliveries", projectsCursor)
}

// walkPagesRows is every row of the list of projects, by one walk.
func walkPagesRows(t *testing.T, c *apiClient, path string) []map[string]any {
	t.Helper()
	var page struct {
		Projects []map[string]any `json:"projects"`
	}
	c.must(http.StatusOK, "GET", path+"?limit=100", nil, &page)
	return page.Projects
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAPIPagesJudgesAndPrompts: the judges and a judge's prompt versions
// page by cursor, every row once, in order.
func TestAPIPagesJudgesAndPrompts(t *testing.T) {
	t.Parallel()
	j := newJudged(t, fakellm.Options{}, nil)
	api := j.a.apiFor(j.lead)
	for _, name := range []string{"judge-c", "judge-a", "judge-e", "judge-b", "judge-d"} {
		api.must(http.StatusCreated, "POST", "/api/v1/judges", j.apiJudgeBody(name), nil)
	}
	if got := strings.Join(walkPages(t, api, "/api/v1/judges", "judges", "name", 2), ","); got != "judge-a,judge-b,judge-c,judge-d,judge-e" {
		t.Errorf("judges: %s, want by name", got)
	}

	var first struct {
		Judges []struct{ ID int64 } `json:"judges"`
	}
	api.must(http.StatusOK, "GET", "/api/v1/judges?limit=1", nil, &first)
	base := fmt.Sprintf("/api/v1/projects/%d/judges/%d/prompts", j.project.ID, first.Judges[0].ID)
	var v1 struct {
		Prompts map[string]string `json:"prompts"`
	}
	api.must(http.StatusOK, "GET", base+"/1", nil, &v1)
	for i := range 4 {
		edited := map[string]string{}
		for k, p := range v1.Prompts {
			edited[k] = p
		}
		for k := range edited {
			edited[k] = fmt.Sprintf("Edit %d.\n", i) + edited[k]
			break
		}
		api.must(http.StatusCreated, "POST", base, map[string]any{"from": 1, "prompts": edited}, nil)
	}
	if got := strings.Join(walkPages(t, api, base, "versions", "version", 2), ","); got != "1,2,3,4,5" {
		t.Errorf("prompt versions: %s, want 1 to 5", got)
	}
	judgesCursor := firstCursor(t, api, "/api/v1/judges")
	refusesBadPages(t, api, "/api/v1/judges", firstCursor(t, api, base))
	refusesBadPages(t, api, base, judgesCursor)
}

// TestAPIPagesCalibration: the calibration set pages by cursor, by id in
// the dataset, the rules on every page.
func TestAPIPagesCalibration(t *testing.T) {
	t.Parallel()
	var items strings.Builder
	for _, id := range []string{"c3", "c1", "c5", "c2", "c4"} {
		fmt.Fprintf(&items, `{"id":%q,"messages":[{"role":"user","content":"Hello %s."},{"role":"assistant","content":"Hi, how are you?"}]}`+"\n", id, id)
	}
	l := newLabelling(t, labellingOpts{items: items.String()})
	lead := l.a.apiFor(l.lead)
	base := fmt.Sprintf("/api/v1/projects/%d/calibration", l.p.ID)
	for _, id := range []string{"c3", "c1", "c5", "c2", "c4"} {
		l.goldOn(t, id, calibrationGold)
		lead.must(http.StatusCreated, "POST", base, map[string]any{"item": id}, nil)
	}
	if got := strings.Join(walkPages(t, lead, base, "items", "source_id", 2), ","); got != "c1,c2,c3,c4,c5" {
		t.Errorf("calibration set: %s, want by id in the dataset", got)
	}
	var page map[string]any
	lead.must(http.StatusOK, "GET", base+"?limit=2&cursor="+url.QueryEscape(firstCursor(t, lead, base)), nil, &page)
	if page["pass_percent"] != 80.0 {
		t.Errorf("a later page without the rules: %v", page)
	}
	refusesBadPages(t, lead, base, firstCursor(t, lead, fmt.Sprintf("/api/v1/projects/%d/members", l.p.ID)))
}
