package demo_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/demo"
	"github.com/attune/attune/internal/experiment"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// seeded is a demo database with its judge runs done against the demo's
// fake model, as `make run` leaves it once the runs finish.
func seeded(t *testing.T) (*store.DB, []demo.Account) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	accounts, err := demo.Seed(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("demo.Seed: %v", time.Since(start))
	sj, err := demo.NewSimulatedJudge()
	if err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(fakellm.New(fakellm.Options{Answer: sj.Answer}))
	t.Cleanup(fake.Close)
	policy := attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}}}
	runner, err := judge.NewRunner(db, judge.RunnerOptions{Getenv: func(string) string { return "" }, Policy: policy,
		BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer runner.Stop(context.Background())
	start = time.Now()
	if err := demo.SeedJudge(ctx, db, runner, policy, fake.URL+"/v1"); err != nil {
		t.Fatal(err)
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		runs, err := db.ListRuns(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 {
			t.Fatalf("%s has %d judge runs, want one per prompt version", p.Name, len(runs))
		}
		for _, r := range runs {
			done, err := runner.Wait(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if done.Status != attune.RunCompleted {
				t.Fatalf("%s: run %d ended %s (%s)", p.Name, r.ID, done.Status, done.Reason)
			}
		}
	}
	t.Logf("demo judge runs (no added latency): %v", time.Since(start))
	return db, accounts
}

func TestSeedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	accounts, err := demo.Seed(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(accounts) != 3 {
		t.Fatalf("%d demo accounts, want 3", len(accounts))
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d demo projects, want one per built-in rubric", len(ps))
	}
	rubrics := map[string]bool{}
	for _, p := range ps {
		rubrics[p.RubricRef] = true
		if p.Items < 40 {
			t.Errorf("%s has %d items, want at least 40", p.Name, p.Items)
		}
		gold, err := db.CountGold(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if gold.Automatic+gold.Adjudicated < 30 {
			t.Errorf("%s: gold %+v: want gold on at least 30 items", p.Name, gold)
		}
		cal, err := db.ListCalibration(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(cal) == 0 {
			t.Errorf("%s has no calibration set", p.Name)
		}
	}
	for _, r := range []string{"empathetic-dialogue@2", "coaching-conversation@2.0", "empathetic-understanding@1"} {
		if !rubrics[r] {
			t.Errorf("no demo project for %s", r)
		}
	}
	// A second call on a database with projects does nothing.
	again, err := demo.Seed(ctx, db)
	if err != nil || again != nil {
		t.Fatalf("second seed: %v, %v", again, err)
	}
	var out strings.Builder
	demo.Print(&out, "http://127.0.0.1:8080", accounts)
	if !strings.Contains(out.String(), accounts[1].Password) || !strings.Contains(out.String(), "annotator1@attune.local") {
		t.Fatalf("demo sign-ins not printed:\n%s", out.String())
	}
}

// TestDemoVerdicts: on the demo as `make run` sets it up, the report gives
// each prompt version of the demo judge a verdict (passed or failed, not
// "cannot tell") on every rubric item of every demo project, and the
// verdicts are not all the same: the simulated judge is tested, not
// waved through.
func TestDemoVerdicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := seeded(t)
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]int{}
	for _, ps := range ps {
		p, err := db.FindProjectByID(ctx, ps.ID)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := report.Build(ctx, db, p, report.Options{Alt: report.AltOptions{Epsilon: report.DefaultEpsilon}})
		if err != nil {
			t.Fatal(err)
		}
		// The experiment page's alt-test, as it computes it, is the same.
		jv, err := db.ListJudgeVariants(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var vs []experiment.Variant
		for _, v := range jv {
			vs = append(vs, v.Variant)
		}
		in, raters, err := db.ExperimentInput(ctx, p.ID, vs)
		if err != nil {
			t.Fatal(err)
		}
		if in.Def, err = db.FindRubricByID(ctx, p.RubricVersionID); err != nil {
			t.Fatal(err)
		}
		x, err := experiment.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if x, err = report.ExperimentAltTests(ctx, db, p, x, raters.Variants, report.DefaultEpsilon); err != nil {
			t.Fatal(err)
		}
		expResult := map[string]string{}
		for _, ri := range x.RubricItems {
			for v, row := range ri.Variants {
				expResult[fmt.Sprintf("%s/%d", ri.Key, raters.Variants[v])] = row.AltTest.Result
			}
		}
		for _, it := range rep.RubricItems {
			for _, j := range it.Judges {
				if got := expResult[fmt.Sprintf("%s/%d", it.Key, j.Rater)]; got != j.AltTest.Result {
					t.Errorf("%s %s judge %d: experiment %q, report %q", p.Name, it.Key, j.Rater, got, j.AltTest.Result)
				}
			}
		}
		for _, it := range rep.RubricItems {
			if len(it.Judges) != 2 {
				t.Fatalf("%s %s: %d judges in the report, want the demo judge's two prompt versions", p.Name, it.Key, len(it.Judges))
			}
			for _, j := range it.Judges {
				a := j.AltTest
				if a.Result == string(agreement.AltCannotTell) || a.Tested < agreement.AltMinHumans {
					t.Errorf("%s %s judge %d: %s (%s), %d tested", p.Name, it.Key, j.Rater, a.Result, a.Reason, a.Tested)
				}
				verdicts[a.Result]++
			}
		}
	}
	t.Logf("verdicts: %v", verdicts)
	if verdicts[string(agreement.AltPassed)] == 0 || verdicts[string(agreement.AltFailed)] == 0 {
		t.Errorf("verdicts %v: want some passed and some failed", verdicts)
	}
}
