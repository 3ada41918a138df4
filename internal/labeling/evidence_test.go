package labeling_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// setPolicy sets the project's turn evidence policy and reads the project
// again, as a request would.
func (f *fixture) setPolicy(t *testing.T, policy rubric.EvidencePolicy) {
	t.Helper()
	ctx := context.Background()
	if err := f.db.UpdateProject(ctx, f.lead.ID, f.p.ID, store.ProjectChanges{Name: f.p.Name, Instructions: f.p.Instructions,
		Overlap: f.p.Overlap, Lease: f.p.Lease, EvidencePolicy: policy}); err != nil {
		t.Fatal(err)
	}
	p, err := f.db.FindProjectByID(ctx, f.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.p = p
}

// ownEvidence is the turn evidence stored for the person's answers to an
// item.
func (f *fixture) ownEvidence(t *testing.T, u *attune.User, itemID int64) rubric.Evidence {
	t.Helper()
	set, err := f.db.FindOwnAnswerSet(context.Background(), f.p.ID, itemID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return set.Evidence
}

// refusedNaming reports whether err is the rubric's refusal (not a
// warning to confirm) with an issue on item.
func refusedNaming(err error, item string) bool {
	var p *labeling.Problems
	if !errors.As(err, &p) || !errors.Is(err, attune.ErrInvalid) || p.NeedsConfirm {
		return false
	}
	return slices.ContainsFunc(p.Issues, func(is rubric.Issue) bool { return is.Item == item })
}

func sameEvidence(got, want rubric.Evidence) bool {
	return len(got) == len(want) && maps.EqualFunc(got, want, slices.Equal[[]int])
}

// TestEvidence: a submission's turns are held to the project's policy by
// the rubric's one rule, in the same refusal as the answers' problems, and
// what is accepted is stored, in turn order; what is refused stores
// nothing. The items are one-turn dialogues.
func TestEvidence(t *testing.T) {
	t.Parallel()
	failing := maps.Clone(likert)
	failing["emotion"] = "2" // a level of 2 or less fails
	for _, c := range []struct {
		name     string
		policy   rubric.EvidencePolicy
		answers  map[string]string
		evidence rubric.Evidence
		refused  string          // the item the refusal names; "" when accepted
		stored   rubric.Evidence // what is stored when accepted
	}{
		{"off refuses any turn", rubric.EvidenceOff, failing, rubric.Evidence{"emotion": {1}}, "emotion", nil},
		{"off takes a failing answer without turns", rubric.EvidenceOff, failing, nil, "", rubric.Evidence{}},
		{"optional takes none", rubric.EvidenceOptional, failing, nil, "", rubric.Evidence{}},
		{"optional takes an empty list as none", rubric.EvidenceOptional, failing, rubric.Evidence{"emotion": {}}, "", rubric.Evidence{}},
		{"optional takes a valid turn", rubric.EvidenceOptional, failing, rubric.Evidence{"emotion": {1}}, "", rubric.Evidence{"emotion": {1}}},
		{"required refuses a failing answer without turns", rubric.EvidenceRequired, failing, nil, "emotion", nil},
		{"required takes a failing answer with its turn", rubric.EvidenceRequired, failing, rubric.Evidence{"emotion": {1}}, "", rubric.Evidence{"emotion": {1}}},
		{"required asks nothing of passing answers", rubric.EvidenceRequired, likert, nil, "", rubric.Evidence{}},
		{"a turn past the dialogue's end", rubric.EvidenceOptional, failing, rubric.Evidence{"emotion": {2}}, "emotion", nil},
		{"turn zero", rubric.EvidenceOptional, failing, rubric.Evidence{"emotion": {0}}, "emotion", nil},
		{"a turn named twice", rubric.EvidenceOptional, failing, rubric.Evidence{"emotion": {1, 1}}, "emotion", nil},
		{"evidence on a passing answer", rubric.EvidenceOptional, failing, rubric.Evidence{"validation": {1}}, "validation", nil},
		{"evidence on no item of the rubric", rubric.EvidenceOptional, failing, rubric.Evidence{"tone": {1}}, "tone", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			f.setPolicy(t, c.policy)
			h := f.next(t, f.ann)
			if h.Item.Turns != 1 {
				t.Fatalf("item %s has %d turns; the cases are written for one", h.Item.SourceID, h.Item.Turns)
			}
			_, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: c.answers, Evidence: c.evidence}, false)
			if c.refused != "" {
				if !refusedNaming(err, c.refused) {
					t.Fatalf("submit: %v, want a refusal naming %s", err, c.refused)
				}
				if sets, labels := f.stored(t, h.Item.ID); sets != 0 || labels != 0 {
					t.Fatalf("a refused submission stored %d sets, %d labels", sets, labels)
				}
				return
			}
			if err != nil {
				t.Fatalf("submit: %v, want it stored", err)
			}
			if got := f.ownEvidence(t, f.ann, h.Item.ID); !sameEvidence(got, c.stored) {
				t.Errorf("stored evidence %v, want %v", got, c.stored)
			}
		})
	}
}

// TestEvidenceEdit: an edit is held to the same rule as a submission, and
// its turns replace the stored ones; a retry of a submission with other
// turns is a different submission.
func TestEvidenceEdit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	h := f.next(t, f.ann)
	failing := maps.Clone(likert)
	failing["emotion"], failing["overall"] = "1", "2"
	in := labeling.Input{Answers: failing, Evidence: rubric.Evidence{"overall": {1}, "emotion": {1}}}
	if _, err := f.flow.Submit(ctx, f.ann, h, in, false); err != nil {
		t.Fatal(err)
	}
	other := labeling.Input{Answers: failing, Evidence: rubric.Evidence{"emotion": {1}}}
	if res, err := f.flow.Submit(ctx, f.ann, h, other, false); err != nil || !res.Different {
		t.Errorf("a retry with other turns: %+v, %v; want it told apart", res, err)
	}
	if res, err := f.flow.Submit(ctx, f.ann, h, in, false); err != nil || res.Different {
		t.Errorf("a retry with the same turns: %+v, %v; want it the same", res, err)
	}
	f.setPolicy(t, rubric.EvidenceRequired)
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, other); !refusedNaming(err, "overall") {
		t.Fatalf("an edit leaving a failing answer without turns under required: %v", err)
	}
	if got, want := f.ownEvidence(t, f.ann, h.Item.ID), in.Evidence; !sameEvidence(got, want) {
		t.Fatalf("a refused edit changed the evidence to %v, want %v", got, want)
	}
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, labeling.Input{Answers: failing, Evidence: rubric.Evidence{"overall": {1}, "emotion": {3}}}); !refusedNaming(err, "emotion") {
		t.Fatalf("an edit naming a turn past the end: %v", err)
	}
	f.setPolicy(t, rubric.EvidenceOptional)
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, other); err != nil {
		t.Fatal(err)
	}
	if got := f.ownEvidence(t, f.ann, h.Item.ID); !sameEvidence(got, other.Evidence) {
		t.Errorf("after the edit: %v, want %v", got, other.Evidence)
	}
	if _, err := f.flow.EditItem(ctx, f.ann, f.p, h.Item.ID, labeling.Input{Answers: failing}); err != nil {
		t.Fatal(err)
	}
	if got := f.ownEvidence(t, f.ann, h.Item.ID); len(got) != 0 {
		t.Errorf("an edit without turns left %v", got)
	}
}

// TestEvidenceCalibrationRetry: a calibration answer is checked with its
// turns like any other but keeps none, so a retry with the same turns is
// the same submission, not a different one.
func TestEvidenceCalibrationRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.calibrationItem(t)
	h := f.next(t, f.ann)
	if h.Key == nil {
		t.Fatalf("the first item %d is not the calibration item", h.Item.ID)
	}
	failing := maps.Clone(likert)
	failing["emotion"] = "2"
	if _, err := f.flow.Submit(ctx, f.ann, h, labeling.Input{Answers: failing, Evidence: rubric.Evidence{"emotion": {5}}}, false); !refusedNaming(err, "emotion") {
		t.Fatalf("a calibration answer naming a turn past the end: %v", err)
	}
	in := labeling.Input{Answers: failing, Evidence: rubric.Evidence{"emotion": {1}}}
	if res, err := f.flow.Submit(ctx, f.ann, h, in, false); err != nil || !res.Created || !res.Calibration {
		t.Fatalf("calibration submit: %+v, %v", res, err)
	}
	if res, err := f.flow.Submit(ctx, f.ann, h, in, false); err != nil || res.Created || res.Different {
		t.Errorf("the same calibration answer again: %+v, %v; want it taken as a retry", res, err)
	}
}
