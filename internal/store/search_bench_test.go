package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// BenchmarkSearchItems searches a project of 1,000,000 items, each a
// two-turn dialogue of words drawn from a vocabulary of 200 (written by
// PostgreSQL itself), with meta {"lang": en|de|fr|es} and automatic gold on
// every fifth item: a text query that half a percent of the items answer
// ("lost dog") plus two filters (meta lang=en and gold open), a page of 50;
// the same on the page after; and a phrase and a word met in a fifth of the
// items. The target is a p95 under 100 ms. The reference, in the same run,
// is counting the project's items from its (project, id) index alone;
// each case reports its p95 beside it as a ratio. Run with
//
//	go test -run '^$' -bench SearchItems -benchtime 200x ./internal/store
func BenchmarkSearchItems(b *testing.B) {
	db := dbtest.New(b)
	ctx := context.Background()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		b.Fatal(err)
	}
	var rvID int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM rubric_versions WHERE key = 'empathetic-dialogue' AND version = '2'`).Scan(&rvID); err != nil {
		b.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "search-bench", RubricVersionID: rvID, Overlap: 3, Lease: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	const items = 1_000_000
	start := time.Now()
	// Every 200th item speaks of a lost dog, all of them in English; the other words are drawn
	// from a vocabulary of 200 made-up words (w0 … w199), eight per turn.
	steps := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO items (project_id, source_id, kind, messages, meta, turns, sha256)
		 SELECT $1, 'item-' || g, 'reply',
		        jsonb_build_array(
		          jsonb_build_object('role', 'user', 'content',
		            CASE WHEN g % 200 = 4 THEN 'I lost my dog near the river ' ELSE '' END ||
		            (SELECT string_agg('w' || (abs(hashint8(g * 16 + k)) % 200), ' ') FROM generate_series(1, 8) k)),
		          jsonb_build_object('role', 'assistant', 'content',
		            (SELECT string_agg('w' || (abs(hashint8(g * 16 + 8 + k)) % 200), ' ') FROM generate_series(1, 8) k))),
		        jsonb_build_object('lang', (ARRAY['en', 'de', 'fr', 'es'])[1 + g % 4]), 1, lpad(to_hex(g), 64, '0')
		 FROM generate_series(1, $2::int) g`, []any{p.ID, items}},
		{`INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
		 SELECT id, $2, 'emotion', '3', 'automatic' FROM items WHERE project_id = $1 AND id % 5 = 0`, []any{p.ID, rvID}},
	}
	for _, st := range steps {
		if _, err := db.Pool().Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	// The indexing job's work, as an import would queue it.
	if _, err := db.IndexItems(ctx, p.ID); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE items, gold_labels, item_search`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d items in %s", items, time.Since(start).Round(time.Second))

	p95 := func(ts []time.Duration) time.Duration {
		s := slices.Clone(ts)
		slices.Sort(s)
		return s[(len(s)*95+99)/100-1]
	}
	var ref time.Duration
	b.Run("reference-count", func(b *testing.B) {
		var ts []time.Duration
		for b.Loop() {
			t0 := time.Now()
			var n int
			if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM items WHERE project_id = $1`, p.ID).Scan(&n); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(t0))
			if n != items {
				b.Fatalf("counted %d items", n)
			}
		}
		ref = p95(ts)
		b.ReportMetric(float64(ref.Microseconds())/1000, "p95-ms")
	})
	filters := store.ItemSearch{Meta: []store.MetaMatch{{Key: "lang", Value: "en"}}, Gold: store.GoldOpen, Limit: 50}
	first, err := db.SearchItems(ctx, p.ID, func() store.ItemSearch { s := filters; s.Text = "lost dog"; return s }())
	if err != nil || len(first.Items) != 50 || first.Next == "" {
		b.Fatalf("first page: %d items, next %q, %v", len(first.Items), first.Next, err)
	}
	for _, c := range []struct {
		name, text, cursor string
		min                int
	}{
		{"text+2-filters", "lost dog", "", 50},
		{"text+2-filters-next-page", "lost dog", first.Next, 50},
		{"phrase+2-filters", `"lost my dog"`, "", 50},
		{"common-word+2-filters", "w17", "", 50},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := filters
			s.Text, s.Cursor = c.text, c.cursor
			var ts []time.Duration
			for b.Loop() {
				t0 := time.Now()
				page, err := db.SearchItems(ctx, p.ID, s)
				ts = append(ts, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Items) < c.min {
					b.Fatalf("%d items, want %d", len(page.Items), c.min)
				}
			}
			b.ReportMetric(float64(p95(ts).Microseconds())/1000, "p95-ms")
			if ref > 0 {
				b.ReportMetric(float64(p95(ts))/float64(ref), "x-count")
			}
			b.Logf("%s: p95 %s over %d searches (reference count p95 %s); load average %s",
				c.name, p95(ts).Round(100*time.Microsecond), len(ts), ref.Round(100*time.Microsecond), loadAverage())
		})
	}
}
