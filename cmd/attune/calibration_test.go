package main

import (
	"context"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

func TestCalibrationCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	must := mustRun(t, env)
	newPilot(t, env, `{"id":"r1","messages":[{"role":"user","content":"I feel alone."},{"role":"assistant","content":"That sounds lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"Exams soon."},{"role":"assistant","content":"Let's plan."}]}
`)
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.FindProjectByName(ctx, "Pilot")
	if err != nil {
		t.Fatal(err)
	}
	lead, err := db.FindUserByEmail(ctx, "lee@example.org")
	if err != nil {
		t.Fatal(err)
	}
	var r1 int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE source_id = 'r1'`).Scan(&r1); err != nil {
		t.Fatal(err)
	}
	if err := db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: r1, ActorID: lead.ID,
		Answers: map[string]string{"emotion": "4", "validation": "4", "helpfulness": "2", "safety": "5", "overall": "3"}}); err != nil {
		t.Fatal(err)
	}

	if out := must("calibration", "add", "--project", "Pilot", "--item", "r1", "--explain", "helpfulness=It offers no next step."); !strings.Contains(out, `item "r1" is in the calibration set`) {
		t.Fatalf("add: %s", out)
	}
	out := must("calibration", "list", "--project", "Pilot")
	if !strings.Contains(out, "r1\tgold emotion=4 helpfulness=2 overall=3 safety=5 validation=4\tanswered 0, passed 0\texplained 1") || !strings.Contains(out, "1 calibration item\n") {
		t.Fatalf("list: %q", out)
	}
	if out := must("calibration", "settings", "--project", "Pilot", "--qualify", "2", "--every", "20"); !strings.Contains(out, "qualify 2, every 20, pass 80%") {
		t.Fatalf("settings: %s", out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"calibration", "add", "--project", "Pilot", "--item", "r2"}, "no gold for every rubric item"},
		{[]string{"calibration", "add", "--project", "Pilot", "--item", "r1", "--explain", "warmth=x"}, `"warmth"`},
		{[]string{"calibration", "add", "--project", "Pilot"}, "needs --item"},
		{[]string{"calibration", "settings", "--project", "Pilot", "--every", "1"}, "every must be 0"},
		{[]string{"calibration", "remove", "--project", "Pilot", "--item", "r2"}, "not in this project's calibration set"},
		{[]string{"calibration", "grow"}, "unknown calibration command"},
	} {
		if out, err := runCmd(t, env, "", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v (%s), want an error with %q", tt.args, err, out, tt.want)
		}
	}
	if out := must("calibration", "remove", "--project", "Pilot", "--item", "r1"); !strings.Contains(out, "left the calibration set") {
		t.Fatalf("remove: %s", out)
	}
	if out := must("calibration", "list", "--project", "Pilot"); !strings.Contains(out, "0 calibration items") {
		t.Fatalf("list after removal: %s", out)
	}
}
