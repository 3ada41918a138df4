package store_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

// labelsPerSet counts the project's answer sets that have other than want
// label rows, and the answer sets still queued for them.
func labelsPerSet(t *testing.T, db *store.DB, projectID int64, want int) (wrong, queued int) {
	t.Helper()
	ctx := context.Background()
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets s
		WHERE s.project_id = $1 AND (SELECT count(*) FROM labels l WHERE l.answer_set_id = s.id) <> $2`, projectID, want).Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels_pending WHERE project_id = $1`, projectID).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	return wrong, queued
}

// TestSubmitWritesItsAnswerSetOnce: a submit writes the answer set with
// its answers, notes and turns and no label row; the person reads their
// answers back at once from the set; a lead's read of the project's labels
// (the export) sees them at once too, having written the label rows first.
func TestSubmitWritesItsAnswerSetOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 1})
	ann := f.annotators[0]
	a, err := f.db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, a, ann)
	if n := f.count(t, `SELECT count(*) FROM labels`); n != 0 {
		t.Fatalf("the submit wrote %d label rows; want none, written after the commit", n)
	}
	own, err := f.db.FindOwnAnswerSet(ctx, f.project.ID, a.ItemID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(own.Answers) != len(fullAnswers) {
		t.Fatalf("own answers read back: %v", own.Answers)
	}
	for k, v := range fullAnswers {
		if own.Answers[k] != v {
			t.Fatalf("own answer %s = %q, submitted %q", k, own.Answers[k], v)
		}
	}
	n, err := f.db.ExportLabels(ctx, f.project.ID, func(*export.Label) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if n != len(fullAnswers) {
		t.Fatalf("the export right after the submit gave %d labels; want %d", n, len(fullAnswers))
	}
	if wrong, queued := labelsPerSet(t, f.db, f.project.ID, len(fullAnswers)); wrong != 0 || queued != 0 {
		t.Fatalf("after the export: %d answer sets without their labels, %d still queued", wrong, queued)
	}
	// Written as the set's copy says, the labels leave the set as it was:
	// the labels' trigger finds it equal and does not rewrite it.
	if n := f.count(t, `SELECT count(*) FROM answer_sets WHERE ctid = '(0,1)'`); n != 1 {
		t.Fatal("writing the labels rewrote the answer set")
	}
}

// TestLabelsWrittenOnceAcrossAKilledWriter: many answer sets queued, a
// writer of their labels killed before its commit, and several writers at
// once afterwards (readers and the settler) leave every set with exactly
// one label per answer and the queue empty.
func TestLabelsWrittenOnceAcrossAKilledWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{overlap: 3, items: 10, annotators: 3})
	for _, u := range f.annotators {
		for {
			a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
			if errors.Is(err, attune.ErrNoWork) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			f.submit(t, a, u)
		}
	}
	if _, queued := labelsPerSet(t, db, f.project.ID, len(fullAnswers)); queued != 30 {
		t.Fatalf("%d answer sets queued for their labels; want 30", queued)
	}

	conn, err := pgx.Connect(ctx, db.Pool().Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := store.DeriveLabels(ctx, tx, f.project.ID, 20); err != nil || n != 20 {
		t.Fatalf("the writer to be killed took %d sets, %v", n, err)
	}
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if n := f.count(t, `SELECT count(*) FROM labels`); n != 0 {
		t.Fatalf("%d labels left by a writer killed before its commit", n)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := db.ExportLabels(ctx, f.project.ID, func(*export.Label) error { return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		if _, err := db.SettleQueued(ctx); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	if wrong, queued := labelsPerSet(t, db, f.project.ID, len(fullAnswers)); wrong != 0 || queued != 0 {
		t.Fatalf("%d answer sets without exactly %d labels, %d still queued", wrong, len(fullAnswers), queued)
	}
}

// TestLabelsWrittenWithinTheBound: with a Settler running and nobody
// reading, a submit's label rows are written within SettleBound of it.
func TestLabelsWrittenWithinTheBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	f := newProject(t, db, projectOpts{overlap: 1, items: 1, annotators: 1})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go db.NewSettler(slog.New(slog.DiscardHandler)).Run(runCtx)
	ann := f.annotators[0]
	a, err := db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.submit(t, a, ann)
	submitted := time.Now()
	for {
		wrong, queued := labelsPerSet(t, db, f.project.ID, len(fullAnswers))
		if wrong == 0 && queued == 0 {
			break
		}
		if time.Since(submitted) > store.SettleBound {
			t.Fatalf("labels not written %v after the submit", store.SettleBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
