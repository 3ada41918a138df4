package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

// hostileItem is an item whose id and words are markup.
const hostileItem = `{"id":"x<b>1</b>","messages":[{"role":"user","content":"<script>alert(1)</script> my dog ran off"},{"role":"assistant","content":"Oh no."}],"meta":{"lang":"en<i>"}}
`

// browseApp is the report's project (a1 and a2, each answered by two
// people and a judge) with a third item whose id and text are markup.
func browseApp(t *testing.T) (*app, *attune.Project, *client, *attune.User, *attune.User, map[string]int64) {
	t.Helper()
	a, p, c, ann, out := reportApp(t)
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "more.jsonl", hostileItem), http.StatusSeeOther)
	wantContains(t, c.get(projectPath(p, "/browse?q=dog")), "3 items are still being indexed: the text search does not find them yet.")
	// The queued indexing job's work, done here, so the text is searchable.
	if _, err := a.db.IndexItems(t.Context(), p.ID); err != nil {
		t.Fatal(err)
	}
	page, err := a.db.SearchItems(t.Context(), p.ID, store.ItemSearch{})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("items %+v, %v", page.Items, err)
	}
	ids := map[string]int64{}
	for _, it := range page.Items {
		ids[it.SourceID] = it.ID
	}
	return a, p, c, ann, out, ids
}

func rowsOf(r response) int { return strings.Count(r.body, `data-testid="browse-row"`) }

// The project page leads to the browser; the browser's filters live in
// the URL; user text is shown as text; only the project's leads get in.
func TestItemsBrowserPage(t *testing.T) {
	t.Parallel()
	a, p, c, ann, out, ids := browseApp(t)
	wantContains(t, c.get(projectPath(p, "")), `data-testid="items-browser"`, fmt.Sprintf(`href="/projects/%d/browse"`, p.ID))

	for _, tc := range []struct {
		query string
		rows  int
		want  []string
	}{
		{"", 3, []string{"3 items match.", `<code>a1</code>`, `<code>a2</code>`, `Filters:`, "every item"}},
		{"q=alone", 1, []string{`<code>a1</code>`, `value="alone"`}},
		{"q=dog", 1, []string{"<code>x&lt;b&gt;1&lt;/b&gt;</code>", "1 item matches.", "alert(1)&lt;/script&gt; my <mark>dog</mark> ran off",
			`data-testid="browse-snippet"`, "<dt><code>lang</code></dt><dd>en&lt;i&gt;</dd>", "dialogue says “dog”"}},
		{"q=dog&col=lang&col=nope", 1, []string{`<th scope="col" data-testid="browse-col"><code>lang</code></th>`, `<td class="meta-cell" data-testid="browse-cell">en&lt;i&gt;</td>`,
			`name="col" value="lang" checked`, `name="col" value="nope" checked`}},
		{"meta=" + url.QueryEscape("lang=en<i>"), 1, []string{"x&lt;b&gt;1&lt;/b&gt;", `value="lang=en&lt;i&gt;"`}},
		{"id=a2", 1, []string{`<code>a2</code>`}},
		{"disagree=CQ1", 2, []string{`<option value="CQ1" selected>`}},
		{"min=2&flagged=1", 0, []string{"No item matches.", `name="flagged" value="1" checked`}},
		{"min=2&gold=open&sort=newest", 2, []string{`<option value="newest" selected>`, `<option value="open" selected>`}},
		{"max=0&safety=1", 0, []string{`name="safety" value="1" checked`}},
	} {
		r := c.get(projectPath(p, "/browse?"+tc.query))
		wantStatus(t, r, http.StatusOK)
		if n := rowsOf(r); n != tc.rows {
			t.Errorf("%s: %d rows, want %d", tc.query, n, tc.rows)
		}
		wantContains(t, r, tc.want...)
		if strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, "<b>1</b>") {
			t.Errorf("%s: user text is markup", tc.query)
		}
	}
	// Items are newest first when asked; a2 and a1 both had two people.
	r := c.get(projectPath(p, "/browse?min=2&sort=newest"))
	if i1, i2 := strings.Index(r.body, "<code>a1</code>"), strings.Index(r.body, "<code>a2</code>"); i2 < 0 || i1 < i2 {
		t.Errorf("newest first: a2 at %d, a1 at %d", i2, i1)
	}
	// A value that cannot be read is refused by its field, the page shown
	// with the rest of the search; the API refuses the request.
	for _, bad := range []string{"meta=lang", "min=-1", "gold=silver", "sort=random", "disagree=nope", "rater=x", "cursor=xyz", "col=" + strings.Repeat("k", 101)} {
		field, _, _ := strings.Cut(bad, "=")
		rest := "min=2" // two items
		if field == "min" {
			rest = "disagree=CQ1" // two items too
		}
		r := c.get(projectPath(p, "/browse?"+rest+"&"+bad))
		if r.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d", bad, r.StatusCode)
		}
		wantContains(t, r, `data-testid="error-`+field+`"`, `data-testid="browse-filter-bar" open`, `data-testid="browse-results"`)
		if rowsOf(r) != 2 {
			t.Errorf("%s: %d rows, want the 2 the rest of the search keeps", bad, rowsOf(r))
		}
	}
	r = c.get(projectPath(p, "/browse?meta=nonsense"))
	wantContains(t, r, `value="nonsense"`, `write a meta field as key=value, not &#34;nonsense&#34;`, "3 items match.")
	// Each item links to its page.
	wantContains(t, c.get(projectPath(p, "/browse?q=alone")), fmt.Sprintf(`href="/projects/%d/browse/%d"`, p.ID, ids["a1"]))

	for _, k := range []struct {
		u    *attune.User
		want int
	}{{ann, http.StatusForbidden}, {out, http.StatusNotFound}} {
		o := a.client()
		o.mustSignIn(k.u)
		wantStatus(t, o.get(projectPath(p, "/browse?q=alone")), k.want)
		wantStatus(t, o.get(projectPath(p, fmt.Sprintf("/browse/%d", ids["a1"]))), k.want)
	}
}

// Pages of the browser follow each other by cursor, the filters kept.
func TestItemsBrowserPages(t *testing.T) {
	t.Parallel()
	a, p, c, _, _, _ := browseApp(t)
	var lines []string
	for i := range 55 {
		lines = append(lines, fmt.Sprintf(`{"id":"more-%02d","messages":[{"role":"user","content":"the garden %d"},{"role":"assistant","content":"Tell me."}],"meta":{"lang":"fr"}}`, i, i))
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "garden.jsonl", strings.Join(lines, "\n")+"\n"), http.StatusSeeOther)
	if _, err := a.db.IndexItems(t.Context(), p.ID); err != nil {
		t.Fatal(err)
	}
	r := c.get(projectPath(p, "/browse?q=garden&meta=lang%3Dfr&sort=source"))
	if n := rowsOf(r); n != 50 {
		t.Fatalf("first page: %d rows", n)
	}
	wantContains(t, r, "55 items match.", "This page lists the first 50; more follow.", `data-testid="browse-next"`, "<code>more-49</code>")
	next := nextHref(t, r.body)
	if !strings.Contains(next, "cursor=") || !strings.Contains(next, "q=garden") || !strings.Contains(next, "meta=lang%3Dfr") {
		t.Fatalf("next link %q", next)
	}
	r = c.get(next)
	wantStatus(t, r, http.StatusOK)
	if n := rowsOf(r); n != 5 {
		t.Fatalf("second page: %d rows", n)
	}
	wantContains(t, r, "<code>more-50</code>", "<code>more-54</code>", `data-testid="browse-first"`, "55 items match.", "This page lists 5, the last.")
	if strings.Contains(r.body, "<code>more-49</code>") {
		t.Error("the second page repeats the first's last item")
	}
}

// nextHref is the browser's next-page link, unescaped.
func nextHref(t *testing.T, body string) string {
	t.Helper()
	at := strings.Index(body, `data-testid="browse-next"`)
	if at < 0 {
		t.Fatal("no next link")
	}
	start := strings.LastIndex(body[:at], `href="`)
	rest := body[start+len(`href="`):]
	return strings.ReplaceAll(rest[:strings.Index(rest, `"`)], "&amp;", "&")
}

// An item's page shows its dialogue, every rater's answers and rationales
// with the engine's scores, its gold and history, and its flags.
func TestItemsBrowserItemPage(t *testing.T) {
	t.Parallel()
	a, p, c, _, _, ids := browseApp(t)
	ctx := t.Context()
	lead := a.user("lee2@example.org", attune.RoleLead)
	a.member(p, lead, attune.MemberLead)
	if err := a.db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: ids["a1"], ActorID: lead.ID,
		Answers: map[string]string{"CQ1": "YES"}, Note: "<em>settled</em>"}); err != nil {
		t.Fatal(err)
	}
	r := c.get(projectPath(p, fmt.Sprintf("/browse/%d", ids["a1"])))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "<code>a1</code>", "I feel alone", "That sounds hard.", `data-testid="item-rater"`, "gpt-judge", "Bo",
		"=HYPERLINK(&#34;http://evil.example&#34;,&#34;x&#34;)", `data-testid="item-score"`, "safety gate",
		`data-testid="item-adjudications"`, "&lt;em&gt;settled&lt;/em&gt;", "adjudicated the gold", "CQ1=YES", "answered", "imported",
		fmt.Sprintf(`href="/projects/%d/disagreements/%d"`, p.ID, ids["a1"]), "Nobody flagged it.")
	if n := strings.Count(r.body, `data-testid="item-rater"`); n != 3 {
		t.Errorf("%d raters, want 3", n)
	}
	// The adjudication page and the report's lists of items lead here.
	itemURL := fmt.Sprintf(`href="/projects/%d/browse/%d"`, p.ID, ids["a1"])
	wantContains(t, c.get(projectPath(p, fmt.Sprintf("/disagreements/%d", ids["a1"]))), `data-testid="item-page"`, itemURL)
	wantContains(t, c.get(projectPath(p, "/report/items?item=CQ1")), `data-testid="drill-item-page"`, itemURL)
	r = c.get(projectPath(p, fmt.Sprintf("/browse/%d", ids["x<b>1</b>"])))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, "&lt;script&gt;alert(1)&lt;/script&gt;", "Nobody has answered yet.", "No gold yet.")
	if strings.Contains(r.body, "<script>alert") {
		t.Error("the dialogue is markup")
	}
	// An item of another project is not found through this one.
	other := a.project(lead, projectOpts{name: "Other"})
	c2 := a.client()
	c2.mustSignIn(lead)
	wantStatus(t, c2.get(projectPath(other, fmt.Sprintf("/browse/%d", ids["a1"]))), http.StatusNotFound)
	wantStatus(t, c.get(projectPath(p, "/browse/999999999")), http.StatusNotFound)
}

// The API answers the same search with cursors, and one item whole, to
// the project's leads only.
func TestItemsAPI(t *testing.T) {
	t.Parallel()
	a, p, _, ann, out, ids := browseApp(t)
	lead := a.user("lee3@example.org", attune.RoleLead)
	a.member(p, lead, attune.MemberLead)
	api := a.apiFor(lead)
	st, body := api.call("GET", fmt.Sprintf("/api/v1/projects/%d/items?q=alone", p.ID), nil)
	if st != http.StatusOK {
		t.Fatalf("search: %d %v", st, body)
	}
	if items := body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["source_id"] != "a1" || body["next_cursor"] != nil {
		t.Fatalf("search: %v", body)
	}
	// One item a page, by item id: every item once.
	var walked []string
	cursor := ""
	for range 5 {
		path := fmt.Sprintf("/api/v1/projects/%d/items?limit=1&sort=source&cursor=%s", p.ID, url.QueryEscape(cursor))
		st, body := api.call("GET", path, nil)
		if st != http.StatusOK {
			t.Fatalf("%s: %d %v", path, st, body)
		}
		for _, it := range body["items"].([]any) {
			walked = append(walked, it.(map[string]any)["source_id"].(string))
		}
		next, _ := body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if want := []string{"a1", "a2", "x<b>1</b>"}; !slices.Equal(walked, want) {
		t.Fatalf("walked %v, want %v", walked, want)
	}
	st, body = api.call("GET", fmt.Sprintf("/api/v1/projects/%d/items/%d", p.ID, ids["a2"]), nil)
	if st != http.StatusOK {
		t.Fatalf("item: %d %v", st, body)
	}
	sets := body["answer_sets"].([]any)
	if len(sets) != 3 || body["source_id"] != "a2" || len(body["messages"].([]any)) != 2 || len(body["history"].([]any)) < 4 {
		t.Fatalf("item: %v", body)
	}
	for _, s := range sets {
		score := s.(map[string]any)["score"].(map[string]any)
		if _, ok := score["safety_gate_failed"]; !ok || score["rubric"] != "coaching-conversation@2.0" {
			t.Fatalf("answer set without the engine's score: %v", s)
		}
	}
	if st, body := api.call("GET", fmt.Sprintf("/api/v1/projects/%d/items?gold=silver", p.ID), nil); st != http.StatusUnprocessableEntity {
		t.Errorf("a bad filter: %d %v", st, body)
	}
	for _, k := range []struct {
		u    *attune.User
		want int
	}{{ann, http.StatusForbidden}, {out, http.StatusNotFound}} {
		o := a.apiFor(k.u)
		for _, path := range []string{fmt.Sprintf("/api/v1/projects/%d/items", p.ID), fmt.Sprintf("/api/v1/projects/%d/items/%d", p.ID, ids["a1"])} {
			if st, _ := o.call("GET", path, nil); st != k.want {
				t.Errorf("%s as %s: %d, want %d", path, k.u.Email, st, k.want)
			}
		}
	}
}

// TestItemPageBoundsHugeMeta stores an item whose meta json.Indent would
// turn into megabytes (an item imported before meta had its limits) and
// checks that its page shows a bounded preview, says how much it left
// out, and offers the whole meta as a download.
func TestItemPageBoundsHugeMeta(t *testing.T) {
	t.Parallel()
	a, p, c, _, _, ids := browseApp(t)
	meta := `{"x0": ` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `, "note": "` + strings.Repeat("x", 300<<10) + `"}`
	if _, err := a.db.Pool().Exec(t.Context(), `UPDATE items SET meta = $1::jsonb WHERE id = $2`, meta, ids["a1"]); err != nil {
		t.Fatal(err)
	}
	r := c.get(projectPath(p, fmt.Sprintf("/browse/%d", ids["a1"])))
	wantStatus(t, r, http.StatusOK)
	wantContains(t, r, `data-testid="item-meta"`, `data-testid="item-meta-more"`, "more bytes of meta are not shown here.",
		fmt.Sprintf(`href="/projects/%d/browse/%d/meta.json"`, p.ID, ids["a1"]))
	if len(r.body) > 200<<10 {
		t.Errorf("the item page is %d bytes", len(r.body))
	}
	list := c.get(projectPath(p, "/browse"))
	wantStatus(t, list, http.StatusOK)
	if len(list.body) > 100<<10 {
		t.Errorf("the items list is %d bytes", len(list.body))
	}
	dl := c.get(projectPath(p, fmt.Sprintf("/browse/%d/meta.json", ids["a1"])))
	wantStatus(t, dl, http.StatusOK)
	var stored, got any
	if err := json.Unmarshal([]byte(meta), &stored); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(dl.body), &got); err != nil {
		t.Fatalf("download is not JSON: %v", err)
	}
	if !reflect.DeepEqual(stored, got) {
		t.Error("the download is not the whole meta")
	}
}
