package demo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// practice is what one demo annotator did with a project's practice
// items: passed answers, given at gold, then failed ones, given far from
// it.
type practice struct{ passed, failed int }

// seedQualification asks the project's annotators to qualify on its
// calibration items, and has each demo annotator answer some of them, so
// that the people page shows someone who passed, someone in progress and
// someone who failed (and a lead can re-qualify them). The answers go
// through the claim and the submit a person's would, graded the same way.
func seedQualification(ctx context.Context, db *store.DB, def *rubric.Definition, p *attune.Project, qualify int,
	annotators []*attune.User, done []practice) error {
	if qualify == 0 {
		return nil
	}
	if err := db.SetCalibrationPolicy(ctx, nil, p.ID, calibration.Policy{Qualify: qualify, PassPercent: calibration.DefaultPassPercent}); err != nil {
		return err
	}
	for i, d := range done {
		u := annotators[i]
		for n := range d.passed + d.failed {
			if err := practise(ctx, db, def, p, u, n < d.passed); err != nil {
				return fmt.Errorf("%s's practice item %d: %w", u.Email, n+1, err)
			}
		}
	}
	return nil
}

// practise claims the annotator's next item, a calibration item while they
// qualify, and answers it at gold (pass) or far from it.
func practise(ctx context.Context, db *store.DB, def *rubric.Definition, p *attune.Project, u *attune.User, pass bool) error {
	a, err := db.NextAssignment(ctx, p.ID, u.ID)
	if err != nil {
		return err
	}
	_, key, err := db.FindAssignmentKey(ctx, a.ID, u.ID)
	if err != nil {
		return err
	}
	if key == nil {
		return fmt.Errorf("a real item (%d) was handed out before qualifying", a.ItemID)
	}
	answers := map[string]string{}
	for _, it := range def.Items {
		answers[it.Key] = key.Gold[it.Key]
		if !pass {
			answers[it.Key] = farFrom(def, &it, key.Gold[it.Key])
		}
	}
	g := calibration.GradeAnswers(def, key.Gold, answers, key.PassPercent)
	_, err = db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: p.ID, UserID: u.ID, Answers: answers,
		Graded: &store.GradedAnswers{Gold: key.Gold, Matched: g.Matched, Compared: g.Compared, Passed: g.Passed}})
	return err
}

// farFrom is an answer of a numeric rubric item at the other end of the
// scale from v (1–5: two points or more away, a miss); any other answer
// stays v, so that no rule of the rubric about its item is broken.
func farFrom(def *rubric.Definition, it *rubric.Item, v string) string {
	x, err := strconv.Atoi(v)
	if err != nil || !gold.Numeric(def, it) {
		return v
	}
	if x >= 3 {
		return "1"
	}
	return "5"
}
