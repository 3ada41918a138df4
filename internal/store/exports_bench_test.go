package store_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// seedLabels makes a likert project of items × raters answer sets, five
// labels each, written by PostgreSQL itself (INSERT … SELECT
// generate_series) so that a million labels take seconds to make.
func seedLabels(b testing.TB, db *store.DB, name string, items int, raters []int64) int64 {
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
		{`INSERT INTO items (project_id, source_id, kind, messages, turns, sha256)
		  SELECT $1, 'item-' || g, 'reply', '[{"role":"user","content":"I feel low."},{"role":"assistant","content":"That sounds hard."}]', 1,
		         lpad(to_hex(g), 64, '0')
		  FROM generate_series(1, $2::int) g`, []any{p.ID, items}},
		{`INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, active_ms)
		  SELECT $1, i.id, r, $2, 1000 + i.id % 7000 FROM items i CROSS JOIN unnest($3::bigint[]) r WHERE i.project_id = $1`,
			[]any{p.ID, rvID, raters}},
		{`INSERT INTO labels (answer_set_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale)
		  SELECT s.id, s.item_id, s.rater_id, s.rubric_version_id, k.key, ((s.id + k.position) % 5 + 1)::text,
		         CASE WHEN (s.id + k.position) % 4 = 0 THEN 'warm, but "generic"' || chr(10) || 'and short' ELSE '' END
		  FROM answer_sets s CROSS JOIN rubric_items k WHERE s.project_id = $1 AND k.rubric_version_id = $2`, []any{p.ID, rvID}},
		{`ANALYZE items, answer_sets, labels`, nil},
	}
	for _, st := range steps {
		if _, err := db.Pool().Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	return p.ID
}

// peakHeap samples the live heap until stop is called, and returns the
// largest sample.
func peakHeap() (stop func() uint64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkExportLabels exports the labels of projects of 1,000, 10,000
// and 100,000 items (20 labels an item) as CSV to io.Discard, beside a
// project of 100,000 items that is never read, and in the same run COPYs
// the same SELECT to the same place, PostgreSQL's own fastest way out. It
// reports labels per second for both, their ratio and the time per label:
// a read that cost what the database holds would make the small project's
// time per label hundreds of times the large one's. It also reports the
// peak live heap, which must not grow with the rows (the export streams).
// Run with
//
//	go test -run '^$' -bench ExportLabels -benchtime 3x ./internal/store
func BenchmarkExportLabels(b *testing.B) {
	db := dbtest.New(b)
	ctx := context.Background()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		b.Fatal(err)
	}
	var raters []int64
	for i := range 4 {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("r%d@example.org", i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			b.Fatal(err)
		}
		raters = append(raters, id)
	}
	// 5 labels per answer set, 4 raters per item: 20 labels an item.
	sizes := []struct {
		name  string
		items int
	}{{"items=1k", 1_000}, {"items=10k", 10_000}, {"items=100k", 100_000}}
	projects := make([]int64, len(sizes))
	for i, s := range sizes {
		projects[i] = seedLabels(b, db, s.name, s.items, raters)
	}
	seedLabels(b, db, "the other project", 100_000, raters)
	peaks := make([]uint64, len(sizes))
	for i, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			var rows int
			var exported, copied time.Duration
			var peak uint64
			copySQL := "COPY (" + strings.ReplaceAll(store.ExportLabelsQuery, "$1", strconv.FormatInt(projects[i], 10)) + ") TO STDOUT WITH (FORMAT csv)"
			for b.Loop() {
				runtime.GC()
				stop := peakHeap()
				start := time.Now()
				w, _ := export.NewLabelWriter(io.Discard, export.CSV)
				n, err := db.ExportLabels(ctx, projects[i], w.Write)
				if err != nil || w.Close() != nil {
					b.Fatal(err)
				}
				exported += time.Since(start)
				peak = max(peak, stop())
				if n != s.items*20 {
					b.Fatalf("exported %d rows, want %d", n, s.items*20)
				}
				rows += n

				start = time.Now()
				conn, err := db.Pool().Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				tag, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, copySQL)
				conn.Release()
				if err != nil || tag.RowsAffected() != int64(n) {
					b.Fatalf("copy: %d rows, %v", tag.RowsAffected(), err)
				}
				copied += time.Since(start)
			}
			rate, copyRate := float64(rows)/exported.Seconds(), float64(rows)/copied.Seconds()
			b.ReportMetric(rate, "labels/s")
			b.ReportMetric(copyRate, "copy-labels/s")
			b.ReportMetric(rate/copyRate, "ratio-to-copy")
			b.ReportMetric(float64(exported.Nanoseconds())/float64(rows), "ns/label")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			peaks[i] = peak
		})
	}
	// Flat memory: a hundred times the rows, nowhere near the peak heap.
	if peaks[0] > 0 && float64(peaks[2]) > 1.5*float64(peaks[0])+4<<20 {
		b.Errorf("peak heap %d MB for 2M labels against %d MB for 20k: memory grows with the export", peaks[2]>>20, peaks[0]>>20)
	}
}
