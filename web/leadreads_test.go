package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

// getAPI sends a GET with the client's token, from any goroutine: it
// returns the status, the Retry-After header and the body.
func getAPI(c *apiClient, path string) (int, string, string, error) {
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b), err
}

// lockSearchIndex holds item_search locked from a connection outside the
// app's pool, so that a text search waits for as long as the test likes;
// the returned function lets it go.
func lockSearchIndex(t *testing.T, a *app) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE item_search IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var once bool
	release := func() {
		if !once {
			once = true
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

// searchApp is a project of two indexed items, its annotator's and its
// lead's API clients.
func searchApp(t *testing.T) (*app, *attune.Project, *apiClient, *apiClient) {
	t.Helper()
	a := newApp(t)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	p, lead := apiProject(t, a, "empathetic-dialogue@2", 1, twoItems, ann)
	if _, err := a.db.IndexItems(t.Context(), p.ID); err != nil {
		t.Fatal(err)
	}
	return a, p, a.apiFor(ann), lead
}

// TestSearchTextBounded sends a search text over each bound, on the page
// and in the API: 422 naming the limits, and no query run.
func TestSearchTextBounded(t *testing.T) {
	t.Parallel()
	a, p, _, lead := searchApp(t)
	long := strings.Repeat("a", store.MaxSearchTextChars+1)
	many := strings.TrimSpace(strings.Repeat("dog ", store.MaxSearchTerms+1))
	for _, q := range []string{long, many} {
		status, _, body, err := getAPI(lead, fmt.Sprintf("/api/v1/projects/%d/items?q=%s", p.ID, url.QueryEscape(q)))
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusUnprocessableEntity || !strings.Contains(body, fmt.Sprintf("%d words", store.MaxSearchTerms)) ||
			!strings.Contains(body, fmt.Sprintf("%d characters", store.MaxSearchTextChars)) {
			t.Errorf("API, %d characters: %d %s", len(q), status, body)
		}
	}
	// The page says the same.
	c := a.client()
	c.mustSignIn(a.user("admin@example.org", attune.RoleAdmin)) // admins count as every project's leads
	r := c.get(fmt.Sprintf("/projects/%d/browse?q=%s", p.ID, url.QueryEscape(many)))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantContains(t, r, fmt.Sprintf("search for at most %d words", store.MaxSearchTerms))
	// At the bounds, the search runs.
	ok := strings.TrimSpace(strings.Repeat("alone ", store.MaxSearchTerms))
	if status, _, body, err := getAPI(lead, fmt.Sprintf("/api/v1/projects/%d/items?q=%s", p.ID, url.QueryEscape(ok))); err != nil || status != http.StatusOK {
		t.Errorf("a search at the bound: %d %s %v", status, body, err)
	}
}

// TestSearchTimeoutHonoured makes a search wait past its statement
// timeout (the search index is locked) and checks PostgreSQL cancels it
// and the lead reads a clear 503, not a 500.
func TestSearchTimeoutHonoured(t *testing.T) {
	t.Parallel()
	a, p, _, lead := searchApp(t)
	a.db.SetReadLimits(store.ReadLimits{SearchTimeout: 50 * time.Millisecond})
	lockSearchIndex(t, a)
	status, _, body, err := getAPI(lead, fmt.Sprintf("/api/v1/projects/%d/items?q=alone", p.ID))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "the search took too long; narrow it") {
		t.Fatalf("timed-out search: %d %s", status, body)
	}
	if strings.Contains(a.log.String(), `"status":500`) {
		t.Error("the timed-out search was logged as a server error")
	}
}

// TestLeadReadsLeaveAnnotatorsTheirConnections fills the lead-read slots
// with a search that waits on a lock, then sends more searches (each
// answered 503 with Retry-After at once, not queued for the pool) and an
// annotator's next and submit, which go through while the search waits.
func TestLeadReadsLeaveAnnotatorsTheirConnections(t *testing.T) {
	t.Parallel()
	a, p, ann, lead := searchApp(t)
	a.db.SetReadLimits(store.ReadLimits{Slots: 1, SearchTimeout: time.Minute})
	release := lockSearchIndex(t, a)
	search := fmt.Sprintf("/api/v1/projects/%d/items?q=alone", p.ID)
	type result struct {
		status int
		err    error
	}
	first := make(chan result, 1)
	go func() {
		status, _, _, err := getAPI(lead, search)
		first <- result{status, err}
	}()
	// Wait until the first search holds its slot and waits on the lock
	// (the only statement of this database that can: its text, snippet
	// and all, runs past what pg_stat_activity keeps of a query).
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int
		if err := a.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first search never waited on the lock")
		}
	}
	for i := range 24 {
		status, retry, body, err := getAPI(lead, search)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "busy") {
			t.Fatalf("search %d with the slots full: %d (Retry-After %q) %s", i, status, retry, body)
		}
	}
	status, next := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next with the slots full: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	status, body := ann.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers})
	if status != http.StatusCreated {
		t.Fatalf("submit with the slots full: %d %v", status, body)
	}
	release()
	if r := <-first; r.err != nil || r.status != http.StatusOK {
		t.Fatalf("the waiting search: %d %v", r.status, r.err)
	}
}

// lockTable holds table locked from a connection outside the app's pool,
// so that a read of it waits for as long as the test likes; the returned
// function lets it go.
func lockTable(t *testing.T, a *app, table string) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{table}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var once bool
	release := func() {
		if !once {
			once = true
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

// labelOne has the annotator label one item through the API, so that the
// project's report has labels to read.
func labelOne(t *testing.T, p *attune.Project, ann *apiClient) {
	t.Helper()
	status, next := ann.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	asg := next["assignment"].(map[string]any)["id"].(float64)
	if status, body := ann.call("POST", fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": likertAnswers}); status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, body)
	}
}

// TestReportAndExportTimeoutsHonoured makes a report and each kind of
// export wait past their statement timeouts (the tables they read are
// locked) and checks PostgreSQL cancels them and the lead reads a clear
// 503 saying what to do, on the API and on the page, not a 500.
func TestReportAndExportTimeoutsHonoured(t *testing.T) {
	t.Parallel()
	a, p, ann, lead := searchApp(t)
	labelOne(t, p, ann)
	a.db.SetReadLimits(store.ReadLimits{ReportTimeout: 50 * time.Millisecond, ExportTimeout: 50 * time.Millisecond})
	lockTable(t, a, "labels")
	lockTable(t, a, "item_gold")
	for _, c := range []struct{ path, want string }{
		{fmt.Sprintf("/api/v1/projects/%d/report", p.ID), "the report took too long to read; narrow it"},
		{fmt.Sprintf("/api/v1/projects/%d/exports/labels.csv", p.ID), "the export took too long to read from the database; try again later"},
		{fmt.Sprintf("/api/v1/projects/%d/exports/gold.jsonl", p.ID), "the export took too long"},
		{fmt.Sprintf("/api/v1/projects/%d/exports/dataset.jsonl?which=gold", p.ID), "the export took too long"},
	} {
		status, _, body, err := getAPI(lead, c.path)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusServiceUnavailable || !strings.Contains(body, c.want) {
			t.Errorf("%s past its timeout: %d %s", c.path, status, body)
		}
	}
	pc := a.client()
	pc.mustSignIn(a.user("admin@example.org", attune.RoleAdmin))
	r := pc.get(fmt.Sprintf("/projects/%d/report", p.ID))
	wantStatus(t, r, http.StatusServiceUnavailable)
	wantContains(t, r, "fewer annotators or judges, or a date range")
	if strings.Contains(a.log.String(), `"status":500`) {
		t.Error("a timed-out read was logged as a server error")
	}
}

// TestReportsAndExportsTakeLeadReadSlots fills the lead-read slots with a
// search that waits on a lock: reports and exports are then answered 503
// busy with Retry-After at once, while an annotator's submit goes through.
func TestReportsAndExportsTakeLeadReadSlots(t *testing.T) {
	t.Parallel()
	a, p, ann, lead := searchApp(t)
	labelOne(t, p, ann)
	a.db.SetReadLimits(store.ReadLimits{Slots: 1, SearchTimeout: time.Minute, SlotWait: -1})
	release := lockSearchIndex(t, a)
	first := make(chan int, 1)
	go func() {
		status, _, _, _ := getAPI(lead, fmt.Sprintf("/api/v1/projects/%d/items?q=alone", p.ID))
		first <- status
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int
		if err := a.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the search never waited on the lock")
		}
	}
	for _, path := range []string{
		fmt.Sprintf("/api/v1/projects/%d/report", p.ID),
		fmt.Sprintf("/api/v1/projects/%d/exports/labels.csv", p.ID),
		fmt.Sprintf("/api/v1/projects/%d/exports/flags.csv", p.ID),
		fmt.Sprintf("/api/v1/projects/%d/exports/dataset.jsonl?which=labels", p.ID),
	} {
		status, retry, body, err := getAPI(lead, path)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "busy") {
			t.Errorf("%s with the slots full: %d (Retry-After %q) %s", path, status, retry, body)
		}
	}
	labelOne(t, p, ann) // the annotator is not held up
	release()
	if status := <-first; status != http.StatusOK {
		t.Fatalf("the waiting search: %d", status)
	}
	// With the slot free, the report and an export run.
	for _, path := range []string{fmt.Sprintf("/api/v1/projects/%d/report", p.ID), fmt.Sprintf("/api/v1/projects/%d/exports/labels.csv", p.ID)} {
		if status, _, body, err := getAPI(lead, path); err != nil || status != http.StatusOK {
			t.Errorf("%s with the slot free: %d %s %v", path, status, body, err)
		}
	}
}
