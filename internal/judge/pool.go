package judge

import "time"

// goPool runs functions on goroutines that outlive them. A runner starts
// a goroutine for each rubric item of each item it answers; a new
// goroutine's stack grows through the HTTP client and JSON on every call,
// and a goroutine that waits for the next function keeps what it grew.
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
	for {
		f()
		t.Reset(p.idle)
		select {
		case f = <-p.tasks:
		case <-t.C:
			return
		}
	}
}
