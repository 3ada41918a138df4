package account

import (
	"context"
	"sync"
	"time"
)

// Pacer spaces the answers to failed sign-ins from each address that has
// failed too often (store.SignInStart.AddressSlowed): one every interval,
// in turn. It slows a flood of made-up emails, or of guesses at many
// accounts, without ever standing between a right password and its
// account, which is why it paces answers and is not a lock. It is this
// process's own: replicas each pace their share.
type Pacer struct {
	every time.Duration
	// maxWait bounds how long a turn may be ahead; beyond it a failure is
	// answered at once with when to try again, so that a flood holds no
	// more than a few requests per address.
	maxWait time.Duration
	mu      sync.Mutex
	next    map[string]time.Time // an address's next free turn
}

// maxPaced bounds the addresses the pacer remembers before it forgets the
// ones whose turns have passed.
const maxPaced = 4096

// NewPacer returns a pacer that answers an address's failures every apart;
// 0 or less means a second.
func NewPacer(every time.Duration) *Pacer {
	if every <= 0 {
		every = time.Second
	}
	return &Pacer{every: every, maxWait: min(8*every, 30*time.Second), next: map[string]time.Time{}}
}

// turn takes address's next turn at now: it returns how long to wait for
// it, or, when the turn is more than maxWait ahead, ok false and how long
// until the next free one (then nothing is taken).
func (p *Pacer) turn(address string, now time.Time) (wait time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.next[address]
	if at.Before(now) {
		at = now
	}
	if wait = at.Sub(now); wait > p.maxWait {
		return wait, false
	}
	if len(p.next) >= maxPaced {
		for a, t := range p.next {
			if t.Before(now) {
				delete(p.next, a)
			}
		}
	}
	p.next[address] = at.Add(p.every)
	return wait, true
}

// sleep waits d or until ctx ends, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
