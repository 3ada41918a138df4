package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func newProject(t testing.TB, db *store.DB, ref string) *attune.Project {
	t.Helper()
	ctx := context.Background()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := rubric.ParseRef(ref)
	_, rv, err := db.FindRubric(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: fmt.Sprintf("p%d", time.Now().UnixNano()), RubricVersionID: rv.ID, Overlap: 3, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportChecksAgainstTheRubric(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	p := newProject(t, db, "empathetic-understanding@1")
	// A last-reply rubric needs a dialogue that ends with the assistant.
	file := `{"id":"a","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}]}
{"id":"b","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"}]}
`
	_, err := importer.Import(ctx, db, p, strings.NewReader(file), importer.Options{})
	var le *attune.LineErrors
	if !errors.As(err, &le) || len(le.Errors) != 1 || le.Errors[0].Line != 2 || !strings.Contains(le.Errors[0].Message, "ends with a user message") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, attune.ErrInvalid) {
		t.Fatal("line errors do not match ErrInvalid")
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Items != 0 {
		t.Fatalf("%d items stored from a refused file", ps[0].Items)
	}
	// The same dialogues in CSV import under the same rubric.
	res, err := importer.Import(ctx, db, p, strings.NewReader("id,user,response\nc1,\"I feel, honestly, tired\",That sounds draining.\n"), importer.Options{})
	if err != nil || res.Inserted != 1 {
		t.Fatalf("CSV import: %+v, %v", res, err)
	}
	it, err := db.FindItem(ctx, p.ID, 1)
	if err == nil && (it.Messages[0].Content != "I feel, honestly, tired" || it.Kind != "reply") {
		t.Fatalf("stored item = %+v", it)
	}
}

// TestStoredDialoguesReadAsJSONBPrintsThem imports dialogues whose texts
// need every kind of escape, by each of the import's paths (into an empty
// project, beside existing items, replacing a changed item), and checks
// that each is stored exactly as PostgreSQL's jsonb prints it: the layout
// the dataset export copies without decoding, and that of the items the
// column's change from jsonb converted. Their texts read back unchanged.
func TestStoredDialoguesReadAsJSONBPrintsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	p := newProject(t, db, "empathetic-dialogue@2")
	texts := []string{ // as written in the file, escapes and all
		`he said \"no\" \\ then left`,
		`line\none\r\n\ttab \b\f \u0001\u001f\u007f`,
		`café ☕ 😢 \u2028 \u2029 <b>&amp;</b> \/ \u00e9`,
		`plain`,
	}
	line := func(id, text string) string {
		return `{"id":"` + id + `","messages":[{"role":"user","content":"` + text + `"},{"role":"assistant","content":"I hear you."}]}` + "\n"
	}
	var first, second strings.Builder
	for i, text := range texts {
		first.WriteString(line(fmt.Sprintf("a%d", i), text))
		second.WriteString(line(fmt.Sprintf("b%d", i), text))
	}
	second.WriteString(line("a3", texts[1])) // a changed item nobody labelled
	for i, file := range []string{first.String(), second.String()} {
		if _, err := importer.Import(ctx, db, p, strings.NewReader(file), importer.Options{Update: true}); err != nil {
			t.Fatalf("import %d: %v", i+1, err)
		}
	}
	var items, unlike int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE messages::text <> messages::jsonb::text)
		FROM items WHERE project_id = $1`, p.ID).Scan(&items, &unlike); err != nil {
		t.Fatal(err)
	}
	if items != 2*len(texts) || unlike != 0 {
		t.Fatalf("%d items, %d of them not stored as jsonb prints them", items, unlike)
	}
	rows, err := db.Pool().Query(ctx, `SELECT source_id, messages::text FROM items WHERE project_id = $1 ORDER BY id`, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var v [2]string
		return v, r.Scan(&v[0], &v[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range stored {
		want := texts[v[0][1]-'0'] // a0…b3: the text of its index
		if v[0] == "a3" {
			want = texts[1]
		}
		var msgs []struct{ Role, Content string }
		if err := json.Unmarshal([]byte(v[1]), &msgs); err != nil {
			t.Fatalf("%s: %v", v[0], err)
		}
		var decoded string
		if err := json.Unmarshal([]byte(`"`+want+`"`), &decoded); err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[0].Content != decoded {
			t.Errorf("%s reads back as %q, want %q", v[0], msgs[0].Content, decoded)
		}
	}
}

// conversations writes n deterministic conversations of 6–10 messages of
// about 200 characters, the size of real counselling dialogues.
func conversations(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("I feel so tired lately and work keeps piling up while my family expects me to be fine that sounds exhausting what feels heaviest right now")
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"id":"conv-%06d","messages":[`, i)
		m := 6 + r.IntN(5)
		for j := range m {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			var text strings.Builder
			for text.Len() < 200 {
				text.WriteString(words[r.IntN(len(words))])
				text.WriteByte(' ')
			}
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"role":%q,"content":%q}`, role, strings.TrimSpace(text.String()))
		}
		fmt.Fprintf(&b, `],"meta":{"source":"bench","n":%d}}`+"\n", i)
	}
	return b.Bytes()
}

// BenchmarkImport imports a 100,000-line JSONL file into a fresh project
// per iteration (parse, check, COPY and commit), and beside it, in the same
// run, COPYs the same lines into a one-column jsonb table: the least
// PostgreSQL can do with the file. There are two such references. The
// issue's is the plain one, a jsonb column as the server makes it (pglz
// compression by default); the strict one compresses with lz4, as items'
// messages are (migration 00003), so that choice of ours does not flatter
// the ratio. It reports the rates and both ratios; the goal is an import
// at 0.9 of the plain COPY or better. Run with
//
//	go test -run '^$' -bench Import -benchtime 3x ./internal/importer
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	db := dbtest.New(b)
	const n = 100_000
	file := conversations(n)
	lines := bytes.Split(bytes.TrimSuffix(file, []byte("\n")), []byte("\n"))
	if len(lines) != n {
		b.Fatalf("%d lines, want %d", len(lines), n)
	}
	var imported, copied, copiedLZ4 time.Duration
	for i := 0; b.Loop(); i++ {
		p := newProject(b, db, "coaching-conversation@2.0")
		start := time.Now()
		res, err := importer.Import(ctx, db, p, bytes.NewReader(file), importer.Options{})
		imported += time.Since(start)
		if err != nil || res.Inserted != n {
			b.Fatalf("import: %+v, %v", res, err)
		}
		copied += copyLines(b, db, fmt.Sprintf("copy_reference_%d", i), "", lines)
		copiedLZ4 += copyLines(b, db, fmt.Sprintf("copy_reference_lz4_%d", i), "lz4", lines)
	}
	importRate := float64(n*b.N) / imported.Seconds()
	copyRate := float64(n*b.N) / copied.Seconds()
	lz4Rate := float64(n*b.N) / copiedLZ4.Seconds()
	b.ReportMetric(importRate, "conversations/s")
	b.ReportMetric(copyRate, "copy-lines/s")
	b.ReportMetric(lz4Rate, "copy-lz4-lines/s")
	b.ReportMetric(importRate/copyRate, "ratio-to-copy")
	b.ReportMetric(importRate/lz4Rate, "ratio-to-copy-lz4")
}

// copyLines times a reference: the lines COPYed as they are into a fresh
// jsonb table (with the column compression given, "" for the server's
// default) in one transaction that commits as the import's does
// (without waiting for the flush), and the table dropped afterwards.
func copyLines(b *testing.B, db *store.DB, table, compression string, lines [][]byte) time.Duration {
	b.Helper()
	ctx := context.Background()
	name := pgx.Identifier{table}
	column := "line jsonb NOT NULL"
	if compression != "" {
		column = "line jsonb COMPRESSION " + compression + " NOT NULL"
	}
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE `+name.Sanitize()+` (`+column+`)`); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if _, err := db.Pool().Exec(ctx, `DROP TABLE `+name.Sanitize()); err != nil {
			b.Error(err)
		}
	}()
	start := time.Now()
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		b.Fatal(err)
	}
	row := make([]any, 1)
	i := 0
	copied, err := tx.CopyFrom(ctx, name, []string{"line"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(lines) {
			return nil, nil
		}
		row[0] = lines[i]
		i++
		return row, nil
	}))
	if err != nil || int(copied) != len(lines) {
		b.Fatalf("copy: %d rows, %v", copied, err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// TestImportRefusesDeepFieldsBesideTheDialogue imports a file whose second
// line carries a field beside the dialogue nested 9,990 levels deep: the
// import names the line, the field and the limit, and stores neither line.
func TestImportRefusesDeepFieldsBesideTheDialogue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	p := newProject(t, db, "empathetic-understanding@1")
	ok := `{"id":"a","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}]}`
	deep := `{"id":"b","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}],"x0":` +
		strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`
	_, err := importer.Import(ctx, db, p, strings.NewReader(ok+"\n"+deep+"\n"), importer.Options{})
	var le *attune.LineErrors
	if !errors.As(err, &le) || len(le.Errors) != 1 {
		t.Fatalf("err = %v, want one line error", err)
	}
	if e := le.Errors[0]; e.Line != 2 || e.Field != "x0" || e.Message != "nested more than 100 levels deep" {
		t.Fatalf("error = %+v", e)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM items WHERE project_id = $1`, p.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d items stored from a refused file", n)
	}
}
