package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
)

// benchProject is a criteria project seeded for a benchmark.
type benchProject struct {
	project *attune.Project
	people  []int64 // rater ids
	judges  []int64 // rater ids
	names   []string
}

// seedCriteriaBench makes a coaching-rubric project of items × (people +
// judges) answer sets, twelve labels each, and gold answers (the first
// person's) on every goldEvery-th item, written by PostgreSQL itself.
// Each item has a true answer per criterion, mostly YES; people depart
// from it 12% of the time, judges 20%. On a superuser connection the
// foreign-key and trigger checks are skipped while seeding (the rows are
// consistent by construction).
func seedCriteriaBench(b *testing.B, db *store.DB, name string, items, people, judges, goldEvery int) benchProject {
	b.Helper()
	ctx := context.Background()
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
	bp := benchProject{project: p}
	for i := range people {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("%s-a%d@example.org", name, i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			b.Fatal(err)
		}
		bp.people = append(bp.people, id)
	}
	for i := range judges {
		j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: fmt.Sprintf("%s-judge-%d", name, i), Provider: "openai", Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		bp.judges = append(bp.judges, j.RaterID)
		bp.names = append(bp.names, j.Name)
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
			[]any{p.ID, rvID, append(append([]int64{}, bp.people...), bp.judges...)}},
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
		  WHERE s.project_id = $1 AND k.rubric_version_id = $2`, []any{p.ID, rvID, bp.judges}},
		{`INSERT INTO gold_labels (item_id, project_id, rubric_version_id, rubric_item_key, value, method)
		  SELECT l.item_id, l.project_id, l.rubric_version_id, l.rubric_item_key, l.value, 'automatic'
		  FROM labels l JOIN items i ON i.id = l.item_id
		  WHERE i.project_id = $1 AND l.rater_id = $2 AND substr(i.source_id, 6)::int % $3 = 0`,
			[]any{p.ID, bp.people[0], goldEvery}},
	}
	for _, st := range steps {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	// As autovacuum would have by the time anyone reads the items; the
	// visibility map lets the drill-down read labels from its index alone.
	if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE items, answer_sets, labels, gold_labels`); err != nil {
		b.Fatal(err)
	}
	if super {
		if _, err := db.Pool().Exec(ctx, `CHECKPOINT`); err != nil {
			b.Fatal(err)
		}
	}
	return bp
}

// BenchmarkDrillItems reads a page of the drill-down on 100,000 items × 3
// people × 12 criteria + a judge (4.8 million labels, gold on every 50th
// item): where the judge and the people differ (dense: the page fills at
// once), where it and the gold differ (sparse), its consensus, the last
// page, and a confusion cell no item falls in, which looks through a whole
// window of store.DrillScan items. The reference, measured in the same
// run, is one pass over every label of the rubric item in the project —
// what a query without the keyset and the window reads per page; each
// case reports its time as a share of it ("x-full-pass"). Run with
//
//	go test -run '^$' -bench DrillItems -benchtime 20x ./internal/store
func BenchmarkDrillItems(b *testing.B) {
	db := dbtest.New(b)
	ctx := context.Background()
	start := time.Now()
	bp := seedCriteriaBench(b, db, "drill", 100_000, 3, 1, 50)
	b.Logf("seeded 100,000 items, 4,800,000 labels in %s", time.Since(start).Round(time.Second))
	p, judge := bp.project, bp.judges[0]
	var last, window int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 ORDER BY id DESC OFFSET 300 LIMIT 1`, p.ID).Scan(&last); err != nil {
		b.Fatal(err)
	}
	// The last item a page looks through from the start.
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 ORDER BY id OFFSET $2 LIMIT 1`, p.ID, store.DrillScan-1).Scan(&window); err != nil {
		b.Fatal(err)
	}

	fullPass := func() {
		var n int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels l JOIN items i ON i.id = l.item_id
			WHERE i.project_id = $1 AND l.rubric_version_id = $2 AND l.rubric_item_key = 'CQ1' AND l.value <> 'ERROR'`,
			p.ID, p.RubricVersionID).Scan(&n); err != nil || n != 400_000 {
			b.Fatalf("full pass: %d labels, %v", n, err)
		}
	}
	// The reference: the median of a few passes.
	var ref time.Duration
	{
		var ts []time.Duration
		for range 5 {
			t0 := time.Now()
			fullPass()
			ts = append(ts, time.Since(t0))
		}
		ref = median(ts)
	}
	b.Logf("reference: a full pass over CQ1's 400,000 labels takes %s; load average %s", ref.Round(time.Millisecond), loadAverage())

	for _, c := range []struct {
		name     string
		f        store.DrillFilter
		minItems int
	}{
		{"judge-vs-people", store.DrillFilter{Key: "CQ1", A: judge}, 50},
		{"judge-vs-people-last-page", store.DrillFilter{Key: "CQ1", A: judge, After: last}, 1},
		{"judge-vs-gold", store.DrillFilter{Key: "CQ1", A: judge, Gold: true}, 1},
		{"judge-vs-consensus", store.DrillFilter{Key: "CQ1", A: judge, Consensus: true}, 50},
		{"people-among-themselves", store.DrillFilter{Key: "CQ1"}, 50},
		{"empty-cell-whole-window", store.DrillFilter{Key: "CQ8", A: judge, ValueA: "NA", ValueB: "YES"}, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.f.Limit = 50
			var worst time.Duration
			for b.Loop() {
				t0 := time.Now()
				page, err := db.DrillItems(ctx, p.ID, c.f)
				if err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(t0))
				if len(page.Items) < c.minItems {
					b.Fatalf("%d items, want at least %d", len(page.Items), c.minItems)
				}
				if c.minItems == 0 && (len(page.Items) != 0 || page.Next != window) {
					b.Fatalf("%d items, next after %d: want none, next after the %dth item (%d)", len(page.Items), page.Next, store.DrillScan, window)
				}
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(per)/float64(ref), "x-full-pass")
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
		})
	}
}

// BenchmarkExperimentPage is the experiment page's work for 5 variants ×
// 2,000 gold items × 12 criteria (in a project of 10,000 items with three
// people each): reading the input (store.ExperimentInput, sub-benchmark
// read), computing the experiment with the report's 1,000 paired
// replicates (compute, the reference measured in the same run) and both
// (page; the target is under a second, "x-target" its share of it). read
// reports its time as a share of compute's ("x-compute"); compute, read
// and page also report the process's CPU time per run (PostgreSQL's work
// is not in it), which the machine's other work does not inflate. page-again is a view of the same page again: read,
// then the result found in experiment.Cache ("x-page" a share of page's
// time). Run with
//
//	go test -run '^$' -bench ExperimentPage -benchtime 5x ./internal/store
func BenchmarkExperimentPage(b *testing.B) {
	db := dbtest.New(b)
	ctx := context.Background()
	start := time.Now()
	bp := seedCriteriaBench(b, db, "experiment", 10_000, 3, 5, 5)
	b.Logf("seeded 10,000 items × 8 raters, gold on 2,000, in %s", time.Since(start).Round(time.Second))
	def, err := db.FindRubricByID(ctx, bp.project.RubricVersionID)
	if err != nil {
		b.Fatal(err)
	}
	var variants []experiment.Variant
	for _, n := range bp.names {
		variants = append(variants, experiment.Variant{Judge: n, Version: 1})
	}
	read := func(b *testing.B) experiment.Input {
		in, _, err := db.ExperimentInput(ctx, bp.project.ID, variants)
		if err != nil {
			b.Fatal(err)
		}
		if len(in.Items) != 2000 || len(in.Humans) != 3 || len(in.Variants) != 5 {
			b.Fatalf("read %d items, %d people, %d variants", len(in.Items), len(in.Humans), len(in.Variants))
		}
		in.Def = def
		in.Bootstrap = report.DefaultBootstrap
		return in
	}
	compute := func(b *testing.B, in experiment.Input) {
		res, err := experiment.Run(in)
		if err != nil {
			b.Fatal(err)
		}
		if res.Items != 2000 || len(res.Variants) != 5 || len(res.RubricItems) != 12 {
			b.Fatalf("experiment over %d items, %d variants, %d rubric items", res.Items, len(res.Variants), len(res.RubricItems))
		}
	}
	in := read(b)
	var computeTime time.Duration
	b.Run("compute", func(b *testing.B) {
		var ts []time.Duration
		cpu0 := processCPU(b)
		for b.Loop() {
			t0 := time.Now()
			compute(b, in)
			ts = append(ts, time.Since(t0))
		}
		computeTime = median(ts)
		b.ReportMetric(float64((processCPU(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(computeTime.Milliseconds()), "median-ms")
	})
	b.Run("read", func(b *testing.B) {
		var ts []time.Duration
		cpu0 := processCPU(b)
		for b.Loop() {
			t0 := time.Now()
			read(b)
			ts = append(ts, time.Since(t0))
		}
		b.ReportMetric(float64((processCPU(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(median(ts).Milliseconds()), "median-ms")
		if computeTime > 0 {
			b.ReportMetric(float64(median(ts))/float64(computeTime), "x-compute")
		}
	})
	const target = time.Second
	var pageTime time.Duration
	b.Run("page", func(b *testing.B) {
		var ts []time.Duration
		cpu0 := processCPU(b)
		for b.Loop() {
			t0 := time.Now()
			compute(b, read(b))
			ts = append(ts, time.Since(t0))
		}
		b.ReportMetric(float64((processCPU(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
		pageTime = median(ts)
		b.ReportMetric(float64(pageTime.Milliseconds()), "median-ms")
		b.ReportMetric(float64(slices.Max(ts).Milliseconds()), "worst-ms")
		b.ReportMetric(float64(pageTime)/float64(target), "x-target")
		b.Logf("page (read + computation): median %s, slowest %s; target under %s; load average %s",
			pageTime.Round(time.Millisecond), slices.Max(ts).Round(time.Millisecond), target, loadAverage())
	})
	// The page viewed again: the input is read anew and the computation
	// found in the web server's cache by the input's fingerprint.
	b.Run("page-again", func(b *testing.B) {
		cache := experiment.NewCache(4)
		first, err := cache.Run(read(b))
		if err != nil {
			b.Fatal(err)
		}
		var ts []time.Duration
		for b.Loop() {
			t0 := time.Now()
			res, err := cache.Run(read(b))
			if err != nil || res != first {
				b.Fatalf("the equal input was computed again (%v)", err)
			}
			ts = append(ts, time.Since(t0))
		}
		b.ReportMetric(float64(median(ts).Milliseconds()), "median-ms")
		if pageTime > 0 {
			b.ReportMetric(float64(median(ts))/float64(pageTime), "x-page")
		}
	})
}

// loadAverage is the machine's load averages, for the log: on a shared
// machine the wall times above mean little without them.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}
