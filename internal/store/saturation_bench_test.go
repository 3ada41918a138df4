package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// BenchmarkSaturationSQL is web's BenchmarkSaturation without the web:
// annotators submit-and-next through the store alone (answers stored,
// assignment closed, next item claimed, as the HTTP submit does), with no
// time between items, until the queue is empty. It is the ceiling the
// HTTP figure can reach on this machine, beside the same single-row
// INSERT … ON CONFLICT reference measured in the same run.
func BenchmarkSaturationSQL(b *testing.B) {
	// One annotator shows the cost of the statements alone; 64 show it
	// with the contention of many claimers on the same few items.
	for _, annotators := range []int{1, 64} {
		b.Run(fmt.Sprintf("annotators=%d", annotators), func(b *testing.B) { saturateSQL(b, annotators) })
	}
}

func saturateSQL(b *testing.B, annotators int) {
	const (
		overlap = 3
		items   = 1000
	)
	ctx := context.Background()

	var submits atomic.Int64
	var elapsed time.Duration
	var refRate float64
	runs := 0
	for b.Loop() {
		b.StopTimer()
		runs++
		// A database per run: the fixture's users and project are named
		// the same each time. The server's pool is as large as the
		// reference's.
		dbURL := dbtest.NewURL(b)
		db, err := store.Open(ctx, dbtest.WithParam(b, dbURL, "pool_max_conns", strconv.Itoa(dbtest.ReferenceWorkers)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(db.Close)
		f := newProject(b, db, projectOpts{overlap: min(overlap, annotators), items: items, annotators: annotators})
		rate, _ := dbtest.InsertReference(b, dbURL, dbtest.ReferenceWorkers, 20_000, nil)
		refRate += rate
		b.StartTimer()

		start := time.Now()
		var wg sync.WaitGroup
		for _, u := range f.annotators {
			wg.Go(func() {
				a, err := db.NextAssignment(ctx, f.project.ID, u.ID)
				for err == nil {
					var res store.SubmitResult
					res, err = db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, ProjectID: f.project.ID, UserID: u.ID,
						Answers: fullAnswers, ActiveMS: 15000, ClaimNext: true})
					if err != nil {
						break
					}
					submits.Add(1)
					if a, err = res.Next, res.NextErr; a == nil && err == nil {
						err = attune.ErrNoWork
					}
				}
				if !errors.Is(err, attune.ErrNoWork) {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		b.StopTimer()
		var wrong int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM (
			SELECT i.id FROM items i LEFT JOIN answer_sets s ON s.item_id = i.id WHERE i.project_id = $1 GROUP BY i.id HAVING count(s.id) <> $2) x`,
			f.project.ID, min(overlap, annotators)).Scan(&wrong); err != nil {
			b.Fatal(err)
		}
		if wrong != 0 {
			b.Fatalf("%d items without exactly %d answer sets", wrong, overlap)
		}
		b.StartTimer()
	}
	rate := float64(submits.Load()) / elapsed.Seconds()
	refRate /= float64(runs)
	b.ReportMetric(rate, "submits/s")
	b.ReportMetric(refRate, "ref-inserts/s")
	b.ReportMetric(rate/refRate, "submits-vs-inserts")
	b.Logf("%d annotators through the store alone: %.0f submit-and-next/s; reference, %d goroutines of single-row INSERT … ON CONFLICT: %.0f/s (ratio %.3f)",
		annotators, rate, dbtest.ReferenceWorkers, refRate, rate/refRate)
}
