package password

import (
	"context"
	"crypto/subtle"
	"runtime"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
)

// Hasher hashes and checks passwords for a server, bounding how many
// argon2id computations run at once. Each holds Params.MemoryKiB of memory
// (19 MiB by default) for its whole run, so without a bound a burst of
// sign-ins takes memory in proportion to the burst; with one, at most
// Slots computations are live, and the rest wait their turn in line.
//
// A Hasher is safe for concurrent use. The zero value is not usable: call
// NewHasher.
type Hasher struct {
	params Params
	slots  chan struct{}

	mu sync.Mutex
	// typical is the moving average of how long Verify's argon2id takes at
	// params on this machine; Miss waits this long. 0 until measured.
	typical time.Duration
	// busy and peak count the computations (and misses) holding a slot
	// now and at most, for tests.
	busy, peak int
}

// NewHasher returns a Hasher that hashes new passwords with p and runs at
// most slots computations at once; slots <= 0 means one per core the Go
// scheduler uses (GOMAXPROCS), since more at once would only queue on the
// cores while holding their memory.
func NewHasher(p Params, slots int) *Hasher {
	if slots <= 0 {
		slots = runtime.GOMAXPROCS(0)
	}
	return &Hasher{params: p, slots: make(chan struct{}, slots)}
}

// Slots returns how many computations may run at once.
func (h *Hasher) Slots() int { return cap(h.slots) }

// acquire waits for a slot until ctx ends, in which case it returns ctx's
// error and the caller must not compute.
func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	h.mu.Lock()
	h.busy++
	h.peak = max(h.peak, h.busy)
	h.mu.Unlock()
	return nil
}

func (h *Hasher) release() {
	h.mu.Lock()
	h.busy--
	h.mu.Unlock()
	<-h.slots
}

// Hash returns the hash of pw at the Hasher's parameters, waiting for a
// slot first. It returns ctx's error if ctx ends while waiting.
func (h *Hasher) Hash(ctx context.Context, pw string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return Hash(pw, h.params)
}

// Verify reports whether pw matches the stored hash, as the package-level
// Verify does, waiting for a slot first. It returns ctx's error if ctx
// ends while waiting, and ErrMalformedHash for a hash it cannot read.
//
// A password longer than MaxLength never matches; it is answered in the
// time a computation takes (see Miss), so that the answer's timing does
// not tell that the account exists.
func (h *Hasher) Verify(ctx context.Context, hash, pw string) (bool, error) {
	if len(pw) > MaxLength {
		return false, h.Miss(ctx)
	}
	ph, err := parse(hash)
	if err != nil {
		return false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	start := time.Now()
	got := argon2.IDKey([]byte(pw), ph.salt, ph.params.Time, ph.params.MemoryKiB, ph.params.Threads, uint32(len(ph.key)))
	if ph.params == h.params {
		h.observe(time.Since(start))
	}
	return subtle.ConstantTimeCompare(got, ph.key) == 1, nil
}

// Miss answers a sign-in for an account that does not exist: it waits for
// a slot like Verify, holds it for as long as Verify's computation
// typically takes at the Hasher's parameters, and returns, without
// computing anything or taking the computation's memory. It returns ctx's
// error if ctx ends first.
//
// The cost in time is equal on average, not in every detail: a real
// computation's time varies with the load on the cores, while Miss waits a
// moving average of recent ones, so many timings of both could be told
// apart statistically; the sign-in limits (per account and per address)
// keep the number of timings anyone can collect small. An account whose
// stored hash has other parameters than the Hasher's (a hash made before
// the parameters were raised) takes its own time. Until a Verify has been
// measured, the first Miss measures a real computation once, with its
// memory.
func (h *Hasher) Miss(ctx context.Context) error {
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer h.release()
	h.mu.Lock()
	wait := h.typical
	h.mu.Unlock()
	if wait == 0 {
		start := time.Now()
		argon2.IDKey([]byte("attune-miss"), make([]byte, saltLen), h.params.Time, h.params.MemoryKiB, h.params.Threads, keyLen)
		h.observe(time.Since(start))
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// observe folds one measured computation into the moving average, an
// eighth at a time, so that one slow outlier moves it little.
func (h *Hasher) observe(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.typical == 0 {
		h.typical = d
		return
	}
	h.typical += (d - h.typical) / 8
}
