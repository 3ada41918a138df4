package store_test

import (
	"context"
	"math"
	"testing"

	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// TestCalibrationHistoryReachesTheReport has one person answer three
// calibration items (exact, within a point, far off) and another answer
// none: the history holds the first person's three answer sets in order,
// and the report's calibration figures are the engine's grades of them.
func TestCalibrationHistoryReachesTheReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := calibrated(t, projectOpts{overlap: 1, items: 6, annotators: 2}, 3, calibration.Policy{Qualify: 3, PassPercent: 80})
	def, err := rubric.Builtin("empathetic-dialogue@2")
	if err != nil {
		t.Fatal(err)
	}
	ann := f.annotators[0]
	given := []map[string]string{
		calibrationGold,                 // 5 of 5, no offset
		likert("5", "3", "3", "5", "4"), // 5 of 5 within a point, +1 −1
		likert("1", "1", "1", "1", "1"), // 0 of 5, −3 −3 −2 −4 −3
	}
	a, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, answers := range given {
		if a == nil || !a.Calibration {
			t.Fatalf("answer %d: %+v, want a calibration item", i, a)
		}
		g := calibration.GradeAnswers(def, calibrationGold, answers, 80)
		res, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: ann.ID, Answers: answers, ClaimNext: true,
			Graded: &store.GradedAnswers{Gold: calibrationGold, Matched: g.Matched, Compared: g.Compared, Passed: g.Passed}})
		if err != nil {
			t.Fatal(err)
		}
		a = res.Next
	}

	var raterID int64
	if err := f.db.Pool().QueryRow(ctx, `SELECT id FROM raters WHERE user_id = $1`, ann.ID).Scan(&raterID); err != nil {
		t.Fatal(err)
	}
	history, err := f.db.CalibrationHistory(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 1 || history[0].RaterID != raterID || history[0].Kind != "human" || len(history[0].Records) != 3 {
		t.Fatalf("history %+v, want rater %d's three answer sets", history, raterID)
	}
	for i, rec := range history[0].Records {
		if rec.Given["emotion"] != given[i]["emotion"] || rec.Gold["safety"] != "5" {
			t.Errorf("record %d: %+v, want %v against the gold", i, rec, given[i])
		}
	}

	rep, err := report.Build(ctx, f.db, f.project, report.Options{Alt: report.AltOptions{Epsilon: report.DefaultEpsilon}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Calibration) != 1 {
		t.Fatalf("report calibration %+v, want one rater", rep.Calibration)
	}
	c := rep.Calibration[0]
	if c.Rater != raterID || c.N != 3 || math.Abs(c.Accuracy-10.0/15) > 1e-12 || c.Leniency == nil || math.Abs(*c.Leniency+1) > 1e-12 || c.Drifting {
		t.Errorf("report calibration %+v (leniency %v), want n 3, accuracy 10/15, leniency −1, not drifting", c, c.Leniency)
	}
}
