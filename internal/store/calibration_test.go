package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// goldItems gives the named items of a likert project a lead's gold on
// every rubric item.
func (f *fixture) goldItems(t *testing.T, answers map[string]string, sources ...string) {
	t.Helper()
	for _, s := range sources {
		if err := f.db.Adjudicate(context.Background(), store.Adjudication{ProjectID: f.project.ID, ItemID: f.itemID(t, s),
			ActorID: f.lead.ID, Answers: answers}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCalibrationSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-dialogue@2", overlap: 2, items: 4, annotators: 1})
	f.goldItems(t, likert("4", "4", "3", "5", "4"), "item-000", "item-001")
	lead := &f.lead.ID

	id, err := f.db.AddCalibration(ctx, lead, f.project.ID, "item-000", map[string]string{"safety": "No risk is raised."})
	if err != nil || id != f.itemID(t, "item-000") {
		t.Fatalf("add: %d, %v", id, err)
	}
	if _, err := f.db.AddCalibration(ctx, lead, f.project.ID, "item-001", nil); err != nil {
		t.Fatal(err)
	}
	// An item without gold on every rubric item, or not in the project, is
	// refused with the reason.
	if _, err := f.db.AddCalibration(ctx, lead, f.project.ID, "item-002", nil); !errors.Is(err, store.ErrNoCompleteGold) {
		t.Fatalf("no gold: %v", err)
	}
	if _, err := f.db.AddCalibration(ctx, lead, f.project.ID, "nope", nil); !errors.Is(err, attune.ErrInvalid) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown item: %v", err)
	}
	// Adding again changes the explanations.
	if _, err := f.db.AddCalibration(ctx, lead, f.project.ID, "item-000", map[string]string{"emotion": "Names the fear."}); err != nil {
		t.Fatal(err)
	}
	list, err := f.db.ListCalibration(ctx, f.project.ID)
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if list[0].SourceID != "item-000" || list[0].Gold["safety"] != "5" || list[0].Explanations["emotion"] != "Names the fear." ||
		list[0].Explanations["safety"] != "" || list[0].AddedBy == "" {
		t.Fatalf("first = %+v", list[0])
	}
	if err := f.db.RemoveCalibration(ctx, lead, f.project.ID, "item-001"); err != nil {
		t.Fatal(err)
	}
	if err := f.db.RemoveCalibration(ctx, lead, f.project.ID, "nope"); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("removal of an unknown item: %v", err)
	}
	if err := f.db.RemoveCalibration(ctx, lead, f.project.ID, "item-001"); !errors.Is(err, attune.ErrConflict) {
		t.Fatalf("second removal: %v", err)
	}
	list, err = f.db.ListCalibration(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("after removal: %+v", list)
	}
	if got := auditActions(t, f.db, "calibration."); len(got) != 4 {
		t.Fatalf("audit = %q", got)
	}
}

func TestCalibrationPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 1, annotators: 1})
	p, err := f.db.CalibrationPolicy(ctx, f.project.ID)
	if err != nil || p != (calibration.Policy{PassPercent: calibration.DefaultPassPercent}) {
		t.Fatalf("default policy %+v, %v", p, err)
	}
	want := calibration.Policy{Qualify: 3, Every: 20, PassPercent: 75}
	if err := f.db.SetCalibrationPolicy(ctx, &f.lead.ID, f.project.ID, want); err != nil {
		t.Fatal(err)
	}
	p, err = f.db.CalibrationPolicy(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p != want {
		t.Fatalf("policy %+v", p)
	}
	if err := f.db.SetCalibrationPolicy(ctx, &f.lead.ID, f.project.ID, calibration.Policy{Every: 1, PassPercent: 80}); !errors.Is(err, attune.ErrInvalid) || !strings.Contains(err.Error(), "every") {
		t.Fatalf("bad policy: %v", err)
	}
	p, err = f.db.CalibrationPolicy(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p != want {
		t.Fatalf("policy after a refused change %+v", p)
	}
}
