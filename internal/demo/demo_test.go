package demo_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/demo"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

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
	ps, _ := db.ListAllProjects(ctx)
	if len(ps) != 3 {
		t.Fatalf("%d demo projects, want one per built-in rubric", len(ps))
	}
	rubrics := map[string]bool{}
	for _, p := range ps {
		rubrics[p.RubricRef] = true
		if p.Items < 4 {
			t.Errorf("%s has %d items", p.Name, p.Items)
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
