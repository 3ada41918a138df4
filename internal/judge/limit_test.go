package judge

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAIMDHalvesOnRateLimitAndGrowsBackSlowly(t *testing.T) {
	t.Parallel()
	a := newAIMD(8)
	ctx := context.Background()
	a.acquire(ctx)
	a.release(true)
	if a.current() != 4 {
		t.Fatalf("after a 429 the limit is %d, want 4", a.current())
	}
	a.acquire(ctx)
	a.release(true)
	if a.current() != 2 {
		t.Fatalf("after a second 429 the limit is %d, want 2", a.current())
	}
	// One success per slot of the current limit adds one.
	for range 2 {
		a.acquire(ctx)
		a.release(false)
	}
	if a.current() != 3 {
		t.Fatalf("after 2 successes at limit 2 the limit is %d, want 3", a.current())
	}
	for range 100 {
		a.acquire(ctx)
		a.release(false)
	}
	if a.current() != 8 {
		t.Fatalf("the limit grew to %d, want the configured 8", a.current())
	}
}

func TestAIMDNeverExceedsLimit(t *testing.T) {
	t.Parallel()
	a := newAIMD(3)
	var inflight, peak atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := a.acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			n := inflight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			for range 100 {
				runtime.Gosched() // hold the slot a while so others must queue
			}
			inflight.Add(-1)
			a.release(false)
		})
	}
	wg.Wait()
	if peak.Load() > 3 {
		t.Fatalf("%d calls in flight at once, limit 3", peak.Load())
	}
}

func TestAIMDAcquireHonoursContext(t *testing.T) {
	t.Parallel()
	a := newAIMD(1)
	a.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.acquire(ctx); err == nil {
		t.Fatal("acquire on a full limiter with a cancelled context succeeded")
	}
	a.release(false)
	if err := a.acquire(context.Background()); err != nil {
		t.Fatal("the slot was lost to the cancelled waiter")
	}
}
