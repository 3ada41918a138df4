package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

func importItems(db *store.DB, projectID int64, update bool, items ...store.ImportItem) (store.ImportResult, error) {
	return db.ImportItems(context.Background(), projectID, store.ImportOptions{Update: update}, func(emit func([]store.ImportItem) error) error {
		return emit(items)
	})
}

func countItems(t *testing.T, db *store.DB, projectID int64) int {
	var n int
	if err := db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM items WHERE project_id = $1`, projectID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImportIsAllOrNothingAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{items: 2, annotators: 1})
	pid := f.project.ID

	// The same items again: nothing changes.
	res, err := importItems(f.db, pid, false, testItem(0, "x"), testItem(1, "x"))
	if err != nil || res.Inserted != 0 || res.Unchanged != 2 {
		t.Fatalf("re-import: %+v, %v", res, err)
	}
	// A new item plus a changed one: refused whole, naming the line.
	_, err = importItems(f.db, pid, false, testItem(2, "x"), testItem(1, "changed"))
	var le *attune.LineErrors
	if !errors.As(err, &le) || le.Errors[0].Line != 2 || !strings.Contains(le.Errors[0].Message, `"item-001" already exists`) {
		t.Fatalf("changed item: %v", err)
	}
	if n := countItems(t, f.db, pid); n != 2 {
		t.Fatalf("%d items after a refused import, want 2", n)
	}
	// With update, the changed item is replaced and the new one added.
	res, err = importItems(f.db, pid, true, testItem(2, "x"), testItem(1, "changed"))
	if err != nil || res.Inserted != 1 || res.Updated != 1 {
		t.Fatalf("update import: %+v, %v", res, err)
	}
	// Once labelled, an item's content cannot change, even with update.
	a, err := f.db.NextAssignment(ctx, pid, f.annotators[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, a, f.annotators[0])
	var src string
	if err := f.db.Pool().QueryRow(ctx, `SELECT source_id FROM items WHERE id = $1`, a.ItemID).Scan(&src); err != nil {
		t.Fatal(err)
	}
	changed := testItem(0, "again changed")
	changed.SourceID = src
	if _, err := importItems(f.db, pid, true, changed); !errors.As(err, &le) || !strings.Contains(err.Error(), "already has labels") {
		t.Fatalf("update of a labelled item: %v", err)
	}
}

func TestImportReadErrorStoresNothing(t *testing.T) {
	t.Parallel()
	f := newProject(t, dbtest.New(t), projectOpts{items: 1, annotators: 1})
	broken := errors.New("line 3: messages[0].role: unknown role")
	_, err := f.db.ImportItems(context.Background(), f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		if err := emit([]store.ImportItem{testItem(5, "x"), testItem(6, "x")}); err != nil {
			return err
		}
		return broken // the file turned out bad after a batch was copied
	})
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v", err)
	}
	if n := countItems(t, f.db, f.project.ID); n != 1 {
		t.Fatalf("%d items after a failed import, want the 1 from before", n)
	}
}

// TestImportStopsWholeWhenEitherSideFails checks the import's COPY, which
// runs beside the reading of the file: whether the file turns out bad
// after batches were copied or PostgreSQL refuses a row, into an empty
// project or one with items, nothing is stored, the error is the one that
// says why, and the reading is stopped when the COPY fails (a reader that
// never ends on its own would otherwise hang the test).
func TestImportStopsWholeWhenEitherSideFails(t *testing.T) {
	t.Parallel()
	broken := errors.New("line 2501: messages[0].role: unknown role")
	batch := func(n int) []store.ImportItem {
		b := make([]store.ImportItem, 1000)
		for i := range b {
			b[i] = testItem(100+n*1000+i, "x")
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		empty  bool
		badRow bool // PostgreSQL refuses a row of the second batch
	}{
		{"bad file, empty project", true, false},
		{"bad file, project with items", false, false},
		{"refused row, empty project", true, true},
		{"refused row, project with items", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newProject(t, dbtest.New(t), projectOpts{annotators: 1})
			pid := f.project.ID
			if tc.empty {
				p, err := f.db.CreateProject(ctx, nil, store.NewProject{Name: "empty", RubricVersionID: f.project.RubricVersionID, Overlap: 1, Lease: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				pid = p.ID
			}
			before := countItems(t, f.db, pid)
			_, err := f.db.ImportItems(ctx, pid, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
				// Into an empty project the rows go straight to items,
				// which refuses the bad hash during the COPY: the reader
				// then never ends unless the import stops it. Otherwise
				// they go to a staging table first, and items refuses the
				// hash once the file is read.
				for n := 0; !tc.badRow || tc.empty || n < 5; n++ {
					b := batch(n)
					if tc.badRow && n == 1 {
						b[10].SHA256 = "not a hash"
					}
					if err := emit(b); err != nil {
						return err
					}
					if !tc.badRow && n == 2 {
						return broken
					}
				}
				return nil
			})
			if tc.badRow {
				if err == nil || !strings.Contains(err.Error(), "sha256") {
					t.Fatalf("err = %v, want PostgreSQL's refusal of the hash", err)
				}
			} else if !errors.Is(err, broken) {
				t.Fatalf("err = %v, want the file's problem", err)
			}
			if n := countItems(t, f.db, pid); n != before {
				t.Fatalf("%d items after a failed import, want the %d from before", n, before)
			}
		})
	}
}
