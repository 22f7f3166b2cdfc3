package pipeline

import (
	"runtime"
	"testing"

	"github.com/echogate/echogate"
)

// A worker whose mailbox ran empty waits for the next mailbox and drains it in the same
// goroutine, and exits when the pipeline closes.
func TestWorkerWaitsForTheNextMailbox(t *testing.T) {
	p := &Pipeline{handoff: make(chan mailboxJob), closing: make(chan struct{})}
	sh := &shard{boxes: map[echogate.SessionKey]*mailbox{}}
	a, b := &mailbox{key: "a", active: true}, &mailbox{key: "b", active: true}
	sh.boxes["a"], sh.boxes["b"] = a, b
	waitIdle := func(mb *mailbox) {
		for {
			sh.mu.Lock()
			done := !mb.active
			sh.mu.Unlock()
			if done && p.idleWorkers.Load() == 1 {
				return
			}
			runtime.Gosched()
		}
	}
	sh.mu.Lock()
	p.startWorkerLocked(sh, a)
	sh.mu.Unlock()
	waitIdle(a)
	p.handoff <- mailboxJob{sh, b} // what startWorkerLocked does when a worker waits
	waitIdle(b)
	if n := p.workersStarted.Load(); n != 1 {
		t.Errorf("workers started for two mailboxes one after the other = %d, want 1", n)
	}
	if len(sh.boxes) != 0 {
		t.Errorf("mailboxes left = %d, want both reaped", len(sh.boxes))
	}
	close(p.closing)
	p.workers.Wait() // the waiting worker exits
	if n := p.idleWorkers.Load(); n != 0 {
		t.Errorf("idle workers after close = %d, want 0", n)
	}
}

// While a Submit claims an idle mailbox's event with the session's lock (reserve's fast), an
// event queued meanwhile starts no worker: the claimed event, holding the lock, goes first, and
// a worker draining the other would wait for that lock behind it (TestEventsQueuedWhile-
// ClaimingWithTheLock runs both once the mark is cleared).
func TestMailboxBeingClaimedWithTheLockStartsNoWorker(t *testing.T) {
	p := &Pipeline{handoff: make(chan mailboxJob), closing: make(chan struct{}), cfg: Config{MailboxSize: 8}}
	sh := &shard{boxes: map[echogate.SessionKey]*mailbox{}}
	mb, fast, err := p.reserve(sh, "web:s", "web", true)
	if err != nil || !fast || !mb.locking {
		t.Fatalf("reserve of an idle mailbox = fast %v, locking %v, %v; want fast", fast, mb.locking, err)
	}
	mb2, fast2, err := p.reserve(sh, "web:s", "web", true)
	if err != nil || fast2 || mb2 != mb {
		t.Fatalf("second reserve = fast %v, %v; want the same mailbox, not fast", fast2, err)
	}
	sh.mu.Lock()
	mb.reserved--
	p.enqueueLocked(sh, mb, item{ev: echogate.InboundEvent{ID: "second"}})
	started := mb.active
	sh.mu.Unlock()
	if started {
		t.Fatal("a worker started while the mailbox's first event was being claimed with the lock")
	}
	close(p.closing)
}
