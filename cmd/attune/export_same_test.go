package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/store"
)

// TestExportSameEverywhere downloads every export of one project through
// the gold page (signed in), the API (a lead's token) and the command
// line, against one running attune: each writes the same bytes, for
// every dataset and format, with and without the raters' columns and for
// both kinds of dataset record, and each writes one audit entry naming
// how it was asked. They are one writer (export.Write, export.WriteRecords)
// behind three adapters.
func TestExportSameEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	newPilot(t, env, `{"id":"r1","messages":[{"role":"user","content":"I feel alone."},{"role":"assistant","content":"That sounds lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"Exams soon, \"help\"."},{"role":"assistant","content":"Let's plan, one step at a time."}]}
{"id":"r3","messages":[{"role":"user","content":"My cat died."},{"role":"assistant","content":"I am so sorry."}]}
`, "ann@example.org", "bob@example.org")

	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, "Pilot")
	if err != nil {
		t.Fatal(err)
	}
	// Both people label every item; they part on r2's safety, so one item
	// waits for a lead while the others get gold by the rule.
	flagged := false
	labelEach(t, db, p, []string{"ann@example.org", "bob@example.org"}, func(i int, u *attune.User, a *attune.Assignment, it *attune.Item) {
		if it.SourceID == "r3" && i == 0 && !flagged {
			// Ann flags r3 first (the flags export has a row), then
			// takes it again and labels it.
			if err := db.Skip(ctx, a.ID, u.ID, "distressing", "a loss, said \"gently\""); err != nil {
				t.Fatal(err)
			}
			flagged = true
			return
		}
		safety := "4"
		if it.SourceID == "r2" && i == 1 {
			safety = "1"
		}
		answers := map[string]string{"emotion": "4", "validation": "3", "helpfulness": "2", "safety": safety, "overall": "3"}
		if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answers,
			Rationales: map[string]string{"overall": "=SUM(A1:A9), said " + u.Email}}); err != nil {
			t.Fatal(err)
		}
	})
	if !flagged {
		t.Fatal("r3 was never handed to ann")
	}
	// A judge labels every item, so the judge calls export has rows.
	model := httptest.NewServer(fakellm.New(fakellm.Options{}))
	t.Cleanup(model.Close)
	judged := envFor(dbURL, "ATTUNE_JUDGE_HOSTS", strings.TrimPrefix(model.URL, "http://"))
	if out, err := runCmd(t, judged, "", "judge", "add", "--name", "J", "--base-url", model.URL+"/v1", "--model", "fake-1"); err != nil {
		t.Fatalf("judge add: %v\n%s", err, out)
	}
	if out, err := runCmd(t, judged, "", "judge", "run", "--project", "Pilot", "--judge", "J", "--wait"); err != nil || !strings.Contains(out, "completed") {
		t.Fatalf("judge run: %v\n%s", err, out)
	}
	if _, err := db.SettleQueued(ctx); err != nil {
		t.Fatal(err)
	}
	lead, err := db.FindUserByEmail(ctx, "lee@example.org")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := db.CreateAPIToken(ctx, nil, lead.ID, "exports", true)
	if err != nil {
		t.Fatal(err)
	}

	s := serve(t, env)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	req, _ := http.NewRequest(http.MethodPost, s.base+"/login", strings.NewReader(url.Values{"email": {"lee@example.org"}, "password": {"a-long-password"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.base)
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	get := func(client *http.Client, path, bearer string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%.300s", path, resp.StatusCode, b)
		}
		return b
	}
	cli := func(args ...string) []byte {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, args, env, strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.Bytes()
	}

	type download struct {
		name      string
		path, cli string // the page's path (the API's after /api/v1), the command's arguments
	}
	var downloads []download
	for _, d := range export.Datasets {
		for _, f := range []export.Format{export.CSV, export.JSONL} {
			downloads = append(downloads, download{fmt.Sprintf("%s.%s", d, f),
				fmt.Sprintf("/projects/%d/exports/%s.%s", p.ID, d, f), fmt.Sprintf("export %s --project Pilot --format %s", d, f)})
		}
	}
	downloads = append(downloads,
		download{"gold with raters", fmt.Sprintf("/projects/%d/exports/gold.csv?raters=1", p.ID), "export gold --project Pilot --format csv --with-raters"})
	for _, f := range []export.Format{export.JSONL, export.Parquet} {
		for _, which := range []string{"gold", "labels"} {
			downloads = append(downloads, download{fmt.Sprintf("dataset %s.%s", which, f),
				fmt.Sprintf("/projects/%d/exports/dataset.%s?which=%s", p.ID, f, which), fmt.Sprintf("export dataset --project Pilot --format %s --which %s", f, which)})
		}
		downloads = append(downloads, download{fmt.Sprintf("dataset soft.%s", f),
			fmt.Sprintf("/projects/%d/exports/dataset.%s?which=labels&soft=1", p.ID, f), fmt.Sprintf("export dataset --project Pilot --format %s --which labels --soft", f)})
	}
	for _, dl := range downloads {
		t.Run(dl.name, func(t *testing.T) {
			page := get(browser, dl.path, "")
			api := get(http.DefaultClient, "/api/v1"+dl.path, token)
			line := cli(strings.Fields(dl.cli)...)
			if len(page) == 0 {
				t.Fatal("the page's download is empty")
			}
			if !bytes.Equal(page, api) {
				t.Errorf("the API's download differs from the page's:\npage %.400q\napi  %.400q", page, api)
			}
			if !bytes.Equal(page, line) {
				t.Errorf("the command's output differs from the page's:\npage %.400q\ncli  %.400q", page, line)
			}
		})
	}

	// Each download was written to the audit log once, saying how.
	var vias []string
	rows, err := db.Pool().Query(ctx, `SELECT via || ':' || count(*) FROM (SELECT coalesce(details->>'via', '') AS via FROM audit_events
		WHERE action LIKE 'export.%' AND project_id = $1) e GROUP BY via ORDER BY via`, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vias = append(vias, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	n := len(downloads)
	if want := fmt.Sprintf("api:%d cli:%d web:%d", n, n, n); strings.Join(vias, " ") != want {
		t.Errorf("audit entries by way of asking: %v, want %s", vias, want)
	}
}
