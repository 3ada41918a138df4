package judge

import (
	"context"
	"sync"
)

// aimd limits the calls in flight to one judge from this process. The
// limit halves when the provider answers 429 and grows back by one after a
// full limit's worth of successes (additive increase, multiplicative
// decrease, as TCP does), never above the judge's configured concurrency.
type aimd struct {
	mu       sync.Mutex
	max      int
	limit    int
	inflight int
	streak   int // successes since the last change of limit
	waiters  []chan struct{}
}

func newAIMD(max int) *aimd {
	if max < 1 {
		max = 1
	}
	return &aimd{max: max, limit: max}
}

// acquire waits for a free slot or for ctx to end.
func (a *aimd) acquire(ctx context.Context) error {
	a.mu.Lock()
	if a.inflight < a.limit {
		a.inflight++
		a.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	a.waiters = append(a.waiters, ch)
	a.mu.Unlock()
	select {
	case <-ch:
		return nil // the slot was handed over by release
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		for i, w := range a.waiters {
			if w == ch {
				a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Handed a slot just as ctx ended: give it back.
		a.inflight--
		a.wake()
		return ctx.Err()
	}
}

// release frees a slot, adjusting the limit to how the call went.
func (a *aimd) release(rateLimited bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight--
	if rateLimited {
		a.limit = max(1, a.limit/2)
		a.streak = 0
	} else if a.limit < a.max {
		a.streak++
		if a.streak >= a.limit {
			a.limit++
			a.streak = 0
		}
	}
	a.wake()
}

// current reports the limit now, for progress pages and tests.
func (a *aimd) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// wake hands free slots to waiters in arrival order. Called with mu held.
func (a *aimd) wake() {
	for a.inflight < a.limit && len(a.waiters) > 0 {
		ch := a.waiters[0]
		a.waiters = a.waiters[1:]
		a.inflight++
		close(ch)
	}
}

// limiters keeps one aimd per judge for the life of the process.
type limiters struct {
	mu sync.Mutex
	m  map[int64]*aimd
}

func (l *limiters) get(judgeID int64, max int) *aimd {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[int64]*aimd{}
	}
	a := l.m[judgeID]
	if a == nil || a.max != max {
		// A changed setting takes effect for new calls; calls in flight
		// release into the old limiter, which is then dropped.
		a = newAIMD(max)
		l.m[judgeID] = a
	}
	return a
}
