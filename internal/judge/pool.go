package judge

import "time"

// goPool runs functions on goroutines that outlive them. A runner starts
// a goroutine for each rubric item of each item it answers; a new
// goroutine's stack grows through the HTTP client and JSON on every call,
// one copy of the whole deep stack per doubling. A pooled goroutine keeps
// the stack it grew: it waits for the next function holding a quarter of
// it in use, so the collector, which halves an idle goroutine's stack
// that uses less, leaves it whole.
type goPool struct {
	tasks chan func()
	idle  time.Duration
}

func newGoPool(idle time.Duration) *goPool {
	return &goPool{tasks: make(chan func()), idle: idle}
}

// Go runs f on an idle goroutine, or on a new one when none is waiting.
func (p *goPool) Go(f func()) {
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

// work runs f, then whatever comes next, and ends once nothing has come
// for the idle time.
func (p *goPool) work(f func()) {
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for f != nil {
		f()
		t.Reset(p.idle)
		f = p.next(t)
	}
}

// stackHeld is what a waiting goroutine holds of its stack: a quarter of
// the 64 KiB a call to a provider grows it to, through the HTTP client and
// JSON encoding.
const stackHeld = 16 << 10

// next waits for a function, or returns nil when t fires first. Its frame
// holds stackHeld of the stack in use while it waits.
//
//go:noinline
func (p *goPool) next(t *time.Timer) func() {
	var frame [stackHeld]byte
	keep(&frame[0])
	select {
	case f := <-p.tasks:
		return f
	case <-t.C:
		return nil
	}
}

//go:noinline
func keep(*byte) {}
