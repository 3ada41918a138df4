package runs_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// newFlow returns the flow over a fresh database with a project of two
// items and a judge (never called: nothing here works the runs).
func newFlow(t *testing.T) (*runs.Flow, *store.DB, *attune.Project, *attune.Judge) {
	t.Helper()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-understanding@1")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "runs", RubricVersionID: rv.ID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	data := `{"id":"a","messages":[{"role":"user","content":"I failed my test."},{"role":"assistant","content":"That is hard."}]}
{"id":"b","messages":[{"role":"user","content":"My friend ignored me."},{"role":"assistant","content":"Maybe they were busy."}]}
`
	if _, err := importer.Import(ctx, db, p, strings.NewReader(data), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "J", Provider: "openai", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return runs.New(db, runner), db, p, j
}

// TestOneActiveRunPerJudge: two starts of the same judge at once, each
// passing the check before either inserts, give exactly one active run;
// the other is refused with the message the check gives, naming the run.
func TestOneActiveRunPerJudge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	flow, db, p, j := newFlow(t)
	in, errs, err := flow.Check(ctx, p, runs.Fields{Judge: strconv.FormatInt(j.ID, 10)})
	if err != nil || errs != nil {
		t.Fatalf("check: %v %v", errs, err)
	}
	const starts = 4
	var wg sync.WaitGroup
	results := make(chan error, starts)
	gate := make(chan struct{})
	for range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			_, err := flow.Start(ctx, nil, p, in)
			results <- err
		}()
	}
	close(gate)
	wg.Wait()
	close(results)
	var started, refused int
	for err := range results {
		switch {
		case err == nil:
			started++
		case errors.Is(err, attune.ErrConflict) && strings.Contains(attune.PublicMessage(err), "of this judge is queued on this project"):
			refused++
		default:
			t.Errorf("start: %v", err)
		}
	}
	list, err := db.ListRuns(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, r := range list {
		if runs.IsActive(r.Status) {
			active++
		}
	}
	if started != 1 || refused != starts-1 || active != 1 || len(list) != 1 {
		t.Fatalf("%d started, %d refused, %d runs of which %d active; want one run", started, refused, len(list), active)
	}
	// Once it has ended, the judge may run again.
	if _, err := flow.Cancel(ctx, list[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Start(ctx, nil, p, in); err != nil {
		t.Fatalf("a start after the cancel: %v", err)
	}
}

// TestRunActions: each action refuses what the run's state does not allow,
// with the message every adapter shows.
func TestRunActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	flow, db, p, j := newFlow(t)
	in, _, err := flow.Check(ctx, p, runs.Fields{Judge: strconv.FormatInt(j.ID, 10), Budget: "1"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := flow.Start(ctx, nil, p, in)
	if err != nil {
		t.Fatal(err)
	}
	find := func() *attune.JudgeRun {
		t.Helper()
		r, err := db.FindRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := flow.Resume(ctx, find(), nil); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("resume of a queued run: %v, want a conflict", err)
	}
	if _, err := flow.Pause(ctx, find(), "paused by a test"); err != nil {
		t.Fatal(err)
	}
	if r := find(); r.Status != attune.RunPaused || r.Reason != "paused by a test" {
		t.Fatalf("after pause: %s %q", r.Status, r.Reason)
	}
	if _, err := flow.Pause(ctx, find(), "again"); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("pause of a paused run: %v, want a conflict", err)
	}
	// Spent, it resumes only with a larger budget, which is then its cap.
	if _, _, err := db.AddRunSpend(ctx, run.ID, 1.5); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Resume(ctx, find(), nil); !errors.Is(err, attune.ErrConflict) || !strings.Contains(attune.PublicMessage(err), "spent its budget") {
		t.Fatalf("resume of a spent run: %v", err)
	}
	more := 3.0
	if _, err := flow.Resume(ctx, find(), &more); err != nil {
		t.Fatalf("resume with a larger budget: %v", err)
	}
	if r := find(); r.Status != attune.RunQueued || r.BudgetUSD == nil || *r.BudgetUSD != 3 {
		t.Fatalf("after resume: %s %v", r.Status, r.BudgetUSD)
	}
	if _, err := flow.Cancel(ctx, find()); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Cancel(ctx, find()); !errors.Is(err, attune.ErrConflict) || attune.PublicMessage(err) != "This run has ended already." {
		t.Fatalf("cancel of a cancelled run: %v", err)
	}
}
