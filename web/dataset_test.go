package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

// TestDatasetExportThroughWebAndAPI: a lead downloads the dataset export
// from the gold set page and with a token; an annotator of the project
// is refused, a lead of another project finds nothing, and every download
// is in the audit log.
func TestDatasetExportThroughWebAndAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLabelling(t, labellingOpts{overlap: 2, annotators: 2})
	l.labelThroughAPI(t, func(i int, source string) map[string]string {
		safety := "4"
		if source == "r2" && i == 1 {
			safety = "1" // people disagree: r2 stays open
		}
		return map[string]string{"emotion": "4", "validation": "4", "helpfulness": "3", "safety": safety, "overall": "4"}
	}, nil)
	if _, err := l.a.db.ApplyConsensus(ctx, l.p.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	lead := l.signedIn(l.lead)
	base := projectPath(l.p, "")

	page := lead.get(base + "/gold")
	wantStatus(t, page, http.StatusOK)
	for _, id := range []string{"dataset-gold-jsonl", "dataset-gold-parquet", "dataset-labels-soft-jsonl", "dataset-labels-soft-parquet"} {
		if !strings.Contains(page.body, `data-testid="`+id+`"`) {
			t.Errorf("the gold set page has no %s link", id)
		}
	}

	dl := lead.get(base + "/exports/dataset.jsonl?which=labels&soft=1")
	wantStatus(t, dl, http.StatusOK)
	if ct, cd := dl.Header.Get("Content-Type"), dl.Header.Get("Content-Disposition"); ct != "application/x-ndjson; charset=utf-8" ||
		!strings.Contains(cd, "-dataset-labels-soft.jsonl") {
		t.Fatalf("Content-Type %q, Content-Disposition %q", ct, cd)
	}
	lines := strings.Split(strings.TrimSpace(dl.body), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records, want 2:\n%s", len(lines), dl.body)
	}
	var r1, r2 map[string]any
	json.Unmarshal([]byte(lines[0]), &r1)
	json.Unmarshal([]byte(lines[1]), &r2)
	if r1["id"] != "r1" || r1["decided"] != "automatic" || r1["gold"].(map[string]any)["safety"] != "4" ||
		r1["messages"].([]any)[1].(map[string]any)["content"] != "Moving can be lonely. What do you miss most?" ||
		r2["id"] != "r2" || r2["decided"] != "open" || len(r2["soft"].(map[string]any)["safety"].([]any)) != 2 {
		t.Fatalf("records:\n%s", dl.body)
	}
	gold := lead.get(base + "/exports/dataset.jsonl")
	wantStatus(t, gold, http.StatusOK)
	if strings.Count(gold.body, "\n") != 1 || !strings.HasPrefix(gold.body, `{"id":"r1",`) {
		t.Fatalf("the gold set by default, one item:\n%s", gold.body)
	}
	wantStatus(t, lead.get(base+"/exports/dataset.jsonl?which=all"), http.StatusUnprocessableEntity)

	// Tokens: the lead's gets Parquet; an annotator's is refused; a lead of
	// another project sees no such project.
	get := func(c *apiClient, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := contractClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	apiPath := fmt.Sprintf("/api/v1/projects/%d/exports/dataset.parquet?which=labels", l.p.ID)
	resp, body := get(l.a.apiFor(l.lead), apiPath)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.apache.parquet" {
		t.Fatalf("lead's token: %d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil || f.NumRows() != 2 {
		t.Fatalf("parquet: %v, %d rows", err, f.NumRows())
	}
	if resp, body := get(l.a.apiFor(l.anns[0]), apiPath); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("annotator's token: %d %s", resp.StatusCode, body)
	}
	stranger := l.a.user("stranger@example.org", attune.RoleLead)
	l.a.project(stranger, projectOpts{name: "Elsewhere", overlap: 1})
	if resp, body := get(l.a.apiFor(stranger), apiPath); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another project's lead: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(l.a.apiFor(l.lead), apiPath+"&soft=maybe"); resp.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(string(body), `"soft"`) {
		t.Fatalf("a bad soft: %d %s", resp.StatusCode, body)
	}
	// JSON Lines through the token: the page's file, byte for byte.
	if resp, body := get(l.a.apiFor(l.lead), fmt.Sprintf("/api/v1/projects/%d/exports/dataset.jsonl", l.p.ID)); resp.StatusCode != http.StatusOK || string(body) != gold.body {
		t.Fatalf("dataset.jsonl through the API: %d\n%s\nwant\n%s", resp.StatusCode, body, gold.body)
	}

	var web, api int
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE details->>'via' = 'web'), count(*) FILTER (WHERE details->>'via' = 'api')
		FROM audit_events WHERE action = 'export.dataset' AND details->>'complete' = 'true'`).Scan(&web, &api); err != nil {
		t.Fatal(err)
	}
	if web != 2 || api != 2 {
		t.Fatalf("%d page and %d token downloads audited, want 2 and 2", web, api)
	}
}
