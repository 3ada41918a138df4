package store_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// seedRecords makes a likert project of n items, each a dialogue of six
// messages of about 200 characters (some of them needing JSON escapes),
// answered by every rater and with gold on every rubric item, written by
// PostgreSQL itself so that 100,000 items take seconds to make.
func seedRecords(b testing.TB, db *store.DB, name string, n int, raters []int64) int64 {
	b.Helper()
	ctx := context.Background()
	var rvID int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM rubric_versions WHERE key = 'empathetic-dialogue' AND version = '2'`).Scan(&rvID); err != nil {
		b.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: name, RubricVersionID: rvID, Overlap: len(raters), Lease: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	steps := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO items (project_id, source_id, kind, messages, meta, turns, sha256)
		  SELECT $1, 'item-' || g, 'conversation',
		         (SELECT jsonb_agg(jsonb_build_object('role', CASE WHEN m % 2 = 0 THEN 'user' ELSE 'assistant' END,
		                 'content', 'Message ' || m || ' of item ' || g || ': I feel so tired of everything lately, and my “job” is not going well.'
		                            || chr(10) || 'It sounds like you are carrying a lot right now. What happened when you told them? I am here to listen.'))
		          FROM generate_series(0, 5) m),
		         jsonb_build_object('source', 'bench', 'n', g), 3, lpad(to_hex(g), 64, '0')
		  FROM generate_series(1, $2::int) g`, []any{p.ID, n}},
		{`INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, active_ms)
		  SELECT $1, i.id, r, $2, 1000 FROM items i CROSS JOIN unnest($3::bigint[]) r WHERE i.project_id = $1`,
			[]any{p.ID, rvID, raters}},
		{`INSERT INTO labels (answer_set_id, item_id, rater_id, rubric_version_id, rubric_item_key, value)
		  SELECT s.id, s.item_id, s.rater_id, s.rubric_version_id, k.key, ((s.id + k.position) % 5 + 1)::text
		  FROM answer_sets s CROSS JOIN rubric_items k WHERE s.project_id = $1 AND k.rubric_version_id = $2`, []any{p.ID, rvID}},
		{`INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
		  SELECT i.id, $2, k.key, ((i.id + k.position) % 5 + 1)::text, 'automatic'
		  FROM items i CROSS JOIN rubric_items k WHERE i.project_id = $1 AND k.rubric_version_id = $2`, []any{p.ID, rvID}},
		// As autovacuum leaves a settled table: the visibility map set, so
		// that labels are read from their covering index alone.
		{`VACUUM ANALYZE items, answer_sets, labels, gold_labels, item_gold`, nil},
	}
	for _, st := range steps {
		if _, err := db.Pool().Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	return p.ID
}

// recordsDB makes a database with the built-in rubrics and three
// annotators for seedRecords, and returns their raters.
func recordsDB(tb testing.TB) (*store.DB, []int64) {
	tb.Helper()
	db := dbtest.New(tb)
	ctx := context.Background()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		tb.Fatal(err)
	}
	var raters []int64
	for i := range 3 {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("r%d@example.org", i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			tb.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			tb.Fatal(err)
		}
		raters = append(raters, id)
	}
	return db, raters
}

// BenchmarkExportRecords streams the dataset export of 50,000 and of
// 100,000 items (dialogues of about 1.2 kB, three people's answers and
// gold on five rubric items) to io.Discard, as JSON Lines and as Parquet.
// It reports items a second, bytes allocated per item and the peak live
// heap, beside PostgreSQL's own COPY of the items with their dialogue
// (the export's heaviest stream) to io.Discard in the same run, as a
// ratio: the export against the fastest the database hands over the
// dialogues alone. The peak must not grow with the items. Run with
//
//	go test -run '^$' -bench ExportRecords -benchtime 3x ./internal/store
func BenchmarkExportRecords(b *testing.B) {
	db, raters := recordsDB(b)
	ctx := context.Background()
	sizes := []struct {
		name  string
		items int
	}{{"items=50k", 50_000}, {"items=100k", 100_000}}
	projects := make([]int64, len(sizes))
	for i, s := range sizes {
		projects[i] = seedRecords(b, db, s.name, s.items, raters)
	}
	copyItems := func(projectID int64) time.Duration {
		conn, err := db.Pool().Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Release()
		start := time.Now()
		tag, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, fmt.Sprintf(`COPY (
			SELECT i.id, i.source_id, i.messages::text, i.meta::text FROM items i WHERE i.project_id = %d ORDER BY i.id) TO STDOUT`, projectID))
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if tag.RowsAffected() == 0 {
			b.Fatal("COPY sent no rows")
		}
		return d
	}
	for _, f := range []export.Format{export.JSONL, export.Parquet} {
		peaks := make([]uint64, len(sizes))
		for i, s := range sizes {
			b.Run(fmt.Sprintf("%s/%s", f, s.name), func(b *testing.B) {
				var items int
				var elapsed, copyElapsed time.Duration
				var peak, allocated uint64
				for b.Loop() {
					copyElapsed += copyItems(projects[i])
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					stop := peakHeap()
					start := time.Now()
					n, err := export.WriteRecords(ctx, db, io.Discard, projects[i], f, export.RecordOptions{Which: export.WhichGold, Soft: true})
					if err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					peak = max(peak, stop())
					runtime.ReadMemStats(&after)
					allocated += after.TotalAlloc - before.TotalAlloc
					items += n
					if n != s.items {
						b.Fatalf("exported %d items, want %d", n, s.items)
					}
				}
				rate := float64(items) / elapsed.Seconds()
				copyRate := float64(items) / copyElapsed.Seconds()
				b.ReportMetric(rate, "items/s")
				b.ReportMetric(copyRate, "copy-items/s")
				b.ReportMetric(rate/copyRate, "ratio-to-copy")
				b.ReportMetric(float64(allocated)/float64(items), "B-alloc/item")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
				peaks[i] = peak
			})
		}
		// Flat memory: twice the items, nowhere near twice the peak heap.
		if peaks[0] > 0 && float64(peaks[1]) > 1.5*float64(peaks[0])+8<<20 {
			b.Errorf("%s: peak heap %d MB for 100k items against %d MB for 50k: memory grows with the export", f, peaks[1]>>20, peaks[0]>>20)
		}
	}
}
