package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// statementLog records every statement a pool runs, with its arguments.
type statementLog struct {
	mu    sync.Mutex
	stmts []loggedStatement
}

type loggedStatement struct {
	sql  string
	args []any
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Options to pgx travel among the arguments; EXPLAIN needs none.
	args := make([]any, 0, len(d.Args))
	for _, a := range d.Args {
		switch a.(type) {
		case pgx.QueryResultFormats, pgx.QueryResultFormatsByOID, pgx.QueryExecMode:
			continue
		}
		args = append(args, a)
	}
	l.stmts = append(l.stmts, loggedStatement{d.SQL, args})
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *statementLog) take() []loggedStatement {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stmts
	l.stmts = nil
	return s
}

// projectTables are the tables that grow with every project: a read of one
// project must never scan them whole.
var projectTables = map[string]bool{
	"items": true, "labels": true, "answer_sets": true, "assignments": true,
	"gold_labels": true, "gold_consensus": true,
}

// seqScans returns the tables of projectTables a JSON plan scans whole.
func seqScans(node map[string]any) []string {
	var out []string
	if node["Node Type"] == "Seq Scan" {
		if rel, _ := node["Relation Name"].(string); projectTables[rel] {
			out = append(out, rel)
		}
	}
	if kids, ok := node["Plans"].([]any); ok {
		for _, k := range kids {
			out = append(out, seqScans(k.(map[string]any))...)
		}
	}
	return out
}

// TestProjectReadsStayInTheProject runs every read of one project on a
// database where another project is twenty times larger, EXPLAINs
// each statement the read sent, and fails on any plan that scans a whole
// table of labels, items, answer sets, assignments or gold: such a plan
// costs what the database holds, not what the project holds.
func TestProjectReadsStayInTheProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	log := &statementLog{}
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, err := store.OpenPool(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	var raters []int64
	for i := range 4 {
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: fmt.Sprintf("r%d@example.org", i), Role: attune.RoleAnnotator, PasswordHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := pool.QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, u.ID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		raters = append(raters, id)
	}
	small := seedLabels(t, db, "small", 500, raters)
	big := seedLabels(t, db, "big", 10_000, raters)
	// The large project has its assignments and gold too, so that reading
	// those tables whole would cost.
	for _, q := range []string{
		`INSERT INTO assignments (project_id, item_id, rater_id, state, assigned_at, lease_expires_at, finished_at, answer_set_id)
		 SELECT s.project_id, s.item_id, s.rater_id, 'submitted', now() - interval '1 hour', now(), now(), s.id
		 FROM answer_sets s WHERE s.project_id = $1`,
		`INSERT INTO gold_labels (item_id, rubric_version_id, rubric_item_key, value, method)
		 SELECT l.item_id, l.rubric_version_id, l.rubric_item_key, min(l.value), 'automatic'
		 FROM labels l WHERE l.project_id = $1 GROUP BY 1, 2, 3`,
		`INSERT INTO gold_consensus (item_id, project_id, decided, rank, safety, human_raters, max_spread)
		 SELECT id, project_id, id % 3 = 0, 0.5, false, 4, 1 FROM items WHERE project_id = $1`,
	} {
		if _, err := pool.Exec(ctx, q, big); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	if _, err := db.ApplyConsensus(ctx, small, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	lo, hi, err := db.ItemIDRange(ctx, small)
	if err != nil || lo == 0 {
		t.Fatalf("item range %d–%d, %v", lo, hi, err)
	}
	reads := []struct {
		name string
		read func() error
	}{
		{"export labels", func() error {
			_, err := export.Write(ctx, db, new(strings.Builder), small, export.Labels, export.CSV, false)
			return err
		}},
		{"export gold with raters", func() error {
			_, err := export.Write(ctx, db, new(strings.Builder), small, export.Gold, export.CSV, true)
			return err
		}},
		{"export judge calls", func() error {
			_, err := export.Write(ctx, db, new(strings.Builder), small, export.JudgeCalls, export.CSV, false)
			return err
		}},
		{"export flags", func() error {
			_, err := export.Write(ctx, db, new(strings.Builder), small, export.Flags, export.CSV, false)
			return err
		}},
		{"dataset export, gold", func() error {
			_, err := export.WriteRecords(ctx, db, new(strings.Builder), small, export.JSONL, export.RecordOptions{Which: export.WhichGold, Soft: true})
			return err
		}},
		{"dataset export, labels", func() error {
			_, err := export.WriteRecords(ctx, db, new(strings.Builder), small, export.JSONL, export.RecordOptions{Which: export.WhichLabels})
			return err
		}},
		{"agreement raters", func() error { _, err := db.ListProjectRaters(ctx, small); return err }},
		{"agreement labels", func() error {
			return db.StreamAnswerSets(ctx, small, store.AgreementFilter{}, func(*store.AnswerSetLabels) error { return nil })
		}},
		{"agreement labels of a part", func() error {
			return db.StreamAnswerSets(ctx, small, store.AgreementFilter{MinItemID: lo, MaxItemID: (lo + hi) / 2, RaterIDs: raters[:2]},
				func(*store.AnswerSetLabels) error { return nil })
		}},
		{"drill people", func() error { _, err := db.DrillItems(ctx, small, store.DrillFilter{Key: "overall"}); return err }},
		{"drill gold", func() error {
			_, err := db.DrillItems(ctx, small, store.DrillFilter{Key: "overall", A: raters[0], Gold: true})
			return err
		}},
		{"drill consensus", func() error {
			_, err := db.DrillItems(ctx, small, store.DrillFilter{Key: "overall", A: raters[0], Consensus: true, Median: true})
			return err
		}},
		{"gold sets", func() error { _, err := db.GoldSets(ctx, small, lo, hi); return err }},
		{"frozen items", func() error { _, err := db.FrozenItems(ctx, small, lo, hi); return err }},
		{"experiment items", func() error { _, _, err := db.ExperimentItems(ctx, small, nil); return err }},
		{"count gold", func() error { _, err := db.CountGold(ctx, small); return err }},
		{"disagreements", func() error { _, _, err := db.ListDisagreements(ctx, small, 0, 50); return err }},
		{"count flags", func() error { _, err := db.CountFlags(ctx, small); return err }},
		{"search open gold", func() error { _, err := db.SearchItems(ctx, small, store.ItemSearch{Gold: store.GoldOpen}); return err }},
		{"search automatic gold", func() error {
			_, err := db.SearchItems(ctx, small, store.ItemSearch{Gold: store.GoldAutomatic, Sort: store.SortLabels})
			return err
		}},
		{"search concern", func() error {
			_, err := db.SearchItems(ctx, small, store.ItemSearch{Concern: []store.RubricAnswer{{Key: "safety", Value: "1"}}})
			return err
		}},
	}
	for _, r := range reads {
		log.take()
		if err := r.read(); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		stmts := log.take()
		explained := 0
		for _, st := range stmts {
			head := strings.ToUpper(strings.Fields(st.sql)[0])
			if head != "SELECT" && head != "WITH" {
				continue
			}
			var plan []map[string]any
			var raw []byte
			if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+st.sql, st.args...).Scan(&raw); err != nil {
				t.Fatalf("%s: explain %s: %v", r.name, st.sql, err)
			}
			if err := json.Unmarshal(raw, &plan); err != nil {
				t.Fatal(err)
			}
			explained++
			if scans := seqScans(plan[0]["Plan"].(map[string]any)); len(scans) > 0 {
				t.Errorf("%s: scans all of %v in\n%s", r.name, scans, strings.Join(strings.Fields(st.sql), " "))
			}
		}
		if explained == 0 {
			t.Errorf("%s: no statement explained", r.name)
		}
	}
}
