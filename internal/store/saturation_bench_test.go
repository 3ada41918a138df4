package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
// time between items, until the queue is empty. Beside it, in the same
// run, the minimal submit-and-next on the same semantics
// (dbtest.SubmitReference) with as many annotators, the two in
// alternating rounds (the reference first in odd rounds, second in even
// ones), so that a machine shared with other work slows both alike. It
// reports the medians of the rounds and their ratio.
func BenchmarkSaturationSQL(b *testing.B) {
	// One annotator shows the cost of the statements alone; 64 show it
	// with the contention of many claimers on the same few items.
	for _, annotators := range []int{1, 64} {
		b.Run(fmt.Sprintf("annotators=%d", annotators), func(b *testing.B) { saturateSQL(b, annotators) })
	}
}

func saturateSQL(b *testing.B, annotators int) {
	const items = 1000
	overlap := min(3, annotators)
	ctx := context.Background()

	var rates, refRates []float64
	for b.Loop() {
		b.StopTimer()
		round := len(rates)
		// A database per round: the fixture's users and project are named
		// the same each time. The store's pool is as large as the
		// reference's.
		dbURL := dbtest.NewURL(b)
		db, err := store.Open(ctx, dbtest.WithParam(b, dbURL, "pool_max_conns", strconv.Itoa(dbtest.ReferenceWorkers)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(db.Close)
		f := newProject(b, db, projectOpts{overlap: overlap, items: items, annotators: annotators})
		if round%2 == 0 {
			refRates = append(refRates, dbtest.SubmitReference(b, dbURL, annotators, items, overlap))
		}
		b.StartTimer()

		// The settler runs as a server runs it: it writes the label rows
		// of the answer sets submitted (and settles gold), and the round
		// ends when it has caught up, so what the submits leave to it is
		// timed with them.
		settleCtx, stopSettler := context.WithCancel(ctx)
		settler := db.NewSettler(slog.New(slog.DiscardHandler))
		settled := make(chan struct{})
		go func() { defer close(settled); settler.Run(settleCtx) }()
		var submits atomic.Int64
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
		for {
			var queued bool
			if err := db.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM labels_pending) OR EXISTS (SELECT 1 FROM settle_queue)`).Scan(&queued); err != nil {
				b.Fatal(err)
			}
			if !queued {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		rates = append(rates, float64(submits.Load())/time.Since(start).Seconds())
		stopSettler()
		<-settled
		b.StopTimer()
		var wrong int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM (
			SELECT i.id FROM items i LEFT JOIN answer_sets s ON s.item_id = i.id WHERE i.project_id = $1 GROUP BY i.id HAVING count(s.id) <> $2) x`,
			f.project.ID, overlap).Scan(&wrong); err != nil {
			b.Fatal(err)
		}
		if wrong != 0 {
			b.Fatalf("%d items without exactly %d answer sets", wrong, overlap)
		}
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets s
			WHERE s.project_id = $1 AND (SELECT count(*) FROM labels l WHERE l.answer_set_id = s.id) <> $2`,
			f.project.ID, len(fullAnswers)).Scan(&wrong); err != nil {
			b.Fatal(err)
		}
		if wrong != 0 {
			b.Fatalf("%d answer sets without exactly %d labels", wrong, len(fullAnswers))
		}
		// The round's connections go before the next round opens its own.
		db.Close()
		if round%2 == 1 {
			refRates = append(refRates, dbtest.SubmitReference(b, dbURL, annotators, items, overlap))
		}
		b.StartTimer()
	}
	rate, ref := medianRate(rates), medianRate(refRates)
	b.ReportMetric(rate, "submits/s")
	b.ReportMetric(ref, "ref-submits/s")
	b.ReportMetric(rate/ref, "x_of_minimal")
	b.Logf("%d annotators through the store alone: %.0f submit-and-next/s (rounds %.0f); minimal submit-and-next, same annotators: %.0f/s (rounds %.0f); ratio of medians %.2f",
		annotators, rate, rates, ref, refRates, rate/ref)
}

// medianRate is the middle of the figures (the mean of the middle two for an
// even count).
func medianRate(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
