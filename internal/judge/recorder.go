package judge

import (
	"context"
	"sync"
	"time"

	"github.com/attune/attune/internal/store"
)

// maxRecordBatch bounds the calls one statement stores: 18 parameters
// each as arrays, well inside one message.
const maxRecordBatch = 256

// recordTimeout bounds one batch's write. The write is not cancelled with
// the job that asked for it: a call that came back has been paid for, and
// its batch holds other jobs' calls too.
const recordTimeout = 30 * time.Second

// recorder stores the calls that come back, many in one statement. A
// call is recorded by its caller, which returns only once its call is
// stored (or the write failed, with that error): a paid call is stored
// before its answer is used, so that a crash never pays for it again.
//
// Callers take turns writing (group commit): the first caller to find no
// write under way writes every call waiting, up to maxRecordBatch; calls
// that arrive meanwhile wait for the next write, which the first of them
// makes. Under load, batches fill while the last one is written; alone, a
// call is written at once. No goroutine outlives its caller, so nothing
// is left unwritten when the process stops.
type recorder struct {
	write func(context.Context, []store.JudgeCall) error

	mu      sync.Mutex
	writing bool
	waiting []*pendingCall

	// queued, when set (by tests), is called each time a call starts to
	// wait behind a write under way: the signal that the queue has grown,
	// so a test need not poll the queue's length.
	queued func()
}

type pendingCall struct {
	call store.JudgeCall
	err  error
	done chan struct{} // closed once the call is written, or failed
	lead chan struct{} // signalled when this caller is to write next
}

func newRecorder(write func(context.Context, []store.JudgeCall) error) *recorder {
	return &recorder{write: write}
}

// record stores c with the calls waiting beside it and returns the
// write's error.
func (rec *recorder) record(ctx context.Context, c store.JudgeCall) error {
	p := &pendingCall{call: c, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	rec.mu.Lock()
	rec.waiting = append(rec.waiting, p)
	if rec.writing {
		rec.mu.Unlock()
		if rec.queued != nil {
			rec.queued()
		}
		select {
		case <-p.done:
			return p.err
		case <-p.lead:
			// The last writer left this call waiting, first in line.
		}
		rec.mu.Lock()
	}
	rec.writing = true
	n := min(len(rec.waiting), maxRecordBatch)
	batch := rec.waiting[:n:n]
	rec.waiting = rec.waiting[n:]
	rec.mu.Unlock()

	calls := make([]store.JudgeCall, len(batch))
	for i, b := range batch {
		calls[i] = b.call
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	err := rec.write(wctx, calls)
	if err != nil && len(calls) > 1 {
		// One call the database refuses must not cost the others their
		// record: each is written alone, and gets its own error.
		for i := range calls {
			batch[i].err = rec.write(wctx, calls[i:i+1])
		}
	} else {
		for _, b := range batch {
			b.err = err
		}
	}
	cancel()
	for _, b := range batch {
		close(b.done)
	}

	rec.mu.Lock()
	if len(rec.waiting) > 0 {
		rec.waiting[0].lead <- struct{}{} // hand the next write on
	} else {
		rec.writing = false
	}
	rec.mu.Unlock()
	return p.err
}
