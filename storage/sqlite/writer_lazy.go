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

// lazyCalls are the held calls; owned by the writer goroutine.
type lazyCalls struct {
	calls []*writeReq
	timer *time.Timer // runs while calls are held
	// timedOut, when set (tests only), is called after held calls committed on their deadline.
	timedOut atomic.Pointer[func()]
	// delay, when set (tests only), replaces lazyDelay.
	delay atomic.Int64
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
		if l.timer == nil {
			l.timer = time.NewTimer(d)
		} else {
			l.timer.Reset(d)
		}
	}
	return true
}

// due is the channel of the hold's deadline (nil while nothing is held: never ready).
func (l *lazyCalls) due() <-chan time.Time {
	if len(l.calls) == 0 || l.timer == nil {
		return nil
	}
	return l.timer.C
}

// takeInto appends the held calls to batch, oldest first, and forgets them.
func (l *lazyCalls) takeInto(batch []*writeReq) []*writeReq {
	if len(l.calls) == 0 {
		return batch
	}
	batch = append(batch, l.calls...)
	clear(l.calls)
	l.calls = l.calls[:0]
	if l.timer != nil {
		l.timer.Stop()
	}
	return batch
}

// stop releases the timer (the writer is exiting).
func (l *lazyCalls) stop() {
	if l.timer != nil {
		l.timer.Stop()
	}
}

// flushLazy commits the held calls now, in one transaction of their own.
func (w *writer) flushLazy() {
	if len(w.lazy.calls) == 0 {
		return
	}
	w.batch = w.lazy.takeInto(w.batch[:0])
	w.runBatch(w.batch)
	w.stats.batches.Add(1)
	w.stats.calls.Add(int64(len(w.batch)))
	clear(w.batch)
	w.committed()
}

// enqueueLazy queues fn to be written behind and returns at once (blocking only while the
// queue is full); fn runs on a context that keeps ctx's values but not its cancellation (the
// caller does not wait). It fails only when the writer is closed.
func (w *writer) enqueueLazy(ctx context.Context, fn func(tx *wtx) error) error {
	ctx = context.WithoutCancel(ctx)
	req := &writeReq{ctx: ctx, lazy: true, fn: fn, done: make(chan error, 1)}
	select {
	case <-w.stop:
		return ErrClosed
	default:
	}
	// A call queued while Close runs may miss the final commit: like a crash, it leaves the
	// event unfinished, for the next start's replay.
	select {
	case w.queue <- req:
		return nil
	case <-w.stop:
		return ErrClosed
	}
}

// sync waits until every call queued before it, held ones included, has committed.
func (w *writer) sync(ctx context.Context) error {
	return w.do(ctx, false, func(*wtx) error { return nil })
}
