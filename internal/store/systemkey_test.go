package store_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// TestProjectSystemKey: a project's system key is stored on create, read
// by every project query, changed by an update and left as it is by an
// update that gives none; a project made before the setting (migration
// 00050) reads the key it was read by until then, "system"; the database
// refuses an empty or overlong key whatever path writes it.
func TestProjectSystemKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-understanding@1")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	create := func(name, key string) *attune.Project {
		t.Helper()
		p, err := db.CreateProject(ctx, nil, store.NewProject{Name: name, RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour, SystemKey: key})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return p
	}
	arm := create("Arms", "arm")
	plain := create("Plain", "")
	if arm.SystemKey != "arm" || plain.SystemKey != attune.DefaultSystemKey {
		t.Fatalf("created with keys %q and %q, want arm and %s", arm.SystemKey, plain.SystemKey, attune.DefaultSystemKey)
	}
	read := func(id int64) string {
		t.Helper()
		byID, err := db.FindProjectByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		byName, err := db.FindProjectByName(ctx, byID.Name)
		if err != nil {
			t.Fatal(err)
		}
		if byName.SystemKey != byID.SystemKey {
			t.Fatalf("project %d: key %q by id, %q by name", id, byID.SystemKey, byName.SystemKey)
		}
		return byID.SystemKey
	}
	if got := read(arm.ID); got != "arm" {
		t.Fatalf("read %q, want arm", got)
	}
	update := func(key string) error {
		return db.UpdateProject(ctx, 0, arm.ID, store.ProjectChanges{Name: arm.Name, Overlap: 2, Lease: time.Hour, SystemKey: key})
	}
	if err := update("model"); err != nil {
		t.Fatal(err)
	}
	if got := read(arm.ID); got != "model" {
		t.Fatalf("after the update %q, want model", got)
	}
	if err := update(""); err != nil {
		t.Fatal(err)
	}
	if got := read(arm.ID); got != "model" {
		t.Fatalf("an update without a key made it %q, want model kept", got)
	}
	long := strings.Repeat("k", attune.MaxSystemKey+1)
	var v *attune.ValidationError
	if err := update(long); !errors.As(err, &v) || v.Fields["system_key"] == "" {
		t.Fatalf("an overlong key: %v, want system_key refused", err)
	}
	if _, err := db.CreateProject(ctx, nil, store.NewProject{Name: "Long", RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour, SystemKey: long}); err == nil {
		t.Fatal("a project with an overlong key was created")
	}
	for _, bad := range []string{"", long} {
		if _, err := db.Pool().Exec(ctx, `UPDATE projects SET system_key = $2 WHERE id = $1`, arm.ID, bad); err == nil {
			t.Errorf("the database took the key %q", bad)
		}
	}

	// Down below 00050 and a project made as the code before it did; up
	// again, it reads the default, as does every project that was there.
	for {
		st, err := db.MigrationState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Current <= 49 {
			break
		}
		if err := db.MigrateDown(ctx, io.Discard); err != nil {
			t.Fatalf("down from %d: %v", st.Current, err)
		}
	}
	var old int64
	if err := db.Pool().QueryRow(ctx, `INSERT INTO projects (name, instructions, rubric_version_id, overlap, lease_seconds, alt_epsilon)
		VALUES ('Old', '', $1, 2, 3600, 0.15) RETURNING id`, rv.ID).Scan(&old); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{old, arm.ID, plain.ID} {
		if got := read(id); got != attune.DefaultSystemKey {
			t.Errorf("project %d after the migration: key %q, want %s", id, got, attune.DefaultSystemKey)
		}
	}
}
