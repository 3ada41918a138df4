package store_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// TestEvidenceProjectPolicy: a project's turn evidence setting defaults to
// optional, is stored and read back by create and update, an empty one on
// update keeps the stored one, and one that is not a setting stores
// nothing.
func TestEvidenceProjectPolicy(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{annotators: 1})
	if f.project.EvidencePolicy != rubric.EvidenceOptional {
		t.Fatalf("new project's policy = %q, want optional", f.project.EvidencePolicy)
	}
	read := func() rubric.EvidencePolicy {
		t.Helper()
		p, err := db.FindProjectByID(ctx, f.project.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p.EvidencePolicy
	}
	change := func(policy rubric.EvidencePolicy) error {
		p := f.project
		return db.UpdateProject(ctx, f.lead.ID, p.ID, store.ProjectChanges{Name: p.Name, Instructions: p.Instructions,
			Overlap: p.Overlap, Lease: p.Lease, EvidencePolicy: policy})
	}
	if err := change(rubric.EvidenceRequired); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != rubric.EvidenceRequired {
		t.Errorf("after setting required: %q", got)
	}
	if err := change(""); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != rubric.EvidenceRequired {
		t.Errorf("an update without a policy changed it to %q", got)
	}
	var ve *attune.ValidationError
	if err := change("sometimes"); !errors.As(err, &ve) || ve.Fields["evidence_policy"] == "" {
		t.Errorf("update with policy sometimes: %v, want a validation error on evidence_policy", err)
	}
	if got := read(); got != rubric.EvidenceRequired {
		t.Errorf("a refused update stored %q", got)
	}
	var rvID int64
	if err := db.Pool().QueryRow(ctx, `SELECT rubric_version_id FROM projects WHERE id = $1`, f.project.ID).Scan(&rvID); err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "off one", RubricVersionID: rvID, Overlap: 1,
		Lease: f.project.Lease, EvidencePolicy: rubric.EvidenceOff})
	if err != nil {
		t.Fatal(err)
	}
	if p.EvidencePolicy != rubric.EvidenceOff {
		t.Errorf("created with off, read back %q", p.EvidencePolicy)
	}
	if _, err := db.CreateProject(ctx, &f.lead.ID, store.NewProject{Name: "bad one", RubricVersionID: rvID, Overlap: 1,
		Lease: f.project.Lease, EvidencePolicy: "always"}); !errors.As(err, &ve) || ve.Fields["evidence_policy"] == "" {
		t.Errorf("create with policy always: %v, want a validation error on evidence_policy", err)
	}
	if _, err := db.FindProjectByName(ctx, "bad one"); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("a refused project was stored: %v", err)
	}
}

// TestEvidenceSubmitAndEdit: the turns of a submission are stored with its
// labels and read back by every read of a person's own answers (the
// answer set, the workspace, a retry's stored answers); an edit replaces
// them, and an edit without turns clears them.
func TestEvidenceSubmitAndEdit(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{annotators: 1})
	u := f.annotators[0]
	a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	answers := maps.Clone(fullAnswers)
	answers["CQ1"], answers["CQ3"] = "NO", "NO"
	evidence := rubric.Evidence{"CQ1": {1, 3}, "CQ3": {2}}
	sub := store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answers, Evidence: evidence, ActiveMS: 1000}
	if _, err := db.SubmitLabels(ctx, sub); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want rubric.Evidence) {
		t.Helper()
		set, err := db.FindOwnAnswerSet(ctx, f.project.ID, a.ItemID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sameEvidence(set.Evidence, want) {
			t.Errorf("%s: own answer set's evidence = %v, want %v", when, set.Evidence, want)
		}
		wk, err := db.FindOwnItem(ctx, f.project.ID, a.ItemID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if wk.Answers == nil || !sameEvidence(wk.Answers.Evidence, want) {
			t.Errorf("%s: workspace's answers = %+v, want evidence %v", when, wk.Answers, want)
		}
	}
	check("submitted", evidence)
	again, err := db.SubmitLabels(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Stored == nil || !sameEvidence(again.Stored.Evidence, evidence) {
		t.Errorf("retry = created %v, stored %+v; want the stored answers with evidence %v", again.Created, again.Stored, evidence)
	}
	edit := store.LabelEdit{ProjectID: f.project.ID, ItemID: a.ItemID, UserID: u.ID, Answers: answers, Evidence: rubric.Evidence{"CQ1": {4}}}
	if _, _, err := db.UpdateLabels(ctx, edit); err != nil {
		t.Fatal(err)
	}
	check("edited", rubric.Evidence{"CQ1": {4}})
	edit.Evidence = nil
	if _, _, err := db.UpdateLabels(ctx, edit); err != nil {
		t.Fatal(err)
	}
	check("edited without turns", rubric.Evidence{})
	var stored int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels WHERE cardinality(evidence) > 0`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Errorf("%d labels keep turns after an edit without any", stored)
	}
}

// sameEvidence compares evidence as read back: no key with no turns.
func sameEvidence(got, want rubric.Evidence) bool {
	return len(got) == len(want) && maps.EqualFunc(got, want, slices.Equal[[]int])
}
