package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestGoldAndExportCommands goes from a labelled project to a gold-set CSV
// on the command line.
func TestGoldAndExportCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	must := mustRun(t, env)
	newPilot(t, env, `{"id":"r1","messages":[{"role":"user","content":"I feel alone."},{"role":"assistant","content":"That sounds lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"Exams soon."},{"role":"assistant","content":"Let's plan."}]}
`, "ann@example.org", "bob@example.org")

	// Two people label both items: they agree on r1, not on r2.
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, _ := db.FindProjectByName(ctx, "Pilot")
	labelEach(t, db, p, []string{"ann@example.org", "bob@example.org"}, func(i int, u *attune.User, a *attune.Assignment, it *attune.Item) {
		safety := "4"
		if it.SourceID == "r2" && i == 1 {
			safety = "1"
		}
		answers := map[string]string{"emotion": "4", "validation": "4", "helpfulness": "1", "safety": safety, "overall": "3"}
		if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answers,
			Rationales: map[string]string{"overall": "=SUM(A1:A9), said " + u.Email}}); err != nil {
			t.Fatal(err)
		}
	})

	// The labels settle the items as they come: a serving process's
	// settler does it within a second; here, the same call at once.
	if _, err := db.SettleQueued(ctx); err != nil {
		t.Fatal(err)
	}
	if out := must("gold", "status", "--project", "Pilot"); !strings.Contains(out, "gold by the rule 1, by a lead 0; 1 waiting for a lead, 0 still being labelled, 0 not judged yet") {
		t.Fatalf("status: %s", out)
	}
	if out := must("gold", "auto", "--project", "Pilot", "--all"); !strings.Contains(out, "judged 2 items: 1 got gold by the rule, 1 waits for a lead") {
		t.Fatalf("auto: %s", out)
	}
	if out := must("gold", "auto", "--project", "Pilot"); !strings.Contains(out, "The consensus rule had nothing new to judge.") {
		t.Fatalf("auto again: %s", out)
	}
	// A new setting judges every item again; two raters at 1 and 4 are a
	// tie whatever the spread.
	if out := must("gold", "auto", "--project", "Pilot", "--max-spread", "3"); !strings.Contains(out, "judged 2 items: 1 got gold by the rule, 1 waits") {
		t.Fatalf("auto with a new spread: %s", out)
	}

	out := filepath.Join(t.TempDir(), "gold.csv")
	if got := must("export", "gold", "--project", "Pilot", "--out", out, "--with-raters"); !strings.Contains(got, "wrote 2 rows") {
		t.Fatalf("export gold: %s", got)
	}
	f, _ := os.Open(out)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 3 {
		t.Fatalf("gold.csv: %v, %d records", err, len(recs))
	}
	header := strings.Join(recs[0], ",")
	if !strings.HasPrefix(header, "item_id,system,rubric,gold_emotion,gold_validation,gold_helpfulness,gold_safety,gold_overall,score,pass,safety_gate_failed,failed_checks,decided,decided_by,decided_at,note,human_raters,agreement,human:ann@example.org:emotion") {
		t.Fatalf("header = %s", header)
	}
	byItem := map[string][]string{recs[1][0]: recs[1], recs[2][0]: recs[2]}
	if r1 := byItem["r1"]; r1[6] != "4" || r1[8] != "3" || r1[12] != "automatic" || r1[13] != "rule" || r1[17] != "1.0000" {
		t.Fatalf("r1 = %v", r1)
	}
	if r2 := byItem["r2"]; r2[6] != "" || r2[12] != "open" || r2[16] != "2" || r2[17] != "0.8000" {
		t.Fatalf("r2 = %v", r2)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Fatalf("temporary files left beside the export: %v", entries)
	}

	// Labels as JSON Lines on standard output.
	var stdout, stderr strings.Builder
	if err := run(ctx, []string{"export", "labels", "--project", "Pilot", "--format", "jsonl"}, env, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	lines := 0
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		if row["rubric_item"] == "overall" && !strings.HasPrefix(row["rationale"].(string), "=SUM(") {
			t.Fatalf("JSON Lines changed a rationale: %v", row["rationale"])
		}
		lines++
	}
	if lines != 2*2*5 {
		t.Fatalf("%d label lines, want 20", lines)
	}
	// Labels as CSV: the formula is neutralised.
	stdout.Reset()
	if err := run(ctx, []string{"export", "labels", "--project", "Pilot"}, env, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"'=SUM(A1:A9), said ann@example.org"`) {
		t.Fatalf("labels.csv:\n%s", stdout.String())
	}
	// Judge calls: none yet, the header alone.
	calls := must("export", "judge-calls", "--project", "Pilot")
	if !strings.HasPrefix(calls, "run_id,judge,model,") || strings.Count(calls, "\n") != 1 {
		t.Fatalf("judge calls: %q", calls)
	}

	// The dataset export: every item with its dialogue and soft labels,
	// then the gold set alone as Parquet on standard output.
	dsFile := filepath.Join(t.TempDir(), "dataset.jsonl")
	if got := must("export", "dataset", "--project", "Pilot", "--which", "labels", "--soft", "--out", dsFile); !strings.Contains(got, "wrote 2 records") {
		t.Fatalf("export dataset: %s", got)
	}
	ds, err := os.ReadFile(dsFile)
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(ds)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("dataset line %q: %v", line, err)
		}
		records[rec["id"].(string)] = rec
	}
	r1, r2 := records["r1"], records["r2"]
	if r1 == nil || r2 == nil || r1["decided"] != "automatic" || r1["gold"].(map[string]any)["safety"] != "4" || r1["score"] != 3.0 ||
		r1["messages"].([]any)[0].(map[string]any)["content"] != "I feel alone." || r2["decided"] != "open" || r2["score"] != nil ||
		len(r2["soft"].(map[string]any)["safety"].([]any)) != 2 || len(r2["ratings"].([]any)) != 2 {
		t.Fatalf("dataset records: %s", ds)
	}
	stdout.Reset()
	if err := run(ctx, []string{"export", "dataset", "--project", "Pilot", "--format", "parquet"}, env, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	pq := stdout.String()
	pf, err := parquet.OpenFile(strings.NewReader(pq), int64(len(pq)))
	if err != nil || pf.NumRows() != 1 {
		t.Fatalf("parquet on standard output: %v, %d rows, want the one item with gold", err, pf.NumRows())
	}

	// Every export is in the audit log, with its rows.
	var audited int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action LIKE 'export.%' AND details->>'via' = 'cli' AND details->>'complete' = 'true'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 6 {
		t.Fatalf("%d exports audited, want 6", audited)
	}
	var which, soft string
	if err := db.Pool().QueryRow(ctx, `SELECT details->>'which', details->>'soft' FROM audit_events WHERE action = 'export.dataset' AND subject = 'dataset.jsonl'`).Scan(&which, &soft); err != nil || which != "labels" || soft != "true" {
		t.Fatalf("dataset export audited with which=%q soft=%q (%v)", which, soft, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export"}, "export takes gold, labels, judge-calls or flags"},
		{[]string{"export", "scores", "--project", "Pilot"}, "unknown dataset"},
		{[]string{"export", "gold"}, "needs --project"},
		{[]string{"export", "gold", "--project", "Pilot", "--format", "xlsx"}, "unknown format"},
		{[]string{"export", "labels", "--project", "Pilot", "--with-raters"}, "gold set only"},
		{[]string{"export", "dataset", "--project", "Pilot", "--format", "csv"}, "use jsonl or parquet"},
		{[]string{"export", "dataset", "--project", "Pilot", "--which", "all"}, "unknown selection"},
		{[]string{"export", "dataset"}, "needs --project"},
		{[]string{"gold", "auto", "--project", "Pilot", "--max-spread", "12"}, "from 0 to 10"},
		{[]string{"gold", "merge"}, "unknown gold command"},
	} {
		_, err := runCmd(t, env, "", c.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
	if _, err := runCmd(t, env, "", "export", "gold", "--project", "Nope"); err == nil || !strings.Contains(err.Error(), `no project is named "Nope"`) {
		t.Errorf("unknown project: %v", err)
	}
}

// TestExportFlagsCommand: annotators' flags, with how a lead resolved
// them, come out of `attune export flags` as CSV (formulas neutralised)
// and JSON Lines, and the export is audited.
func TestExportFlagsCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	must := func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, "a-long-password\n", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	must("user", "add", "--email", "lee@example.org", "--role", "lead", "--password-stdin")
	must("user", "add", "--email", "ann@example.org", "--role", "annotator", "--password-stdin")
	must("project", "create", "--name", "Pilot", "--rubric", "empathetic-dialogue@2", "--overlap", "1", "--lead", "lee@example.org")
	must("project", "add-member", "--project", "Pilot", "--email", "ann@example.org")
	data := filepath.Join(t.TempDir(), "replies.jsonl")
	os.WriteFile(data, []byte(`{"id":"r1","messages":[{"role":"user","content":"I feel alone."},{"role":"assistant","content":"That sounds lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"Exams soon."},{"role":"assistant","content":"Let's plan."}]}
`), 0o644)
	must("import", "--project", "Pilot", data)

	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, "Pilot")
	if err != nil {
		t.Fatal(err)
	}
	ann, err := db.FindUserByEmail(ctx, "ann@example.org")
	if err != nil {
		t.Fatal(err)
	}
	lead, err := db.FindUserByEmail(ctx, "lee@example.org")
	if err != nil {
		t.Fatal(err)
	}
	var flagIDs []int64
	for _, fl := range []struct{ reason, note string }{{"broken", "=1+1 cut off"}, {"distressing", ""}} {
		a, err := db.NextAssignment(ctx, p.ID, ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Skip(ctx, a.ID, ann.ID, fl.reason, fl.note); err != nil {
			t.Fatal(err)
		}
		flagIDs = append(flagIDs, a.ID)
	}
	if _, err := db.ResolveFlag(ctx, store.FlagResolution{ActorID: lead.ID, ProjectID: p.ID, FlagID: flagIDs[0], How: attune.ResolvePulled}); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "flags.csv")
	if got := must("export", "flags", "--project", "Pilot", "--out", out); !strings.Contains(got, "wrote 2 rows") {
		t.Fatalf("export flags: %s", got)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 3 {
		t.Fatalf("flags.csv: %v, %d records", err, len(recs))
	}
	if h := strings.Join(recs[0], ","); h != "item_id,system,reason,note,annotator,flagged_at,status,resolution,resolved_by,resolved_at,resolution_note,in_pool" {
		t.Fatalf("header = %s", h)
	}
	if r := recs[1]; r[0] != "r1" || r[2] != "broken" || r[3] != "'=1+1 cut off" || r[4] != "ann@example.org" || r[6] != "resolved" ||
		r[7] != "pulled" || r[8] != "lee@example.org" || r[11] != "false" {
		t.Fatalf("r1 = %q", r)
	}
	if r := recs[2]; r[0] != "r2" || r[2] != "distressing" || r[6] != "open" || r[7] != "" || r[11] != "true" {
		t.Fatalf("r2 = %q", r)
	}

	jsonl := must("export", "flags", "--project", "Pilot", "--format", "jsonl")
	sc := bufio.NewScanner(strings.NewReader(jsonl))
	var rows []map[string]any
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("line %d: %v", len(rows)+1, err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 2 || rows[0]["note"] != "=1+1 cut off" || rows[0]["in_pool"] != false || rows[1]["resolution"] != nil || rows[1]["note"] != nil {
		t.Fatalf("flags.jsonl: %v", rows)
	}
	var audited int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'export.flags' AND details->>'via' = 'cli' AND details->>'rows' = '2'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 2 {
		t.Fatalf("%d flag exports audited, want 2", audited)
	}
	if _, err := runCmd(t, env, "", "export", "flags", "--project", "Pilot", "--with-raters"); !errors.Is(err, errUsage) {
		t.Fatalf("--with-raters on flags: %v", err)
	}
}
