package store_test

import (
	"context"
	"maps"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestResubmitReturnsTheStoredAnswers: a second submission of an
// assignment stores nothing and returns the answers stored first, so that
// the caller can tell a retry from different answers.
func TestResubmitReturnsTheStoredAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 1})
	ann := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	first := store.Submission{AssignmentID: a.ID, UserID: ann.ID, Answers: fullAnswers,
		Rationales: map[string]string{"CQ1": "clear", "CQ2": ""}, Rationale: "first"}
	res, err := f.db.SubmitLabels(ctx, first)
	if err != nil || !res.Created || res.Stored != nil {
		t.Fatalf("first submit: %+v, %v", res, err)
	}
	other := maps.Clone(fullAnswers)
	other["CQ1"] = "NO"
	again, err := f.db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: ann.ID, Answers: other, Rationale: "second"})
	if err != nil || again.Created || again.AnswerSetID != res.AnswerSetID {
		t.Fatalf("second submit: %+v, %v", again, err)
	}
	s := again.Stored
	if s == nil || !maps.Equal(s.Answers, fullAnswers) || !maps.Equal(s.Rationales, map[string]string{"CQ1": "clear"}) ||
		s.Rationale != "first" || s.Revision != 1 || s.ItemID != a.ItemID {
		t.Fatalf("stored answers returned: %+v", s)
	}
	own, err := f.db.FindOwnAnswerSet(ctx, f.project.ID, a.ItemID, ann.ID)
	if err != nil || own.Answers["CQ1"] != "YES" {
		t.Fatalf("the second submission changed the stored answers: %+v, %v", own, err)
	}
}
