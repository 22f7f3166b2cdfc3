package pipeline_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// claimLockStore is a shared store that claims an event with its session's lock in one call
// (pipeline.ClaimLocker). gate, when set, holds the first such call until it is closed.
type claimLockStore struct {
	*pendLockStore
	claims, locks, unlocks atomic.Int64
	notLocked              bool // another replica holds every session: claims take no lock
	gate                   chan struct{}
	entered                chan struct{}
	gateOnce               sync.Once
}

func (s *claimLockStore) ClaimEventLocking(ctx context.Context, key string, payload []byte, at time.Time, session echogate.SessionKey) (bool, func(), bool, *echogate.PendingTurn, error) {
	s.claims.Add(1)
	s.gateOnce.Do(func() {
		if s.gate != nil {
			close(s.entered)
			<-s.gate
		}
	})
	first, err := s.mem.ClaimEvent(ctx, key, payload, at)
	if err != nil || !first || s.notLocked {
		return first, func() {}, false, nil, err
	}
	s.locks.Add(1)
	var pend *echogate.PendingTurn
	if p, err := s.mem.GetPending(ctx, session); err == nil {
		pend = &p
	}
	var once sync.Once
	return true, func() { once.Do(func() { s.unlocks.Add(1) }) }, true, pend, nil
}

func newClaimLockStore() (*claimLockStore, *pipelinetest.MemStore) {
	mem := pipelinetest.NewMemStore()
	return &claimLockStore{pendLockStore: &pendLockStore{lockingStore: lockingStore{mem}, mem: mem}}, mem
}

// TestIdleSessionClaimsWithItsLock: on a store that claims with the lock (ClaimLocker), an
// event of an idle session is claimed and its session locked in one call; drain takes no lock
// of its own, and releases the one it was handed. A platform's retry of the same event takes
// no lock and is not answered again.
func TestIdleSessionClaimsWithItsLock(t *testing.T) {
	st, mem := newClaimLockStore()
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = st }}, agenttest.Reply("hi"), agenttest.Reply("again"))
	first := msg("s1", "ann", "hello")
	h.submit(first)
	if d := h.waitDone(); d.Text != "hi" {
		t.Fatalf("first turn: %+v, want \"hi\"", d)
	}
	h.submit(msg("s2", "bob", "more")) // another idle session
	if d := h.waitDone(); d.Text != "again" {
		t.Fatalf("second turn: %+v, want \"again\"", d)
	}
	h.submit(first) // a platform's retry: not the first claim, so no lock (whichever path claims it)
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hello|assistant:hi"; got != want {
		t.Errorf("transcript of s1 = %s, want %s", got, want)
	}
	if got, want := strings.Join(h.transcript("s2"), "|"), "user:more|assistant:again"; got != want {
		t.Errorf("transcript of s2 = %s, want %s", got, want)
	}
	if c, l, n := st.claims.Load(), st.locks.Load(), st.withLock.Load(); c < 2 || l != 2 || n != 0 {
		t.Errorf("claims with the lock = %d, locks taken with them = %d, separate lock calls = %d; want ≥ 2, 2, 0", c, l, n)
	}
	waitFor(t, func() bool { return st.unlocks.Load() == 2 }, "both locks released")
}

// TestEventsQueuedWhileClaimingWithTheLock: events of a session that arrive while its first
// event is being claimed with the lock queue behind it (they are claimed on their own) and run
// after it, in order, each once; no worker starts before the first event is queued.
func TestEventsQueuedWhileClaimingWithTheLock(t *testing.T) {
	st, mem := newClaimLockStore()
	st.gate, st.entered = make(chan struct{}), make(chan struct{})
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = st }}, agenttest.Reply("one"), agenttest.Reply("two"))
	errs := make(chan error, 1)
	go func() { errs <- h.p.Submit(context.Background(), msg("s1", "ann", "first")) }()
	<-st.entered
	h.submit(msg("s1", "ann", "second")) // claimed apart: the mailbox is being claimed with the lock
	close(st.gate)
	if err := <-errs; err != nil {
		t.Fatalf("Submit(first) = %v", err)
	}
	h.waitDone()
	h.waitDone()
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:first|assistant:one|user:second|assistant:two"; got != want {
		t.Errorf("transcript = %s, want %s (the first event first)", got, want)
	}
	if c, n := st.claims.Load(), st.withLock.Load(); c != 1 || n != 1 {
		t.Errorf("claims with the lock = %d, separate lock calls = %d; want 1 and 1 (the second event locks in drain)", c, n)
	}
}

// TestClaimWithoutTheLockWaitsInDrain: an event claimed while another replica holds its session
// (no lock taken with the claim) is locked by drain as before.
func TestClaimWithoutTheLockWaitsInDrain(t *testing.T) {
	st, mem := newClaimLockStore()
	st.notLocked = true
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = st }}, agenttest.Reply("hi"))
	h.submit(msg("s1", "ann", "hello"))
	if d := h.waitDone(); d.Text != "hi" {
		t.Fatalf("turn: %+v, want \"hi\"", d)
	}
	if c, n := st.claims.Load(), st.withLock.Load(); c != 1 || n != 1 {
		t.Errorf("claims with the lock = %d, separate lock calls = %d; want 1 and 1", c, n)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
