package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/attune/attune/internal/dbtest"
)

// TestRunListenerWakesOnNotifyRun: a listener wakes for a run's
// notification sent on another connection, and, with none sent, waits
// until its context ends.
func TestRunListenerWakesOnNotifyRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	l, err := db.ListenRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)

	quiet, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = l.Wait(quiet)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with nothing notified: %v, want the deadline", err)
	}

	if err := db.NotifyRun(ctx, 42); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := l.Wait(wctx); err != nil {
		t.Fatalf("Wait after NotifyRun: %v", err)
	}
}
