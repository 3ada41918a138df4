package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestProjectPeopleAndRequalify: `project people` shows an annotator who
// failed qualification as failed, and `project requalify` starts their
// next attempt, refusing bad flags by name and a stale attempt, with the
// same audit entry as the people page (no account as actor).
func TestProjectPeopleAndRequalify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	must := mustRun(t, env)
	newPilot(t, env, `{"id":"r1","messages":[{"role":"user","content":"I feel alone."},{"role":"assistant","content":"That sounds lonely."}]}
{"id":"r2","messages":[{"role":"user","content":"Exams soon."},{"role":"assistant","content":"Let's plan."}]}
`, "ann@example.org")

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
	ann, err := db.FindUserByEmail(ctx, "ann@example.org")
	if err != nil {
		t.Fatal(err)
	}
	var r1 int64
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE source_id = 'r1'`).Scan(&r1); err != nil {
		t.Fatal(err)
	}
	gold := map[string]string{"emotion": "4", "validation": "4", "helpfulness": "2", "safety": "5", "overall": "3"}
	if err := db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: r1, ActorID: lead.ID, Answers: gold}); err != nil {
		t.Fatal(err)
	}
	must("calibration", "add", "--project", "Pilot", "--item", "r1")
	must("calibration", "settings", "--project", "Pilot", "--qualify", "1")
	if out := must("project", "people", "--project", "Pilot"); !regexp.MustCompile(`ann@example.org\s+in progress\s+1\s+0\s+0\s+0\s+open\s+steady`).MatchString(out) {
		t.Fatalf("people before any answer:\n%s", out)
	}
	// The annotator fails the one practice item.
	a, err := db.NextAssignment(ctx, p.ID, ann.ID)
	if err != nil || !a.Calibration {
		t.Fatalf("practice item: %+v, %v", a, err)
	}
	far := map[string]string{"emotion": "1", "validation": "1", "helpfulness": "5", "safety": "1", "overall": "1"}
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		t.Fatal(err)
	}
	g := calibration.GradeAnswers(def, gold, far, 80)
	res, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: p.ID, UserID: ann.ID, Answers: far, ClaimNext: true,
		Graded: &store.GradedAnswers{Gold: gold, Matched: g.Matched, Compared: g.Compared, Passed: g.Passed}})
	if err != nil || res.Next != nil || res.NextErr == nil || !strings.Contains(res.NextErr.Error(), calibration.NotQualified) {
		t.Fatalf("after failing: %+v, %v", res, err)
	}
	if out := must("project", "people", "--project", "Pilot"); !regexp.MustCompile(`ann@example.org\s+failed\s+1\s+0\s+1\s+0\s+open`).MatchString(out) {
		t.Fatalf("people after failing:\n%s", out)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"project", "requalify", "--project", "Pilot"}, "needs --project and --email"},
		{[]string{"project", "requalify", "--project", "Pilot", "--email", "ann@example.org", "--attempt", "two"}, "--attempt: \"two\" is not a whole number"},
		{[]string{"project", "requalify", "--project", "Pilot", "--email", "ann@example.org", "--attempt", "0"}, "--attempt: the attempt is counted from 1"},
		{[]string{"project", "requalify", "--project", "Pilot", "--email", "ann@example.org", "--attempt", "3"}, "--attempt: "},
		{[]string{"project", "requalify", "--project", "Pilot", "--email", "lee@example.org"}, "--email"},
		{[]string{"project", "requalify", "--project", "Pilot", "--email", "nobody@example.org"}, "nobody@example.org"},
		{[]string{"project", "people"}, "needs --project"},
	} {
		if out, err := runCmd(t, env, "", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v\n%s\nwant an error with %q", tt.args, err, out, tt.want)
		}
	}
	if out := must("project", "requalify", "--project", "Pilot", "--email", "ann@example.org"); !strings.Contains(out, "attempt 2 begins") {
		t.Fatalf("requalify: %s", out)
	}
	if out, err := runCmd(t, env, "", "project", "requalify", "--project", "Pilot", "--email", "ann@example.org", "--attempt", "1"); err == nil ||
		!strings.Contains(err.Error(), "--attempt") || !strings.Contains(err.Error(), "on attempt 2, not 1") {
		t.Fatalf("stale attempt: %v\n%s", err, out)
	}
	if out := must("project", "requalify", "--project", "Pilot", "--email", "ann@example.org", "--attempt", "2"); !strings.Contains(out, "attempt 3 begins") {
		t.Fatalf("requalify with --attempt: %s", out)
	}
	out := must("project", "people", "--project", "Pilot", "--json")
	if !strings.Contains(out, `"qualification": "in progress"`) || !strings.Contains(out, `"attempt": 3`) {
		t.Fatalf("people --json:\n%s", out)
	}
	// The same audit entry as the page's, with no account as actor.
	var n, withActor int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*), count(actor_id) FROM audit_events WHERE action = 'member.requalify' AND project_id = $1 AND subject = $2`,
		p.ID, "ann@example.org").Scan(&n, &withActor); err != nil {
		t.Fatal(err)
	}
	if n != 2 || withActor != 0 {
		t.Fatalf("%d member.requalify entries, %d with an actor; want 2 without", n, withActor)
	}
}
