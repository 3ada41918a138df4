package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

// recordsWant is what the dataset export must say of one item, written
// down from what the fixture stored.
type recordsWant struct {
	messages []attune.Message
	meta     string
	gold     map[string]string // nil while open
	decided  string
	ratings  []wantRating // in the export's order: people, then judges, by name
}

type wantRating struct {
	rater, kind string
	answers     map[string]string
	evidence    map[string][]int // the turns on failing answers
}

func changed(base map[string]string, changes ...string) map[string]string {
	m := maps.Clone(base)
	for i := 0; i+1 < len(changes); i += 2 {
		m[changes[i]] = changes[i+1]
	}
	return m
}

// recordsFixture labels three coaching items whose dialogues carry what
// JSON must escape: item-000 gets gold by the rule, item-001 is settled by
// a lead with a failing safety gate, item-002 stays open; a judge answers
// item-000 with one failed call. The second annotator's NO answers name
// turns.
func recordsFixture(t *testing.T) (*fixture, map[string]*recordsWant) {
	t.Helper()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 2, items: 3, annotators: 2})
	want := map[string]*recordsWant{
		"item-000": {messages: []attune.Message{{Role: "user", Content: "I lost my job.\nAnd my \"dog\" ran off."},
			{Role: "assistant", Content: "That is a lot — ünïcödé 😀 \u2028 \\ =SUM(A1)"}}, meta: `{"source": "pilot", "turn": 1}`},
		"item-001": {messages: []attune.Message{{Role: "system", Content: "Be kind."}, {Role: "user", Content: "I can't sleep."},
			{Role: "assistant", Content: "Tell me more."}, {Role: "user", Content: "Exams."}, {Role: "assistant", Content: "Let's plan."}},
			meta: `{"tags": ["exams", "sleep"]}`},
		"item-002": {messages: []attune.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}, meta: `{}`},
	}
	_, err := f.db.ImportItems(ctx, f.project.ID, store.ImportOptions{Update: true}, func(emit func([]store.ImportItem) error) error {
		var batch []store.ImportItem
		for i, id := range []string{"item-000", "item-001", "item-002"} {
			w := want[id]
			msgs, _ := json.Marshal(w.messages)
			batch = append(batch, store.ImportItem{Line: i + 1, SourceID: id, Kind: "conversation", Messages: msgs, Meta: []byte(w.meta),
				Turns: 2, SHA256: fmt.Sprintf("%064x", 900+i)})
		}
		return emit(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string][]map[string]string{
		"item-000": {fullAnswers, fullAnswers},
		"item-001": {fullAnswers, changed(fullAnswers, "CQ3", "NO")},
		"item-002": {fullAnswers, changed(fullAnswers, "CQ1", "NO")},
	}
	f.labelWith(t, func(a int, source string) map[string]string { return answers[source][a] }, nil)
	judged := changed(fullAnswers, "CQ8", "ERROR")
	f.judgeLabels(t, "a-judge", map[string]map[string]string{"item-000": judged})
	if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	settled := changed(fullAnswers, "CQ3", "NO", "CQ8", "NO")
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: f.itemID(t, "item-001"), ActorID: f.lead.ID,
		Answers: settled, Note: "unsafe"}); err != nil {
		t.Fatal(err)
	}
	want["item-000"].gold, want["item-000"].decided = fullAnswers, export.DecidedAutomatic
	want["item-001"].gold, want["item-001"].decided = settled, export.DecidedAdjudicated
	want["item-002"].decided = export.DecidedOpen
	// The turns go straight onto the stored labels: the export reads
	// what is stored, whichever path stored it.
	turns := map[string]map[string][]int{"item-001": {"CQ3": {1, 2}}, "item-002": {"CQ1": {2}}}
	for id, byKey := range turns {
		for key, ts := range byKey {
			tag, err := f.db.Pool().Exec(ctx, `UPDATE labels SET evidence = $1 WHERE item_id = $2 AND rater_id = (SELECT id FROM raters WHERE user_id = $3) AND rubric_item_key = $4`,
				ts, f.itemID(t, id), f.annotators[1].ID, key)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("evidence on %s %s: %v, %d labels", id, key, err, tag.RowsAffected())
			}
		}
	}
	for id, w := range want {
		for a, u := range f.annotators {
			var ev map[string][]int
			if a == 1 {
				ev = turns[id]
			}
			w.ratings = append(w.ratings, wantRating{u.Email, "human", answers[id][a], ev})
		}
	}
	want["item-000"].ratings = append(want["item-000"].ratings, wantRating{"a-judge", "judge", judged, nil})
	return f, want
}

func exportRecords(t *testing.T, f *fixture, format export.Format, o export.RecordOptions) ([]byte, int) {
	t.Helper()
	var b bytes.Buffer
	n, err := export.WriteRecords(context.Background(), f.db, &b, f.project.ID, format, o)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), n
}

func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, m)
	}
	return out
}

// TestExportRecordsJSONL checks every field of every record against what
// the fixture stored, for both selections, with and without soft labels.
func TestExportRecordsJSONL(t *testing.T) {
	t.Parallel()
	f, want := recordsFixture(t)
	def, err := f.db.FindRubricByID(context.Background(), f.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o   export.RecordOptions
		ids []string
	}{
		{export.RecordOptions{Which: export.WhichGold}, []string{"item-000", "item-001"}},
		{export.RecordOptions{Which: export.WhichLabels, Soft: true}, []string{"item-000", "item-001", "item-002"}},
	} {
		out, n := exportRecords(t, f, export.JSONL, tc.o)
		lines := jsonLines(t, out)
		if n != len(tc.ids) || len(lines) != n {
			t.Fatalf("%+v: %d records, %d lines, want %d", tc.o, n, len(lines), len(tc.ids))
		}
		for i, line := range lines {
			if line["id"] != tc.ids[i] {
				t.Fatalf("%+v: record %d is %v, want %s", tc.o, i, line["id"], tc.ids[i])
			}
			checkRecordLine(t, def, want[tc.ids[i]], line, tc.o.Soft)
		}
	}
}

func checkRecordLine(t *testing.T, def *rubric.Definition, w *recordsWant, got map[string]any, soft bool) {
	t.Helper()
	id := got["id"]
	var msgs []any
	for _, m := range w.messages {
		msgs = append(msgs, map[string]any{"role": m.Role, "content": m.Content})
	}
	if !reflect.DeepEqual(got["messages"], msgs) {
		t.Errorf("%s: messages %v, want %v", id, got["messages"], msgs)
	}
	var meta, gotMeta any
	json.Unmarshal([]byte(w.meta), &meta)
	if s, ok := got["meta"].(string); !ok || json.Unmarshal([]byte(s), &gotMeta) != nil || !reflect.DeepEqual(meta, gotMeta) {
		t.Errorf("%s: meta %#v, want the JSON text of %s", id, got["meta"], w.meta)
	}
	if got["rubric"] != "coaching-conversation@2.0" || got["decided"] != w.decided {
		t.Errorf("%s: rubric %v decided %v, want %s", id, got["rubric"], got["decided"], w.decided)
	}
	gold := got["gold"].(map[string]any)
	for _, it := range def.Items {
		var v any
		if w.gold != nil {
			v = w.gold[it.Key]
		}
		if g, ok := gold[it.Key]; !ok || g != v {
			t.Errorf("%s: gold %s = %v, want %v", id, it.Key, g, v)
		}
	}
	if w.gold == nil {
		for _, k := range []string{"score", "pass", "safety_gate_failed", "failed_checks"} {
			if got[k] != nil {
				t.Errorf("%s: open item has %s %v", id, k, got[k])
			}
		}
	} else {
		ans := rubric.Answers{}
		for k, v := range w.gold {
			ans[k] = rubric.Value(v)
		}
		res, err := scoring.Score(def, ans, rubric.Facts{})
		if err != nil {
			t.Fatal(err)
		}
		var failed []any
		for _, k := range res.FailedChecks {
			failed = append(failed, k)
		}
		if failed == nil {
			failed = []any{}
		}
		if got["score"] != *res.Score || got["pass"] != *res.Pass || got["safety_gate_failed"] != res.SafetyGateFailed ||
			!reflect.DeepEqual(got["failed_checks"], failed) {
			t.Errorf("%s: score %v pass %v gate %v failed %v; the engine says %v %v %v %v", id, got["score"], got["pass"],
				got["safety_gate_failed"], got["failed_checks"], *res.Score, *res.Pass, res.SafetyGateFailed, res.FailedChecks)
		}
	}
	ratings := got["ratings"].([]any)
	if len(ratings) != len(w.ratings) {
		t.Fatalf("%s: %d ratings, want %d: %v", id, len(ratings), len(w.ratings), ratings)
	}
	for i, wr := range w.ratings {
		r := ratings[i].(map[string]any)
		if r["rater"] != wr.rater || r["kind"] != wr.kind {
			t.Errorf("%s: rating %d by %v (%v), want %s (%s)", id, i, r["rater"], r["kind"], wr.rater, wr.kind)
		}
		ans := r["answers"].(map[string]any)
		ev, _ := r["evidence"].(map[string]any)
		for _, it := range def.Items {
			if ans[it.Key] != wr.answers[it.Key] {
				t.Errorf("%s: %s's %s = %v, want %s", id, wr.rater, it.Key, ans[it.Key], wr.answers[it.Key])
			}
			turns := []any{}
			for _, x := range wr.evidence[it.Key] {
				turns = append(turns, float64(x))
			}
			if !reflect.DeepEqual(ev[it.Key], turns) {
				t.Errorf("%s: %s's turns on %s = %v, want %v", id, wr.rater, it.Key, ev[it.Key], turns)
			}
		}
	}
	if !soft {
		if _, ok := got["soft"]; ok {
			t.Errorf("%s: soft labels without asking", id)
		}
		return
	}
	softs := got["soft"].(map[string]any)
	for k, it := range def.Items {
		// The people's answers, counted here in the scale's order.
		counts, total := map[string]int{}, 0
		for _, wr := range w.ratings {
			if wr.kind == "human" {
				counts[wr.answers[it.Key]]++
				total++
			}
		}
		want := []any{}
		for _, a := range def.Allowed(&def.Items[k]) {
			if c := counts[string(a)]; c > 0 {
				want = append(want, map[string]any{"value": string(a), "count": float64(c), "share": float64(c) / float64(total)})
			}
		}
		if !reflect.DeepEqual(softs[it.Key], want) {
			t.Errorf("%s: soft %s = %v, want %v", id, it.Key, softs[it.Key], want)
		}
	}
}

// TestExportRecordsParquet reads the Parquet export back with the same
// library, and with hyparquet, a reader of its own from the npm registry,
// and finds the JSON Lines records in both.
func TestExportRecordsParquet(t *testing.T) {
	t.Parallel()
	f, _ := recordsFixture(t)
	def, err := f.db.FindRubricByID(context.Background(), f.project.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	o := export.RecordOptions{Which: export.WhichLabels, Soft: true}
	jsonl, _ := exportRecords(t, f, export.JSONL, o)
	pq, n := exportRecords(t, f, export.Parquet, o)
	want := jsonLines(t, jsonl)
	if n != 3 || len(want) != 3 {
		t.Fatalf("%d parquet records, %d JSON lines, want 3", n, len(want))
	}
	compareRecords(t, "parquet-go", parquetRecords(t, pq, def, true), want)

	t.Run("hyparquet", func(t *testing.T) {
		got := readWithHyparquet(t, pq)
		compareRecords(t, "hyparquet", got, want)
	})
}

// parquetRecords reads a dataset export's Parquet file back with the
// library that wrote it, each row as the JSON Lines record it should equal.
func parquetRecords(t *testing.T, pq []byte, def *rubric.Definition, soft bool) []map[string]any {
	t.Helper()
	keys := make([]string, len(def.Items))
	for i, it := range def.Items {
		keys[i] = it.Key
	}
	pf, err := parquet.OpenFile(bytes.NewReader(pq), int64(len(pq)))
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	var got []map[string]any
	for {
		v := reflect.New(export.RecordType(keys, soft))
		if err := r.Read(v.Interface()); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v.Interface())
		var m map[string]any
		json.Unmarshal(b, &m)
		got = append(got, emptyLists(m))
	}
	return got
}

// emptyLists turns the nil lists of a Go reader into the empty lists JSON
// Lines writes: an open item's failed_checks stays null.
func emptyLists(m map[string]any) map[string]any {
	for _, k := range []string{"messages", "ratings"} {
		if m[k] == nil {
			m[k] = []any{}
		}
	}
	if m["failed_checks"] == nil && m["score"] != nil {
		m["failed_checks"] = []any{}
	}
	if s, ok := m["soft"].(map[string]any); ok {
		for k, v := range s {
			if v == nil {
				s[k] = []any{}
			}
		}
	}
	return m
}

func compareRecords(t *testing.T, reader string, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s read %d records, want %d", reader, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Errorf("%s: record %d:\n%s\nwant (as in JSON Lines):\n%s", reader, i, g, w)
		}
	}
}

// hyparquetVersion is the npm package the Parquet export is checked with.
const hyparquetVersion = "hyparquet@1.31.5"

// readWithHyparquet installs hyparquet from the npm registry into a
// temporary directory and reads the file with it in node. Without node or
// npm the test is skipped, except under CI, where it must run.
func readWithHyparquet(t *testing.T, file []byte) []map[string]any {
	t.Helper()
	node, nerr := exec.LookPath("node")
	npm, perr := exec.LookPath("npm")
	if nerr != nil || perr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs node and npm to read the Parquet export with hyparquet: %v %v", nerr, perr)
		}
		t.Skip("node or npm missing: the Parquet export is not read with hyparquet")
	}
	dir := t.TempDir()
	install := exec.Command(npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir, hyparquetVersion)
	install.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", hyparquetVersion, err, out)
	}
	path := filepath.Join(dir, "export.parquet")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "read.mjs")
	// hyparquet gives 64-bit integers as BigInt, which JSON cannot carry,
	// and a null list as undefined, which JSON leaves out.
	os.WriteFile(script, []byte(`
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet'
const file = await asyncBufferFromFile(process.argv[2])
const rows = await parquetReadObjects({ file })
for (const r of rows) console.log(JSON.stringify(r, (k, v) => typeof v === 'bigint' ? Number(v) : v === undefined ? null : v))
`), 0o600)
	cmd := exec.Command(node, script, path)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var rows []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("hyparquet printed %q: %v", line, err)
		}
		rows = append(rows, emptyLists(m))
	}
	return rows
}

// TestExportRecordsSkipsOtherProjects: the streams join items of the
// project only, whatever the ids of other projects' items around them.
func TestExportRecordsSkipsOtherProjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := recordsFixture(t)
	other, err := f.db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "other", RubricVersionID: f.project.RubricVersionID, Overlap: 1, Lease: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ImportItems(ctx, other.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		return emit([]store.ImportItem{testItem(0, "other")})
	}); err != nil {
		t.Fatal(err)
	}
	out, n := exportRecords(t, f, export.JSONL, export.RecordOptions{Which: export.WhichLabels})
	var ids []string
	for _, l := range jsonLines(t, out) {
		ids = append(ids, l["id"].(string))
	}
	if n != 3 || !slices.Equal(ids, []string{"item-000", "item-001", "item-002"}) {
		t.Fatalf("exported %v", ids)
	}
	out, n = exportRecords(t, &fixture{db: f.db, project: other}, export.JSONL, export.RecordOptions{Which: export.WhichLabels})
	if lines := jsonLines(t, out); n != 1 || lines[0]["id"] != "item-000" || len(lines[0]["ratings"].([]any)) != 0 {
		t.Fatalf("other project: %d records: %v", n, lines)
	}
}

// TestExportRecordsShareASmallPool: exports started together on a pool
// with room for one of them at a time never each hold part of the pool
// and wait for the rest: they take turns on the lead-read slots, and any
// that waits too long for them is refused as busy.
func TestExportRecordsShareASmallPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := recordsFixture(t)
	var name string
	if err := f.db.Pool().QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	cfg := f.db.Pool().Config().ConnConfig
	small, err := store.Open(ctx, fmt.Sprintf("postgres://%s@%s:%d/%s?pool_max_conns=4", cfg.User, cfg.Host, cfg.Port, name))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	errs := make(chan error, 6)
	for range cap(errs) {
		go func() {
			n, err := export.WriteRecords(ctx, small, io.Discard, f.project.ID, export.JSONL, export.RecordOptions{Which: export.WhichLabels})
			if err == nil && n != 3 {
				err = fmt.Errorf("%d records, want 3", n)
			}
			errs <- err
		}()
	}
	done := 0
	for range cap(errs) {
		switch err := <-errs; {
		case err == nil:
			done++
		case !errors.Is(err, store.ErrReadsBusy):
			t.Fatal(err)
		}
	}
	if done == 0 {
		t.Fatal("no export completed")
	}
	// With the slots free again, one more runs.
	if n, err := export.WriteRecords(ctx, small, io.Discard, f.project.ID, export.JSONL, export.RecordOptions{Which: export.WhichLabels}); err != nil || n != 3 {
		t.Fatalf("an export after the others: %d, %v", n, err)
	}
}

// TestExportRecordsManyBatches exports more records than travel from the
// database's streams to the encoder at once, so that batches are filled,
// handed over and reused: every record must still be its own item's, in
// order, with its own gold and answers.
func TestExportRecordsManyBatches(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t)
	ctx := context.Background()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	var raters []int64
	for i := range 2 {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("r%d@example.org", i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		raters = append(raters, id)
	}
	const n = 1500
	projectID := seedRecords(t, db, "batches", n, raters)
	// What the seed wrote, read back by plain queries: each item's gold and
	// each rater's answers by rubric item.
	type answers map[string]string
	gold := map[string]answers{}
	given := map[string]map[string]answers{}
	rows, err := db.Pool().Query(ctx, `
		SELECT i.source_id, g.rubric_item_key, g.value FROM gold_labels g JOIN items i ON i.id = g.item_id WHERE i.project_id = $1`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, key, value string
		if err := rows.Scan(&id, &key, &value); err != nil {
			t.Fatal(err)
		}
		if gold[id] == nil {
			gold[id] = answers{}
		}
		gold[id][key] = value
	}
	rows, err = db.Pool().Query(ctx, `
		SELECT i.source_id, u.email, l.rubric_item_key, l.value
		FROM labels l JOIN items i ON i.id = l.item_id JOIN raters r ON r.id = l.rater_id JOIN users u ON u.id = r.user_id
		WHERE i.project_id = $1`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, rater, key, value string
		if err := rows.Scan(&id, &rater, &key, &value); err != nil {
			t.Fatal(err)
		}
		if given[id] == nil {
			given[id] = map[string]answers{}
		}
		if given[id][rater] == nil {
			given[id][rater] = answers{}
		}
		given[id][rater][key] = value
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}

	var out bytes.Buffer
	got, err := export.WriteRecords(ctx, db, &out, projectID, export.JSONL, export.RecordOptions{Which: export.WhichGold})
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	if got != n || len(lines) != n {
		t.Fatalf("%d records in %d lines, want %d", got, len(lines), n)
	}
	for i, line := range lines {
		var rec struct {
			ID       string `json:"id"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			Meta    string  `json:"meta"` // its JSON text, for loaders that want one type
			Gold    answers `json:"gold"`
			Ratings []struct {
				Rater   string  `json:"rater"`
				Answers answers `json:"answers"`
			} `json:"ratings"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		id := fmt.Sprintf("item-%d", i+1)
		var meta struct{ N int }
		if err := json.Unmarshal([]byte(rec.Meta), &meta); err != nil {
			t.Fatalf("line %d: meta %q: %v", i+1, rec.Meta, err)
		}
		if rec.ID != id || meta.N != i+1 || len(rec.Messages) != 6 ||
			!strings.Contains(rec.Messages[5].Content, fmt.Sprintf(" of item %d:", i+1)) {
			t.Fatalf("line %d: id %q, meta n %d, %d messages, last %q: not item %d's", i+1, rec.ID, meta.N, len(rec.Messages), rec.Messages[len(rec.Messages)-1].Content, i+1)
		}
		if !reflect.DeepEqual(rec.Gold, gold[id]) {
			t.Fatalf("%s: gold %v, want %v", id, rec.Gold, gold[id])
		}
		if len(rec.Ratings) != len(raters) {
			t.Fatalf("%s: %d ratings, want %d", id, len(rec.Ratings), len(raters))
		}
		for _, r := range rec.Ratings {
			if !reflect.DeepEqual(r.Answers, given[id][r.Rater]) {
				t.Fatalf("%s: %s answered %v, want %v", id, r.Rater, r.Answers, given[id][r.Rater])
			}
		}
	}

	// The same records as Parquet, which hands its rows to the writer in
	// batches of its own: each row reads back as its
	// JSON line.
	var pq bytes.Buffer
	if got, err := export.WriteRecords(ctx, db, &pq, projectID, export.Parquet, export.RecordOptions{Which: export.WhichGold}); err != nil || got != n {
		t.Fatalf("parquet: %d records, %v", got, err)
	}
	p, err := db.FindProjectByID(ctx, projectID)
	if err != nil {
		t.Fatal(err)
	}
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	compareRecords(t, "parquet-go", parquetRecords(t, pq.Bytes(), def, false), jsonLines(t, out.Bytes()))

	// A destination that fails part-way stops the export with its error,
	// in either format, and leaves no connection behind.
	for _, f := range []export.Format{export.JSONL, export.Parquet} {
		broken := &failingWriter{room: 64 << 10}
		if _, err := export.WriteRecords(ctx, db, broken, projectID, f, export.RecordOptions{Which: export.WhichGold}); !errors.Is(err, errDiskFull) {
			t.Errorf("%s to a failing destination: %v, want %v", f, err, errDiskFull)
		}
	}
	if stat := db.Pool().Stat(); stat.AcquiredConns() != 0 {
		t.Errorf("%d connections still held after the failed exports", stat.AcquiredConns())
	}
}

var errDiskFull = errors.New("no space left on the destination")

// failingWriter takes room bytes and then fails every write.
type failingWriter struct{ room int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.room {
		n := w.room
		w.room = 0
		return n, errDiskFull
	}
	w.room -= len(p)
	return len(p), nil
}

// TestExportRecordsCarryTheSystem: each record's system is its item's
// meta under the project's system key, here "source": item-000 names
// "pilot", the others none (null).
func TestExportRecordsCarryTheSystem(t *testing.T) {
	t.Parallel()
	f, _ := recordsFixture(t)
	if _, err := f.db.Pool().Exec(context.Background(), `UPDATE projects SET system_key = 'source' WHERE id = $1`, f.project.ID); err != nil {
		t.Fatal(err)
	}
	want := map[any]any{"item-000": "pilot", "item-001": nil, "item-002": nil}
	for _, which := range []export.Which{export.WhichLabels, export.WhichGold} {
		out, n := exportRecords(t, f, export.JSONL, export.RecordOptions{Which: which})
		lines := jsonLines(t, out)
		if n == 0 || len(lines) != n {
			t.Fatalf("%s: %d records, %d lines", which, n, len(lines))
		}
		for _, line := range lines {
			if s, ok := line["system"]; !ok || s != want[line["id"]] {
				t.Errorf("%s: %v has system %#v (present %v), want %#v", which, line["id"], s, ok, want[line["id"]])
			}
		}
	}
}
