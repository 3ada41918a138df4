package store_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

func TestJudgePromptVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{rubric: "empathetic-understanding@1", items: 2, annotators: 1})
	db, rv := f.db, f.project.RubricVersionID
	other := newUser(t, db, "other-lead@example.org", attune.RoleLead)
	admin := newUser(t, db, "admin@example.org", attune.RoleAdmin)
	j, err := db.CreateJudge(ctx, &f.lead.ID, attune.JudgePolicy{}, store.NewJudge{Name: "Grader", Provider: "openai", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	def, err := db.FindRubricByID(ctx, rv)
	if err != nil {
		t.Fatal(err)
	}

	// Version 1 is the rubric's own prompt, byte for byte.
	vs, err := db.ListJudgePrompts(ctx, j.ID, rv)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Version != 1 || vs[0].ParentID != nil || !maps.Equal(vs[0].Prompts, store.RubricPrompts(def)) {
		t.Fatalf("versions = %+v, want version 1 with the rubric's prompts", vs)
	}
	orig := def.Items[0].Prompt
	edited := map[string]string{"understanding": strings.Replace(orig, "{{Dialog}}", "Read closely.\n{{Dialog}}", 1)}

	// Who may make a version, and what a version must hold.
	_, err = db.CreateJudgePrompt(ctx, &other.ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: rv, Parent: 1, Prompts: edited})
	if !errors.Is(err, attune.ErrForbidden) {
		t.Fatalf("another lead's version: err = %v, want forbidden", err)
	}
	for name, c := range map[string]struct {
		prompts map[string]string
		field   string
	}{
		"unchanged":    {map[string]string{"understanding": orig}, "prompts"},
		"no slot":      {map[string]string{"understanding": "Rate it."}, "prompt_understanding"},
		"slot twice":   {map[string]string{"understanding": "{{Dialog}} {{Dialog}}"}, "prompt_understanding"},
		"NUL":          {map[string]string{"understanding": "a\x00 {{Dialog}}"}, "prompt_understanding"},
		"bad UTF-8":    {map[string]string{"understanding": "a\xff {{Dialog}}"}, "prompt_understanding"},
		"too long":     {map[string]string{"understanding": strings.Repeat("x", attune.MaxPromptBytes) + "{{Dialog}}"}, "prompt_understanding"},
		"missing item": {map[string]string{}, "prompt_understanding"},
		"unknown item": {map[string]string{"understanding": edited["understanding"], "nope": "{{Dialog}}"}, "prompts"},
	} {
		_, err := db.CreateJudgePrompt(ctx, &f.lead.ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: rv, Parent: 1, Prompts: c.prompts})
		var v *attune.ValidationError
		if !errors.As(err, &v) || v.Fields[c.field] == "" {
			t.Errorf("%s: err = %v, want a message on %s", name, err, c.field)
		}
	}
	v2, err := db.CreateJudgePrompt(ctx, &f.lead.ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: rv, Parent: 1, Prompts: edited})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Version != 2 || v2.ParentVersion != 1 || v2.AuthorEmail != f.lead.Email || !maps.Equal(v2.Prompts, edited) {
		t.Fatalf("version 2 = %+v", v2)
	}
	// An admin may too, from any version.
	v3, err := db.CreateJudgePrompt(ctx, &admin.ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: rv, Parent: 2,
		Prompts: map[string]string{"understanding": "Only this: {{Dialog}}"}})
	if err != nil || v3.Version != 3 || v3.ParentVersion != 2 {
		t.Fatalf("admin's version = %+v, %v", v3, err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE judge_prompts SET prompts = '{"understanding": "x {{Dialog}}"}' WHERE id = $1`, v2.ID); err == nil ||
		!strings.Contains(err.Error(), "immutable") {
		t.Fatalf("updating a stored version: err = %v, want it refused", err)
	}

	// Runs record their version; a later version answers as a rater of
	// its own, made once.
	r1, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID, PromptVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	// One run of a version at a time is active on a project: the second
	// comes once the first has ended.
	if ok, err := db.SetRunStatus(ctx, r2.ID, []attune.RunStatus{attune.RunQueued}, attune.RunCancelled, "cancelled", nil); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	r2b, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID, PromptVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r1.PromptVersion != 1 || r1.PromptID == nil || *r1.PromptID != vs[0].ID || r1.RaterID != j.RaterID {
		t.Errorf("run of version 1 = %+v, want the rubric's prompt and the judge's own rater %d", r1, j.RaterID)
	}
	if r2.PromptVersion != 2 || *r2.PromptID != v2.ID || r2.RaterID == j.RaterID || r2b.RaterID != r2.RaterID {
		t.Errorf("runs of version 2 = %+v / %+v, want one rater of their own", r2, r2b)
	}
	var raterName string
	if err := db.Pool().QueryRow(ctx, `SELECT name FROM raters WHERE id = $1`, r2.RaterID).Scan(&raterName); err != nil {
		t.Fatal(err)
	}
	if raterName != "Grader · prompt v2" {
		t.Errorf("version 2's rater is named %q", raterName)
	}
	if _, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID, PromptVersion: 9}); err == nil {
		t.Error("a run of a version that does not exist was stored")
	} else if v := (*attune.ValidationError)(nil); !errors.As(err, &v) || v.Fields["prompt"] == "" {
		t.Errorf("run of version 9: err = %v, want a message on prompt", err)
	}
	got, err := db.FindJudgePrompt(ctx, j.ID, rv, 2)
	if err != nil || got.Runs != 2 {
		t.Fatalf("version 2 = %+v, %v; want 2 runs", got, err)
	}

	// Answers of the version-2 run go to its rater: the item is still to
	// do for version 1.
	item := f.itemID(t, "item-000")
	if ok, _, err := db.WriteJudgeAnswers(ctx, r2, item, []store.JudgeLabel{{Key: "understanding", Value: "3", Method: "structured", PromptHash: "h"}}, 10); err != nil || !ok {
		t.Fatalf("write: %v, %v", ok, err)
	}
	todo1, err := db.RunItemsTodo(ctx, r1)
	if err != nil {
		t.Fatal(err)
	}
	todo2, err := db.RunItemsTodo(ctx, r2b)
	if err != nil {
		t.Fatal(err)
	}
	if len(todo1) != 2 || len(todo2) != 1 {
		t.Errorf("to do: version 1 %v, version 2 %v; want both items, then one", todo1, todo2)
	}
	answers, err := db.JudgeItemAnswers(ctx, r2.RaterID, item)
	if err != nil || len(answers) != 1 || answers[0].RunID != r2.ID {
		t.Errorf("version 2's answers = %+v, %v", answers, err)
	}

	// The judge is still one judge; renaming it renames its versions'
	// raters.
	js, err := db.ListJudges(ctx)
	if err != nil || len(js) != 1 || js[0].RaterID != j.RaterID {
		t.Fatalf("judges = %+v, %v", js, err)
	}
	if err := db.UpdateJudge(ctx, &f.lead.ID, attune.JudgePolicy{}, j.ID, store.NewJudge{Name: "Marker", Provider: "openai", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool().QueryRow(ctx, `SELECT name FROM raters WHERE id = $1`, r2.RaterID).Scan(&raterName); err != nil {
		t.Fatal(err)
	}
	if raterName != "Marker · prompt v2" {
		t.Errorf("after the rename, version 2's rater is named %q", raterName)
	}

	// An experiment names the variants by judge and version.
	for v, want := range map[int]int64{0: j.RaterID, 1: j.RaterID, 2: r2.RaterID} {
		if got, err := db.JudgeVariantRater(ctx, f.project.ID, "Marker", v); err != nil || got != want {
			t.Errorf("variant Marker@%d: rater %d, %v; want %d", v, got, err, want)
		}
	}
	if _, err := db.JudgeVariantRater(ctx, f.project.ID, "Marker", 3); !errors.Is(err, attune.ErrNotFound) {
		t.Errorf("a version that never ran: err = %v, want not found", err)
	}
}
