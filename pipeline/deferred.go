package pipeline

import (
	"sync"
	"time"
)

// Retrying a deferred replay. recoverEvent defers an event whose turn log it cannot read (see
// recovery.deferred): nobody can tell what the dead turn did, so it is neither answered nor
// completed. With replicas (ReplayAfter) the janitor replays it again once its claim is stale;
// a single process per store would otherwise leave it until the next start, so that process
// queues the event again itself, after DeferredRetry doubled per attempt up to
// maxDeferredRetry, and keeps doing so while the store stays unreadable.
const (
	defaultDeferredRetry = 5 * time.Second
	maxDeferredRetry     = 10 * time.Minute
	// maxDeferred bounds the events waiting for a retry; past it an event waits for the next
	// start, as before.
	maxDeferred = 1024
)

// deferredReplays owns the retry timers. Its zero value is ready; close stops every timer and
// refuses new ones, so no retry is queued once Run is shutting down.
type deferredReplays struct {
	mu     sync.Mutex
	closed bool
	timers map[string]*time.Timer // event dedupe key → its retry
}

// deferReplay queues the event of it again later. It reports false when the event must wait for the
// next start instead (shutting down, too many waiting, or replicas, whose janitor replays it).
func (p *Pipeline) deferReplay(it item) bool {
	if p.shared.replicas() {
		return false
	}
	d := &p.deferred
	key := it.ev.DedupeKey()
	wait := deferredWait(p.cfg.DeferredRetry, it.deferrals)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || len(d.timers) >= maxDeferred {
		return false
	}
	if d.timers == nil {
		d.timers = make(map[string]*time.Timer)
	}
	if _, ok := d.timers[key]; ok {
		return true
	}
	next := item{ev: it.ev, replay: true, deferrals: it.deferrals + 1}
	d.timers[key] = time.AfterFunc(wait, func() { p.retryDeferred(key, next) })
	return true
}

// retryDeferred queues a deferred event as a replay, unless Run is shutting down (it is then
// replayed at the next start).
func (p *Pipeline) retryDeferred(key string, it item) {
	d := &p.deferred
	d.mu.Lock()
	closed := d.closed
	delete(d.timers, key)
	d.mu.Unlock()
	if closed {
		return
	}
	mk := mailboxKey(it.ev)
	sh := p.shardFor(mk)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Under the shard lock, as Submit: shutdown's barrier then sees this worker spawned.
	if p.state.Load() != stateRunning {
		return
	}
	mb := sh.boxes[mk]
	if mb == nil {
		mb = &mailbox{key: mk}
		sh.boxes[mk] = mb
		p.d.Metrics.Mailbox(0, 1)
	}
	p.log.Info("replaying deferred event", "event_id", it.ev.ID, "session", it.ev.SessionKey(), "attempt", it.deferrals+1)
	p.enqueueLocked(sh, mb, it)
}

// close stops the retries; the events they would have queued stay unfinished for the next start.
func (d *deferredReplays) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for k, t := range d.timers {
		t.Stop()
		delete(d.timers, k)
	}
}
