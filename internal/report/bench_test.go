package report_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
)

// seedCriteria makes a criteria project of items × (people + judges)
// answer sets, twelve labels each, written by PostgreSQL itself (INSERT …
// SELECT generate_series). Each item has a true answer per criterion —
// mostly YES, as on most real criteria — which every rater gives unless a
// hash of the answer set says otherwise: people 12% of the time, judges
// 20%. On a superuser connection the foreign-key and trigger checks are
// skipped while seeding (the rows are consistent by construction), which
// makes six million labels take half a minute instead of two.
func seedCriteria(b *testing.B, db *store.DB, name string, items, people, judges int) (*attune.Project, time.Duration) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		b.Fatal(err)
	}
	var rvID int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM rubric_versions WHERE key = 'coaching-conversation' AND version = '2.0'`).Scan(&rvID); err != nil {
		b.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: name, RubricVersionID: rvID, Overlap: people, Lease: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var raters, judgeRaters []int64
	for i := range people {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("%s-a%d@example.org", name, i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			b.Fatal(err)
		}
		raters = append(raters, id)
	}
	for i := range judges {
		j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: fmt.Sprintf("%s-judge-%d", name, i), Provider: "openai", Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		judgeRaters = append(judgeRaters, j.RaterID)
	}
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var super bool
	if err := tx.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		b.Fatal(err)
	}
	// As a superuser the seed runs without triggers and foreign-key
	// checks, so it writes itself what a trigger would fill in: the
	// project of each label.
	if super {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			b.Fatal(err)
		}
	}
	steps := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO items (project_id, source_id, kind, messages, turns, sha256)
		  SELECT $1, 'item-' || g, 'conversation', '[{"role":"user","content":"I feel low."},{"role":"assistant","content":"That sounds hard."}]', 4,
		         lpad(to_hex(g), 64, '0')
		  FROM generate_series(1, $2::int) g`, []any{p.ID, items}},
		{`INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, active_ms)
		  SELECT $1, i.id, r, $2, 60000 FROM items i CROSS JOIN unnest($3::bigint[]) r WHERE i.project_id = $1`,
			[]any{p.ID, rvID, append(append([]int64{}, raters...), judgeRaters...)}},
		{`INSERT INTO labels (answer_set_id, item_id, project_id, rater_id, rubric_version_id, rubric_item_key, value)
		  SELECT s.id, s.item_id, s.project_id, s.rater_id, s.rubric_version_id, k.key,
		         CASE WHEN abs(hashint8(s.id * 131 + k.position)) % 100 < CASE WHEN s.rater_id = ANY ($3) THEN 20 ELSE 12 END
		              THEN v.other ELSE v.truth END
		  FROM answer_sets s
		  CROSS JOIN rubric_items k
		  CROSS JOIN LATERAL (SELECT
		      CASE WHEN t < 82 THEN 'YES' WHEN t < 94 OR k.key IN ('CQ8', 'CP2') THEN 'NO' ELSE 'NA' END AS truth,
		      CASE WHEN o < 60 THEN 'YES' WHEN o < 90 OR k.key IN ('CQ8', 'CP2') THEN 'NO' ELSE 'NA' END AS other
		      FROM (SELECT abs(hashint8(s.item_id * 7919 + k.position)) % 100 AS t,
		                   abs(hashint8(s.id * 104729 + k.position)) % 100 AS o) h) v
		  WHERE s.project_id = $1 AND k.rubric_version_id = $2`, []any{p.ID, rvID, judgeRaters}},
	}
	for _, st := range steps {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	// As autovacuum would have by the time anyone reads a report; and the
	// checkpoint that writing six million rows calls for is done now, not
	// while a report is timed (it needs a superuser, and is skipped
	// without one).
	if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE items, answer_sets, labels`); err != nil {
		b.Fatal(err)
	}
	if super {
		if _, err := db.Pool().Exec(ctx, `CHECKPOINT`); err != nil {
			b.Fatal(err)
		}
	}
	return p, time.Since(start)
}

// peakHeap samples the live heap until stop is called and returns the
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

// BenchmarkReport builds the full report — every figure with its
// interval (the default 1,000 replicates), every pair, the judges with
// their alt-tests and the engine's outputs — of 100,000 items × 3 annotators × 12 criteria plus 2 judges:
// six million labels. The target is under three seconds. The same report
// over 20,000 items shows that the live heap does not grow with the
// labels. Run with
//
//	go test -run '^$' -bench Report -benchtime 3x ./internal/report
func BenchmarkReport(b *testing.B) {
	db := dbtest.New(b)
	ctx := context.Background()
	sizes := []int{20_000, 100_000}
	projects := make([]*attune.Project, len(sizes))
	for i, n := range sizes {
		p, seeded := seedCriteria(b, db, fmt.Sprintf("items-%d", n), n, 3, 2)
		projects[i] = p
		b.Logf("seeded %d items, %d answer sets, %d labels in %s", n, n*5, n*60, seeded.Round(time.Second))
	}
	for i, n := range sizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			opts := report.Options{Bootstrap: report.DefaultBootstrap, Alt: report.AltOptions{Epsilon: report.DefaultEpsilon}}
			var worst time.Duration
			var peak uint64
			for b.Loop() {
				runtime.GC()
				stop := peakHeap()
				start := time.Now()
				r, err := report.Build(ctx, db, projects[i], opts)
				if err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(start))
				peak = max(peak, stop())
				if r.RubricItems[0].Items != n || r.Engine.Scored != 5*n || len(r.RubricItems[0].Pairs) != 10 {
					b.Fatalf("report over %d items, %d answer sets scored, %d pairs", r.RubricItems[0].Items, r.Engine.Scored, len(r.RubricItems[0].Pairs))
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.Logf("%d labels: slowest report %s (target for 6,000,000: under 3s); peak live heap %.1f MiB",
				60*n, worst.Round(time.Millisecond), float64(peak)/(1<<20))
		})
	}
}
