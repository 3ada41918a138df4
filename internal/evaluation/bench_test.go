package evaluation_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/store"
)

// BenchmarkEstimates makes the estimates of a project of 100,000 items of
// five systems, labelled on 12 YES/NO rubric items by two judges, with 5 %
// of the items labelled by two people: every rubric item per system,
// overall and the differences, for each judge, through
// evaluation.EstimateEvery as the report makes them (s_report), and the
// same 24 estimates one by one through evaluation.Estimate as the page,
// the API and the command ask for them (s_each). In the same run it COPYs
// the labels those estimates read out of PostgreSQL, the database's own
// fastest way to hand them over, and reports the ratio of the report's
// time to it (x_of_copy): the target is the whole project's estimates
// within a small multiple of that COPY. Run with
//
//	go test -run '^$' -bench Estimates -benchtime 1x ./internal/evaluation
func BenchmarkEstimates(b *testing.B) {
	const (
		items    = 100_000
		systems  = 5
		criteria = 12
		labelled = 20 // one run of five items (one of each system) in 20 is labelled by people
	)
	ctx := context.Background()
	db := dbtest.New(b)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		b.Fatal(err)
	}
	var rvID int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM rubric_versions WHERE key = 'coaching-conversation' AND version = '2.0'`).Scan(&rvID); err != nil {
		b.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "systems", RubricVersionID: rvID, Overlap: 2, Lease: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	hosts, err := attune.ParseHostRules("127.0.0.1:9")
	if err != nil {
		b.Fatal(err)
	}
	var judges []string
	var raters []int64
	for _, name := range []string{"gpt", "claude"} {
		// The judges are never called: their answers are written below.
		j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{Hosts: hosts}, store.NewJudge{Name: name, Provider: "openai",
			BaseURL: "http://127.0.0.1:9/v1", Model: "m", Settings: attune.JudgeSettings{Concurrency: 1}})
		if err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE judge_id = $1`, j.ID).Scan(&id); err != nil {
			b.Fatal(err)
		}
		judges, raters = append(judges, name), append(raters, id)
	}
	var people []int64
	for i := range 2 {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("p%d@example.org", i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			b.Fatal(err)
		}
		people = append(people, id)
	}
	var keys []string
	rows, err := db.Pool().Query(ctx, `SELECT k.key FROM rubric_items k WHERE k.rubric_version_id = $1
		AND EXISTS (SELECT 1 FROM rubric_answers a WHERE a.rubric_version_id = k.rubric_version_id AND a.item_key = k.key AND a.value = 'YES')
		ORDER BY k.position LIMIT $2`, rvID, criteria)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	if len(keys) < criteria {
		b.Fatalf("the rubric has %d YES/NO items, want %d", len(keys), criteria)
	}
	// Written by PostgreSQL itself, so that 2.5 million labels take
	// seconds: the people answer YES where (item + position) % 3 > 0, a
	// judge as they do but for one item in seven, where it says YES.
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO items (project_id, source_id, kind, messages, turns, sha256, meta)
		  SELECT $1, 'item-' || g, 'reply', '[{"role":"user","content":"I feel low."},{"role":"assistant","content":"That sounds hard."}]', 1,
		         lpad(to_hex(g), 64, '0'), jsonb_build_object('system', 'v' || (g % $3))
		  FROM generate_series(1, $2::int) g`, []any{p.ID, items, systems}},
		{`INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, active_ms)
		  SELECT $1, i.id, r, $2, 1000 FROM items i CROSS JOIN unnest($3::bigint[]) r WHERE i.project_id = $1`,
			[]any{p.ID, rvID, raters}},
		{`INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id, active_ms)
		  SELECT $1, i.id, r, $2, 1000 FROM items i CROSS JOIN unnest($3::bigint[]) r WHERE i.project_id = $1 AND (i.id / $5) % $4 = 0`,
			[]any{p.ID, rvID, people, labelled, systems}},
		{`INSERT INTO labels (answer_set_id, item_id, project_id, rater_id, rubric_version_id, rubric_item_key, value, rationale)
		  SELECT s.id, s.item_id, s.project_id, s.rater_id, s.rubric_version_id, k.key,
		         CASE WHEN (s.item_id + k.position) % 3 > 0 OR (r.kind = 'judge' AND s.item_id % 7 = 0) THEN 'YES' ELSE 'NO' END, ''
		  FROM answer_sets s JOIN raters r ON r.id = s.rater_id
		  CROSS JOIN rubric_items k WHERE s.project_id = $1 AND k.rubric_version_id = $2 AND k.key = ANY ($3::text[])`,
			[]any{p.ID, rvID, keys[:criteria]}},
		{`ANALYZE items, answer_sets, labels`, nil},
	} {
		if _, err := db.Pool().Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	copySQL := `COPY (SELECT l.item_id, i.meta ->> 'system', l.rater_id, l.rubric_item_key, l.value
		FROM labels l JOIN items i ON i.id = l.item_id WHERE l.project_id = ` + strconv.FormatInt(p.ID, 10) + `) TO STDOUT`
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()

	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		b.Fatal(err)
	}

	var every, each, copied time.Duration
	var systemsSeen, itemsSeen int
	for b.Loop() {
		// In turn, so that the machine's noise falls on all alike.
		start := time.Now()
		for _, j := range judges {
			all, err := evaluation.EstimateEvery(ctx, db, p, def, j)
			if err != nil {
				b.Fatal(err)
			}
			itemsSeen = len(all)
			for _, e := range all {
				if e.RubricItem == keys[0] {
					systemsSeen = len(e.Systems)
				}
			}
		}
		every += time.Since(start)
		start = time.Now()
		for _, j := range judges {
			for _, k := range keys[:criteria] {
				est, err := evaluation.Estimate(ctx, db, evaluation.Query{ProjectID: p.ID, Judge: j, RubricItem: k, SystemKey: "system"})
				if err != nil {
					b.Fatal(err)
				}
				if len(est.Systems) != systems {
					b.Fatalf("the estimate of %s names %d systems, want %d", k, len(est.Systems), systems)
				}
			}
		}
		each += time.Since(start)
		start = time.Now()
		if _, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, copySQL); err != nil {
			b.Fatal(err)
		}
		copied += time.Since(start)
	}
	if systemsSeen != systems || itemsSeen != len(def.Items) {
		b.Fatalf("the report's estimates are of %d rubric items and name %d systems, want %d and %d", itemsSeen, systemsSeen, len(def.Items), systems)
	}
	n := float64(b.N)
	b.ReportMetric(every.Seconds()/n, "s_report")
	b.ReportMetric(each.Seconds()/n, "s_each")
	b.ReportMetric(copied.Seconds()/n, "s_copy")
	b.ReportMetric(every.Seconds()/copied.Seconds(), "x_of_copy")
	b.ReportMetric(0, "ns/op")
}
