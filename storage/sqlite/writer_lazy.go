package sqlite

import (
	"context"
	"sync/atomic"
	"time"
)

// Writes behind: a call whose durability guards nothing (the completion of an event whose
// turn's end is already durable) need not pay a commit of its own. The writer holds it until
// its next transaction, which commits it with whatever comes next (typically the next event's
// claim, which then shares its table and index pages), or for at most lazyDelay when nothing
// comes: turns up to a second apart share their commits, and a crash leaves at most a second
// of completions to the replay. Nobody waits for it: its failure is logged. Close commits the held calls; a crash
// loses them, which callers must tolerate (see FinishTurn). Calls run in queue order, so a
// later call (a reopen, a read that flushes first) sees the held call's effect.
const lazyDelay = time.Second

// lazyCalls are the held calls; guarded by the writer's mu.
type lazyCalls struct {
	calls []*writeReq
	// timer runs while calls are held. It is made once (init), so the writer goroutine can
	// wait on its channel without mu: Reset and Stop (under mu) only change when it fires.
	timer *time.Timer
	// timedOut, when set (tests only), is called after held calls committed on their deadline.
	timedOut atomic.Pointer[func()]
	// delay, when set (tests only), replaces lazyDelay.
	delay atomic.Int64
}

// init makes the stopped timer.
func (l *lazyCalls) init() {
	l.timer = time.NewTimer(time.Hour)
	l.timer.Stop()
}

// hold keeps r for the next transaction and reports true, or reports false when enough calls
// are held that r should commit now (with them).
func (l *lazyCalls) hold(r *writeReq) bool {
	if len(l.calls) >= maxBatch-1 {
		return false
	}
	l.calls = append(l.calls, r)
	if len(l.calls) == 1 {
		d := time.Duration(l.delay.Load())
		if d <= 0 {
			d = lazyDelay
		}
		l.timer.Reset(d)
	}
	return true
}

// due is the channel of the hold's deadline: it delivers only while calls are held (a value
// received after another transaction took them finds nothing to flush).
func (l *lazyCalls) due() <-chan time.Time { return l.timer.C }

// takeInto appends the held calls to batch, oldest first, and forgets them.
func (l *lazyCalls) takeInto(batch []*writeReq) []*writeReq {
	if len(l.calls) == 0 {
		return batch
	}
	batch = append(batch, l.calls...)
	clear(l.calls)
	l.calls = l.calls[:0]
	l.timer.Stop()
	return batch
}

// stop releases the timer (the writer is exiting).
func (l *lazyCalls) stop() { l.timer.Stop() }

// flushLazy commits the held calls now, in one transaction of their own. Called with mu held.
func (w *writer) flushLazy() {
	if len(w.lazy.calls) == 0 {
		return
	}
	w.batch = w.lazy.takeInto(w.batch[:0])
	w.runCounted()
}

// enqueueLazy queues fn to be written behind and returns at once (blocking only while the
// queue is full); fn runs on a context that keeps ctx's values but not its cancellation (the
// caller does not wait). When the writer is idle with nothing queued, the call is held at once
// (see holdDirect), without waking the writer goroutine. It fails only when the writer is
// closed.
func (w *writer) enqueueLazy(ctx context.Context, fn func(tx *wtx) error) error {
	ctx = context.WithoutCancel(ctx)
	req := &writeReq{ctx: ctx, lazy: true, fn: fn, done: make(chan error, 1)}
	select {
	case <-w.stop:
		return ErrClosed
	default:
	}
	if held, err := w.holdDirect(req); held {
		return err
	}
	// A call queued while Close runs may miss the final commit: like a crash, it leaves the
	// event unfinished, for the next start's replay.
	w.pending.Add(1)
	select {
	case w.queue <- req:
		return nil
	case <-w.stop:
		w.pending.Add(-1)
		return ErrClosed
	}
}

// sync waits until every call queued before it, held ones included, has committed. It always
// goes through the queue, behind every call queued before it.
func (w *writer) sync(ctx context.Context) error {
	req, err := w.enqueue(ctx, false, func(*wtx) error { return nil })
	if err != nil {
		return err
	}
	return w.wait(ctx, req)
}
