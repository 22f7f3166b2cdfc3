package sqlite

import "context"

// Direct calls: a write call that finds the writer idle (its mutex free) and nothing queued
// runs its transaction on the caller's goroutine, with the calls held to be written behind,
// instead of queueing and waking the writer goroutine, which then wakes the caller again.
// Those two hand-offs (a futex wake and a scheduling round each) cost as much CPU as a small
// transaction. Everything else is as for a queued call: the same transaction code, one
// transaction per call unless held calls join it, and the call returns once it committed.
// While any call is queued (pending), calls queue behind it instead, so queue order holds and
// a busy writer still groups the calls that arrive while it commits.

// direct runs fn as its own transaction now, on the calling goroutine, when the writer is idle
// with nothing queued, and reports whether it did; when it did not, the caller queues fn.
// A closed writer is left to the queue, which reports ErrClosed.
func (w *writer) direct(ctx context.Context, fn func(tx *wtx) error) (ran bool, err error) {
	if w.pending.Load() != 0 || !w.mu.TryLock() {
		return false, nil
	}
	defer w.mu.Unlock()
	if !w.idle() {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	w.batch = append(w.lazy.takeInto(w.batch[:0]), req)
	w.runCounted()
	return true, <-req.done
}

// holdDirect holds the call written behind req at once when the writer is idle with nothing
// queued, and reports whether it took req (committing it now, with the calls held before it,
// when too many are held). When it did not, the caller queues req.
func (w *writer) holdDirect(req *writeReq) (took bool, err error) {
	if w.pending.Load() != 0 || !w.mu.TryLock() {
		return false, nil
	}
	defer w.mu.Unlock()
	if !w.idle() {
		return false, nil
	}
	if !w.lazy.hold(req) {
		w.batch = append(w.lazy.takeInto(w.batch[:0]), req)
		w.runCounted()
	}
	return true, nil
}

// idle reports, with mu held, that no call is queued and the writer is not stopping.
func (w *writer) idle() bool {
	if w.pending.Load() != 0 {
		return false
	}
	select {
	case <-w.stop:
		return false
	default:
		return true
	}
}
