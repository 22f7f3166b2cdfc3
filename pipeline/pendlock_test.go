package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// pendLockStore is a store shared by replicas whose lock reads the session's paused turn
// (pipeline.PendingLocker); it counts the separate GetPending reads.
type pendLockStore struct {
	lockingStore
	mem        *pipelinetest.MemStore
	getPending atomic.Int64
	withLock   atomic.Int64
	// answered are the event keys another replica completed while they waited here (set
	// before the pipeline starts).
	answered map[string]bool
}

func (s *pendLockStore) GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	s.getPending.Add(1)
	return s.mem.GetPending(ctx, key)
}

func (s *pendLockStore) TryLockSessionPending(ctx context.Context, key echogate.SessionKey, event string) (func(), bool, *echogate.PendingTurn, bool, error) {
	s.withLock.Add(1)
	p, err := s.mem.GetPending(ctx, key)
	switch {
	case errors.Is(err, echogate.ErrNotFound):
		return func() {}, true, nil, s.answered[event], nil
	case err != nil:
		return func() {}, false, nil, false, err
	}
	return func() {}, true, &p, s.answered[event], nil
}

// TestPausedTurnReadWithTheSessionLock: on a store whose session lock reads the paused turn,
// an event is routed from that read (no GetPending of its own): a plain turn runs, a pause is
// found and an approval resumes it.
func TestPausedTurnReadWithTheSessionLock(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	st := &pendLockStore{lockingStore: lockingStore{mem}, mem: mem}
	del := newTool("delete_file", tools.Sensitive, "deleted")
	h := start(t, opts{store: mem, tools: []tools.Tool{del}, deps: func(d *pipeline.Deps) { d.Store = st }},
		agenttest.Reply("hi"), agenttest.CallTool("delete_file", `{"path":"x"}`), agenttest.Reply("gone"))
	h.submit(msg("s1", "ann", "hello"))
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("plain turn status = %s, want done", d.Status)
	}
	h.submit(msg("s1", "ann", "delete x"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("status = %s, want paused", d.Status)
	}
	p := promptOf(t, h)
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, p.Ref))
	if d := h.waitDone(); d.Status != "done" || d.Text != "gone" {
		t.Fatalf("after approval: %+v, want done with \"gone\"", d)
	}
	if n := del.calls.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hello|assistant:hi|user:delete x|assistant→delete_file|tool:deleted|assistant:gone"; got != want {
		t.Errorf("transcript = %s\nwant %s", got, want)
	}
	if n := st.getPending.Load(); n != 0 {
		t.Errorf("GetPending calls = %d, want 0 (each event's paused turn comes with its lock)", n)
	}
	if n := st.withLock.Load(); n != 3 {
		t.Errorf("TryLockSessionPending calls = %d, want 3 (one per event)", n)
	}
}

// TestEventAnsweredElsewhereIsNotAnsweredAgain: an event another replica took over (after
// agent.replay_after) and answered while it waited here for the session's lock is dropped when
// the lock comes: no model call, nothing in the transcript; the next event runs.
func TestEventAnsweredElsewhereIsNotAnsweredAgain(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	first := msg("s1", "ann", "answered elsewhere")
	st := &pendLockStore{lockingStore: lockingStore{mem}, mem: mem, answered: map[string]bool{first.DedupeKey(): true}}
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = st }}, agenttest.Reply("hi"))
	h.submit(first)
	h.submit(msg("s1", "ann", "hello"))
	if d := h.waitDone(); d.Status != "done" || d.Text != "hi" {
		t.Fatalf("next event: %+v, want done with the model's first reply \"hi\"", d)
	}
	if got, want := strings.Join(h.transcript("s1"), "|"), "user:hello|assistant:hi"; got != want {
		t.Errorf("transcript = %s, want %s (the event answered elsewhere left out)", got, want)
	}
}

// releaseStore records, per turn's end, whether it may give the session's lock back with it.
type releaseStore struct {
	*pendLockStore
	mu   sync.Mutex
	ends []string
}

func (s *releaseStore) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	s.mu.Lock()
	s.ends = append(s.ends, fmt.Sprintf("%s:%v", end.Turn.Status, end.ReleaseSession))
	s.mu.Unlock()
	return s.mem.FinishTurn(ctx, end)
}

// TestTurnEndReleasesTheSessionLock: on a store shared by replicas, a turn's end says the
// session's lock may go with it (TurnEnd.ReleaseSession) when nothing after the end needs it:
// a plain turn, not a pause (it outlives the turn) nor a resumed turn (its session may be
// deleted after the end).
func TestTurnEndReleasesTheSessionLock(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	st := &releaseStore{pendLockStore: &pendLockStore{lockingStore: lockingStore{mem}, mem: mem}}
	del := newTool("delete_file", tools.Sensitive, "deleted")
	h := start(t, opts{store: mem, tools: []tools.Tool{del}, deps: func(d *pipeline.Deps) { d.Store = st }},
		agenttest.Reply("hi"), agenttest.CallTool("delete_file", `{"path":"x"}`), agenttest.Reply("gone"))
	h.submit(msg("s1", "ann", "hello"))
	h.waitDone()
	h.submit(msg("s1", "ann", "delete x"))
	h.waitDone()
	h.submit(reaction("s1", "ann", echogate.ReactionApprove, promptOf(t, h).Ref))
	h.waitDone()
	st.mu.Lock()
	defer st.mu.Unlock()
	if got, want := strings.Join(st.ends, " "), "done:true paused:false done:false"; got != want {
		t.Errorf("turn ends (status:release) = %s, want %s", got, want)
	}
}
