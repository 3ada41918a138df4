package demo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/demo"
)

// TestDemoPeopleStates: the demo's people pages show every qualification
// between them — passed and failed on the first project, in progress on
// the second, not required on the third — and the demo person who failed
// is told so when they ask for work.
func TestDemoPeopleStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Seed(ctx, db); err != nil {
		t.Fatal(err)
	}
	want := map[string][]calibration.Qualification{
		"Demo: empathetic replies":       {calibration.QualificationPassed, calibration.QualificationFailed},
		"Demo: coaching conversations":   {calibration.QualificationInProgress, calibration.QualificationInProgress},
		"Demo: empathetic understanding": {calibration.QualificationNotRequired, calibration.QualificationNotRequired},
	}
	for name, quals := range want {
		p, err := db.FindProjectByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		people, err := db.ListPeople(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(people) != len(quals) {
			t.Fatalf("%s: %d people, want %d", name, len(people), len(quals))
		}
		for i, q := range quals {
			if people[i].Qualification != q {
				t.Errorf("%s: %s is %q, want %q (%+v)", name, people[i].Email, people[i].Qualification, q, people[i].Attempt)
			}
		}
		if name == "Demo: empathetic replies" {
			failed := people[1]
			if failed.Alert == "" {
				t.Errorf("the demo person who failed raises no alert: %+v", failed)
			}
			if _, err := db.NextAssignment(ctx, p.ID, failed.UserID); err == nil || !strings.Contains(err.Error(), calibration.NotQualified) {
				t.Errorf("next for the demo person who failed: %v", err)
			}
		}
	}
}
