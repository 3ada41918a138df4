package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestBuiltinRubricsLoadIdempotently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	for range 2 {
		if err := db.LoadBuiltinRubrics(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.ListRubrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, v := range got {
		refs = append(refs, v.Ref.String())
		if !v.Builtin {
			t.Errorf("%s not marked built-in", v.Ref)
		}
	}
	want := "coaching-conversation@2.0,empathetic-dialogue@1,empathetic-dialogue@2,empathetic-understanding@1"
	if strings.Join(refs, ",") != want {
		t.Fatalf("rubrics = %v, want %s", refs, want)
	}
	// Every built-in reads back equal to what was stored.
	for _, b := range rubric.Builtins() {
		def, v, err := db.FindRubric(ctx, b.Ref())
		if err != nil {
			t.Fatal(err)
		}
		if def.Hash() != b.Hash() || v.SHA256 != b.Hash() {
			t.Errorf("%s read back with hash %s, stored %s, want %s", b.Ref(), def.Hash(), v.SHA256, b.Hash())
		}
	}
	// Without a version, the newest.
	def, _, err := db.FindRubric(ctx, rubric.Ref{Key: "empathetic-dialogue"})
	if err != nil || def.Version != "2" {
		t.Fatalf("newest empathetic-dialogue = %v, %v", def, err)
	}
	if _, _, err := db.FindRubric(ctx, rubric.Ref{Key: "nope"}); !errors.Is(err, attune.ErrNotFound) {
		t.Fatalf("missing rubric: %v", err)
	}
	var audits int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'rubric.add'`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 4 {
		t.Fatalf("%d rubric.add audit events, want 4 (one per version, none for the no-op reload)", audits)
	}
}

func TestChangedRubricVersionRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	orig, _ := rubric.Builtin("empathetic-dialogue@2")
	if _, err := db.AddRubric(ctx, nil, orig, false); err != nil {
		t.Fatal(err)
	}
	changed, _ := rubric.Builtin("empathetic-dialogue@2")
	changed.Title += " (edited)"
	_, err := db.AddRubric(ctx, nil, changed, false)
	if !errors.Is(err, attune.ErrConflict) || !strings.Contains(err.Error(), "new version") || !strings.Contains(err.Error(), "empathetic-dialogue@3") {
		t.Fatalf("changed version: %v, want a conflict that says to bump the version", err)
	}
	// The database itself refuses an edit of a stored version.
	if _, err := db.Pool().Exec(ctx, `UPDATE rubric_versions SET title = 'x'`); err == nil {
		t.Fatal("a stored rubric version was updated")
	}
}

func TestLabelsMustBeRubricAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	u := newUser(t, db, "ann@example.org", attune.RoleAnnotator)
	// A minimal project, item and answer set, written directly: the
	// constraints under test must hold whatever code writes the rows.
	var answerSet, itemID, raterID, rvID int64
	err := db.Pool().QueryRow(ctx, `
		WITH rv AS (SELECT id FROM rubric_versions WHERE key = 'coaching-conversation'),
		p AS (INSERT INTO projects (name, rubric_version_id, overlap) SELECT 'p', id, 1 FROM rv RETURNING id, rubric_version_id),
		i AS (INSERT INTO items (project_id, source_id, kind, messages, turns, sha256)
		      SELECT id, 'a', 'conversation', '[{"role":"user","content":"hi"}]', 1, repeat('0', 64) FROM p RETURNING id, project_id),
		r AS (SELECT id FROM raters WHERE user_id = $1)
		INSERT INTO answer_sets (project_id, item_id, rater_id, rubric_version_id)
		SELECT i.project_id, i.id, r.id, p.rubric_version_id FROM i, r, p
		RETURNING id, item_id, rater_id, rubric_version_id`, u.ID).Scan(&answerSet, &itemID, &raterID, &rvID)
	if err != nil {
		t.Fatal(err)
	}
	insert := func(key, value string) error {
		_, err := db.Pool().Exec(ctx, `INSERT INTO labels (answer_set_id, item_id, rater_id, rubric_version_id, rubric_item_key, value)
			VALUES ($1, $2, $3, $4, $5, $6)`, answerSet, itemID, raterID, rvID, key, value)
		return err
	}
	for _, ok := range [][2]string{{"CQ1", "YES"}, {"CQ8", "NA"}, {"CQ9", "ERROR"}} {
		if err := insert(ok[0], ok[1]); err != nil {
			t.Errorf("label %s=%s refused: %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][2]string{{"CQ2", "MAYBE"}, {"CQ99", "YES"}, {"CQ3", "3"}, {"CQ1", "NO"}} {
		if err := insert(bad[0], bad[1]); err == nil {
			t.Errorf("label %s=%s stored", bad[0], bad[1])
		}
	}
	// Editing a label keeps its history.
	if _, err := db.Pool().Exec(ctx, `UPDATE labels SET value = 'NO', rationale = 'on reflection' WHERE rubric_item_key = 'CQ1'`); err != nil {
		t.Fatal(err)
	}
	var old string
	if err := db.Pool().QueryRow(ctx, `SELECT h.value FROM label_history h JOIN labels l ON l.id = h.label_id WHERE l.rubric_item_key = 'CQ1'`).Scan(&old); err != nil || old != "YES" {
		t.Fatalf("history of the edited label: %q, %v", old, err)
	}
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "2", -1}, {"2.10", "2.9", 1}, {"2.0", "2", 1}, {"2", "2", 0}, {"1.a", "1.b", -1},
	}
	for _, tt := range tests {
		got := store.CompareVersions(tt.a, tt.b)
		if (got < 0 && tt.want >= 0) || (got > 0 && tt.want <= 0) || (got == 0 && tt.want != 0) {
			t.Errorf("CompareVersions(%q, %q) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
	}
}
