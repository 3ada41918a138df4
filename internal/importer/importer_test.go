package importer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

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
	ps, _ := db.ListAllProjects(ctx)
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
// per iteration: parse, check, COPY and commit. The figure is at
// least 20,000 conversations per second.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	db := dbtest.New(b)
	const n = 100_000
	file := conversations(n)
	b.SetBytes(int64(len(file)))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p := newProject(b, db, "coaching-conversation@2.0")
		b.StartTimer()
		res, err := importer.Import(ctx, db, p, bytes.NewReader(file), importer.Options{})
		if err != nil || res.Inserted != n {
			b.Fatalf("import: %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "conversations/s")
}
