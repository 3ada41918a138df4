package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

// flagRow returns the row of the Flags page for the item with the given
// dataset id, found by its data attributes.
func flagRow(t *testing.T, page response, source string) string {
	t.Helper()
	i := strings.Index(page.body, `data-item="`+source+`" data-reason=`)
	if i < 0 {
		t.Fatalf("no flag row for %s; body: %.800s", source, page.body)
	}
	end := strings.Index(page.body[i:], "</tr>")
	return page.body[i : i+end]
}

// TestFlagsPageAndResolution: an annotator's flag reaches the project's
// lead on the project page and the Flags page, filtered by reason and
// status; the lead takes the item out of the pool (nobody is handed it
// any more) and puts it back. Annotators and leads of other projects see
// nothing and can do nothing.
func TestFlagsPageAndResolution(t *testing.T) {
	t.Parallel()
	l := newLabelling(t, labellingOpts{annotators: 2, overlap: 2})
	base := projectPath(l.p, "")
	flagsURL := base + "/flags"

	ann := l.signedIn(l.anns[0])
	path, _ := l.start(ann)
	flaggedItem := itemIDOf(t, path)
	wantStatus(t, ann.post(path+"/skip", url.Values{"flag": {"broken"}, "note": {"<b>cut</b> after one line"}}), http.StatusSeeOther)

	lead := l.signedIn(l.lead)
	proj := lead.get(base)
	wantStatus(t, proj, http.StatusOK)
	wantContains(t, proj, `data-testid="flag-summary"`, `<strong data-testid="flags-open">1</strong>`, `href="`+flagsURL+`"`)

	page := lead.get(flagsURL)
	wantStatus(t, page, http.StatusOK)
	row := flagRow(t, page, "r1")
	for _, want := range []string{"&lt;b&gt;cut&lt;/b&gt; after one line", l.anns[0].Email, ">Broken<", `data-testid="resolve-pulled"`,
		fmt.Sprintf(`href="%s/disagreements/%d"`, base, flaggedItem)} {
		if !strings.Contains(row, want) {
			t.Fatalf("flag row lacks %q: %s", want, row)
		}
	}
	if strings.Contains(page.body, "<b>cut</b>") {
		t.Fatal("an annotator's note reached the page unescaped")
	}
	wantContains(t, page, "--update", `data-testid="export-flags-csv"`)
	// Filters: another reason, or resolved flags, show none of it.
	wantContains(t, lead.get(flagsURL+"?reason=distressing"), `data-testid="flags-empty"`)
	wantContains(t, lead.get(flagsURL+"?status=resolved"), `data-testid="flags-empty"`)
	wantContains(t, lead.get(flagsURL+"?reason=broken&status=all"), `data-item="r1"`)
	wantStatus(t, lead.get(flagsURL+"?reason=nonsense"), http.StatusUnprocessableEntity)

	// Nobody but the project's leads reads or resolves flags.
	var flagID int64
	if err := l.a.db.Pool().QueryRow(context.Background(), `SELECT id FROM assignments WHERE item_id = $1 AND flag IS NOT NULL`, flaggedItem).Scan(&flagID); err != nil {
		t.Fatal(err)
	}
	resolve := fmt.Sprintf("%s/%d/resolve", flagsURL, flagID)
	returnURL := fmt.Sprintf("%s/items/%d/return", flagsURL, flaggedItem)
	otherLead := l.a.user("other-lead@example.org", attune.RoleLead)
	l.a.project(otherLead, projectOpts{name: "Elsewhere"})
	out := l.signedIn(otherLead)
	for _, c := range []struct {
		who    *client
		status int
	}{{ann, http.StatusForbidden}, {l.signedIn(l.anns[1]), http.StatusForbidden}, {out, http.StatusNotFound}} {
		wantStatus(t, c.who.get(flagsURL), c.status)
		wantStatus(t, c.who.post(resolve, url.Values{"how": {"dismissed"}}), c.status)
		wantStatus(t, c.who.post(returnURL, nil), c.status)
		wantStatus(t, c.who.get(base+"/exports/flags.csv"), c.status)
	}
	annProject := ann.get(base)
	wantStatus(t, annProject, http.StatusOK)
	if strings.Contains(annProject.body, "flag-summary") || strings.Contains(annProject.body, "cut after") {
		t.Fatal("an annotator's project page shows flags")
	}
	if n, _ := l.a.db.CountFlags(context.Background(), l.p.ID); n.Open != 1 {
		t.Fatalf("a refused request resolved the flag: %+v", n)
	}

	// The lead takes the item out of the pool and returns to the list as
	// it was filtered.
	wantStatus(t, lead.post(resolve, url.Values{"how": {"sideways"}}), http.StatusUnprocessableEntity)
	r := lead.post(resolve, url.Values{"how": {"pulled"}, "note": {"garbled import"}, "back": {"reason=broken&status=open"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != flagsURL+"?reason=broken&status=open" {
		t.Fatalf("back to %q", loc)
	}
	wantContains(t, lead.get(r.Header.Get("Location")), "Took r1 out of the pool", `data-testid="flags-empty"`)
	wantStatus(t, lead.post(resolve, url.Values{"how": {"dismissed"}}), http.StatusConflict)
	done := lead.get(flagsURL + "?status=resolved")
	row = flagRow(t, done, "r1")
	for _, want := range []string{">pulled<", l.lead.Email, "garbled import", `data-testid="out-of-pool"`, `data-testid="return-item"`} {
		if !strings.Contains(row, want) {
			t.Fatalf("resolved row lacks %q: %s", want, row)
		}
	}
	wantContains(t, done, `data-testid="pulled-row" data-item="r1"`)
	wantContains(t, lead.get(base), `<span data-testid="flags-pulled">1</span>`, `data-testid="progress-pulled"`)

	// The other annotator is handed r2 (the first one holds it too, after
	// skipping r1), never r1; with r2 labelled there is nothing left for
	// them.
	other := l.signedIn(l.anns[1])
	path2, _ := l.start(other)
	if itemIDOf(t, path2) == flaggedItem {
		t.Fatal("an item out of the pool was handed out")
	}
	wantStatus(t, other.post(path2+"/labels", form(likertAnswers)), http.StatusSeeOther)
	if r := other.get(base + "/annotate"); r.StatusCode == http.StatusSeeOther && strings.HasSuffix(r.Header.Get("Location"), fmt.Sprint(flaggedItem)) {
		t.Fatal("an item out of the pool was handed out after the queue emptied")
	}

	// Putting it back hands it out again.
	wantStatus(t, lead.post(returnURL, url.Values{"back": {"status=resolved"}}), http.StatusSeeOther)
	if path3, _ := l.start(other); itemIDOf(t, path3) != flaggedItem {
		t.Fatalf("after putting r1 back, the annotator was handed %s", path3)
	}

	csv := lead.get(base + "/exports/flags.csv")
	wantStatus(t, csv, http.StatusOK)
	wantContains(t, csv, "item_id,system,reason,note,annotator,flagged_at,status,resolution,resolved_by", "r1,,broken,<b>cut</b> after one line,"+l.anns[0].Email)
}

// TestAPIFlags: the project's leads read its flags through the API,
// filtered by reason and status, a page at a time; its annotators get
// 403, everyone else 404, and no token 401.
func TestAPIFlags(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ann, ann2 := a.user("ann@example.org", attune.RoleAnnotator), a.user("ann2@example.org", attune.RoleAnnotator)
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann, ann2)
	c := a.apiFor(ann)
	status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	if status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", asg), map[string]string{"flag": "off-topic", "note": "a recipe, not a dialogue"}); status != http.StatusNoContent {
		t.Fatalf("skip: %d %v", status, body)
	}

	list := func(query string) []map[string]any {
		t.Helper()
		status, body := lead.call("GET", fmt.Sprintf("/api/v1/projects/%d/flags%s", p.ID, query), nil)
		if status != http.StatusOK {
			t.Fatalf("flags%s: %d %v", query, status, body)
		}
		if body["next_cursor"] != nil {
			t.Fatalf("flags%s: a next page after %v", query, body)
		}
		var out []map[string]any
		for _, f := range body["flags"].([]any) {
			out = append(out, f.(map[string]any))
		}
		return out
	}
	flags := list("")
	if len(flags) != 1 {
		t.Fatalf("flags: %v", flags)
	}
	f := flags[0]
	if f["source_id"] != "a1" || f["reason"] != "off-topic" || f["note"] != "a recipe, not a dialogue" || f["annotator"] != ann.Email ||
		f["status"] != "open" || f["resolution"] != nil || f["resolved_by"] != nil || f["in_pool"] != true || f["flagged_at"] == "" {
		t.Fatalf("flag: %v", f)
	}
	if got := list("?reason=broken"); len(got) != 0 {
		t.Fatalf("broken: %v", got)
	}
	if got := list("?status=resolved"); len(got) != 0 {
		t.Fatalf("resolved: %v", got)
	}
	for _, q := range []string{"?reason=rude", "?status=closed", "?limit=0", "?limit=101", "?cursor=nonsense"} {
		if status, body := lead.call("GET", fmt.Sprintf("/api/v1/projects/%d/flags%s", p.ID, q), nil); status != http.StatusUnprocessableEntity {
			t.Fatalf("flags%s: %d %v", q, status, body)
		}
	}

	// Annotators of the project, even the one who raised it, are refused;
	// others do not learn the project exists.
	outsider := a.user("other-lead@example.org", attune.RoleLead)
	for _, tc := range []struct {
		c      *apiClient
		status int
	}{{c, http.StatusForbidden}, {a.apiFor(ann2), http.StatusForbidden}, {a.apiFor(outsider), http.StatusNotFound}, {&apiClient{t: t, base: a.srv.URL}, http.StatusUnauthorized}} {
		status, body := tc.c.call("GET", fmt.Sprintf("/api/v1/projects/%d/flags", p.ID), nil)
		if status != tc.status || strings.Contains(fmt.Sprint(body), "recipe") {
			t.Fatalf("want %d, got %d %v", tc.status, status, body)
		}
	}

	leadUser, err := a.db.FindUserByEmail(context.Background(), leadEmailOf(t, a, p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.ResolveFlag(context.Background(), store.FlagResolution{ActorID: leadUser.ID, ProjectID: p.ID, FlagID: int64(f["id"].(float64)),
		How: attune.ResolveDismissed, Note: "on topic after all"}); err != nil {
		t.Fatal(err)
	}
	resolved := list("?status=resolved&reason=off-topic")
	if len(resolved) != 1 || resolved[0]["resolution"] != "dismissed" || resolved[0]["resolved_by"] != leadUser.Email ||
		resolved[0]["resolution_note"] != "on topic after all" || resolved[0]["status"] != "resolved" || resolved[0]["resolved_at"] == nil {
		t.Fatalf("resolved: %v", resolved)
	}
	if got := list("?status=open"); len(got) != 0 {
		t.Fatalf("open after dismissing: %v", got)
	}
}

// leadEmailOf returns the email of the project's lead.
func leadEmailOf(t *testing.T, a *app, p *attune.Project) string {
	t.Helper()
	ms, err := a.db.ListMembers(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Role == attune.MemberLead {
			return m.Email
		}
	}
	t.Fatal("the project has no lead")
	return ""
}

// TestAPIFlagsPages: flags page by cursor, newest first, each exactly once
// across the pages, the cursor carrying the filter's order.
func TestAPIFlagsPages(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	var anns []*attune.User
	for i := range 5 {
		anns = append(anns, a.user(fmt.Sprintf("ann%d@example.org", i), attune.RoleAnnotator))
	}
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 5, twoItems, anns...)
	// Each annotator skips both items with a flag: ten flags.
	for _, u := range anns {
		c := a.apiFor(u)
		for range 2 {
			status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
			if status != http.StatusOK {
				t.Fatalf("next: %d %v", status, next)
			}
			asg := next["assignment"].(map[string]any)["id"].(float64)
			if status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/skip", asg), map[string]string{"flag": "broken"}); status != http.StatusNoContent {
				t.Fatalf("skip: %d %v", status, body)
			}
		}
	}
	seen := map[float64]bool{}
	var times []string
	cursor := ""
	pages := 0
	for {
		q := "?limit=3"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		status, body := lead.call("GET", fmt.Sprintf("/api/v1/projects/%d/flags%s", p.ID, q), nil)
		if status != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages, status, body)
		}
		pages++
		for _, f := range body["flags"].([]any) {
			f := f.(map[string]any)
			id := f["id"].(float64)
			if seen[id] {
				t.Fatalf("flag %v on two pages", id)
			}
			seen[id] = true
			times = append(times, f["flagged_at"].(string))
		}
		next, _ := body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 10 || pages != 4 {
		t.Fatalf("%d flags over %d pages, want 10 over 4", len(seen), pages)
	}
	for i := 1; i < len(times); i++ {
		if times[i] > times[i-1] {
			t.Fatalf("not newest first: %v", times)
		}
	}
}
