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
