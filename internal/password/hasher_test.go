package password

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// heavy is costly enough (4 MiB, 3 passes) that computations started
// together overlap in time.
var heavy = Params{MemoryKiB: 4 * 1024, Time: 3, Threads: 1}

func TestHasherBoundsComputations(t *testing.T) {
	t.Parallel()
	h := NewHasher(heavy, 2)
	hash, err := Hash("right password", heavy)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Go(func() {
			var err error
			switch i % 3 {
			case 0:
				_, err = h.Verify(context.Background(), hash, "wrong password")
			case 1:
				_, err = h.Hash(context.Background(), "some password")
			case 2:
				err = h.Miss(context.Background())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.peak > 2 {
		t.Fatalf("%d computations ran at once, want at most 2", h.peak)
	}
	if h.busy != 0 {
		t.Fatalf("%d slots still held after every call returned", h.busy)
	}
}

func TestHasherWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	h := NewHasher(heavy, 1)
	hash, _ := Hash("right password", heavy)
	// Someone else holds the only slot.
	if err := h.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Verify(ctx, hash, "right password"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify while waiting on a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := h.Hash(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Hash: %v, want context.Canceled", err)
	}
	if err := h.Miss(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Miss: %v, want context.Canceled", err)
	}
	// A waiter whose context ends while in line leaves the line.
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := h.Verify(ctx, hash, "right password")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting Verify after cancel: %v", err)
	}
	h.release()
	if ok, err := h.Verify(context.Background(), hash, "right password"); !ok || err != nil {
		t.Fatalf("Verify with a free slot = %v, %v", ok, err)
	}
}

// TestMissTakesNoMemory shows the point of Miss: an unknown account costs
// the time of a computation, not its 19 MiB. It is not parallel, so that
// the allocation counts are this test's alone.
func TestMissTakesNoMemory(t *testing.T) {
	h := NewHasher(Default, 1)
	hash, err := Hash("right password", Default)
	if err != nil {
		t.Fatal(err)
	}
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	verify := allocated(func() {
		if ok, err := h.Verify(context.Background(), hash, "wrong password"); ok || err != nil {
			t.Fatalf("Verify(wrong) = %v, %v", ok, err)
		}
	})
	if want := uint64(Default.MemoryKiB) << 10; verify < want {
		t.Fatalf("Verify allocated %d bytes, want at least the %d of argon2id", verify, want)
	}
	miss := allocated(func() {
		if err := h.Miss(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	if miss > 64<<10 {
		t.Fatalf("Miss allocated %d bytes, want under 64 KiB", miss)
	}
	long := allocated(func() {
		if ok, err := h.Verify(context.Background(), hash, strings.Repeat("x", MaxLength+1)); ok || err != nil {
			t.Fatalf("Verify(too long) = %v, %v", ok, err)
		}
	})
	if long > 64<<10 {
		t.Fatalf("Verify of a password too long to match allocated %d bytes, want under 64 KiB", long)
	}
}

func TestMissWaitsTheTypicalComputation(t *testing.T) {
	t.Parallel()
	h := NewHasher(Params{MemoryKiB: 64, Time: 1, Threads: 1}, 1)
	// A miss before any measurement measures one computation itself.
	if err := h.Miss(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	measured := h.typical
	h.typical = 30 * time.Millisecond
	h.mu.Unlock()
	if measured <= 0 {
		t.Fatalf("the first Miss measured %v", measured)
	}
	start := time.Now()
	if err := h.Miss(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("Miss returned after %v, before the typical 30ms", d)
	}
	// Measurements move the average an eighth of the way.
	h.observe(110 * time.Millisecond)
	if h.typical != 40*time.Millisecond {
		t.Fatalf("average after one 110ms computation = %v, want 40ms", h.typical)
	}
}
