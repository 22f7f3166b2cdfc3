package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// flakyPause fails the first fails reads of a session's pause, as a store answering "database
// is locked" or a dropped connection does, and reports each failed read on failed.
type flakyPause struct {
	*completionWatch
	fails  atomic.Int32
	failed chan struct{}
}

func (s *flakyPause) GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error) {
	if s.fails.Add(-1) >= 0 {
		s.failed <- struct{}{}
		return echogate.PendingTurn{}, errors.New("flaky store: database is locked")
	}
	return s.MemStore.GetPending(ctx, key)
}

// diedWhilePausing leaves store as a crash right after a turn's pause was saved leaves it: the
// event claimed and unfinished, its turn running, the pause without its prompt's reference.
func diedWhilePausing(t *testing.T, store *pipelinetest.MemStore) echogate.InboundEvent {
	t.Helper()
	ev := msg("s1", "ann", "delete a")
	ev.ReceivedAt = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	payload, _ := json.Marshal(ev)
	ctx := context.Background()
	_, err := store.ClaimEvent(ctx, ev.DedupeKey(), payload, ev.ReceivedAt)
	must(t, err)
	must(t, store.CreateTurn(ctx, echogate.TurnRecord{ID: "t_pausing", Session: ev.SessionKey(), EventKey: ev.DedupeKey(),
		Status: echogate.TurnRunning, StartedAt: ev.ReceivedAt}))
	must(t, store.SavePending(ctx, echogate.PendingTurn{Session: ev.SessionKey(), Turn: "t_pausing", Kind: echogate.PauseApproval,
		CallID: "call_1", Tool: "delete_file", State: []byte(`{"pending":[{"id":"call_1","name":"delete_file"}]}`),
		RequestedBy: "web:ann", CreatedAt: ev.ReceivedAt}))
	return ev
}

// A replayed event whose turn log cannot be read is never answered blind. Before, a failed read
// of the session's pause counted as "no pause": the turn that died while pausing was closed as
// interrupted and its own event superseded its pause, so the model was asked again and a
// second prompt was posted. A read that fails once is retried; one that keeps failing leaves
// the event unfinished, and the next start recovers it.
func TestReplayWithAnUnreadableTurnLog(t *testing.T) {
	t.Run("read fails once", func(t *testing.T) {
		store := pipelinetest.NewMemStore()
		ev := diedWhilePausing(t, store)
		flaky := &flakyPause{completionWatch: &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})},
			failed: make(chan struct{}, 1)}
		flaky.fails.Store(1)
		h := start(t, opts{store: store, deps: func(d *pipeline.Deps) { d.Store = flaky }}, agenttest.Reply("superseded"))
		select {
		case <-flaky.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the replayed event was not completed within 10s")
		}
		if n := h.model.Calls(); n != 0 {
			t.Errorf("model calls = %d, want 0: the replay superseded its own pause", n)
		}
		if posts := h.rep.Posts(); len(posts) != 1 || posts[0].Out.Kind != echogate.OutApprovalPrompt {
			t.Errorf("posts = %q, want the one prompt of the pause (posted again, never seen)", h.rep.Texts())
		}
		if tr, _ := store.GetTurn(context.Background(), "t_pausing"); tr.Status != echogate.TurnPaused {
			t.Errorf("turn record = %s, want paused", tr.Status)
		}
	})
	t.Run("read keeps failing", func(t *testing.T) {
		store := pipelinetest.NewMemStore()
		ev := diedWhilePausing(t, store)
		flaky := &flakyPause{completionWatch: &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})},
			failed: make(chan struct{}, 16)}
		flaky.fails.Store(1 << 20)
		h := start(t, opts{store: store, deps: func(d *pipeline.Deps) { d.Store = flaky }}, agenttest.Reply("superseded"))
		for range 3 { // every attempt of the recovery's read
			select {
			case <-flaky.failed:
			case <-time.After(10 * time.Second):
				t.Fatal("the recovery did not read the pause three times within 10s")
			}
		}
		h.stop() // drains the event's handling
		ctx := context.Background()
		if n := h.model.Calls(); n != 0 || len(h.rep.Posts()) != 0 {
			t.Errorf("model calls = %d, posts %q; want none while the turn log is unreadable", n, h.rep.Texts())
		}
		if evs, _ := store.UnfinishedEvents(ctx, time.Now(), 0); len(evs) != 1 || evs[0].Key != ev.DedupeKey() {
			t.Fatalf("unfinished events = %+v, want the replayed event left for a later replay", evs)
		}
		if _, err := store.GetPending(ctx, ev.SessionKey()); err != nil {
			t.Errorf("pause after the deferred replay: %v, want it kept", err)
		}

		// The next start reads the turn log and recovers the pause: one prompt, no model call.
		watch := &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})}
		h2 := start(t, opts{store: store, deps: func(d *pipeline.Deps) { d.Store = watch }}, agenttest.Reply("superseded"))
		select {
		case <-watch.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the event was not completed at the next start within 10s")
		}
		if n := h2.model.Calls(); n != 0 {
			t.Errorf("model calls at the next start = %d, want 0", n)
		}
		if posts := h2.rep.Posts(); len(posts) != 1 || posts[0].Out.Kind != echogate.OutApprovalPrompt {
			t.Errorf("posts at the next start = %q, want the pause's one prompt", h2.rep.Texts())
		}
		if tr, _ := store.GetTurn(ctx, "t_pausing"); tr.Status != echogate.TurnPaused {
			t.Errorf("turn record = %s, want paused", tr.Status)
		}
	})
	t.Run("retried in this process once the store reads again", func(t *testing.T) {
		// Every read of the first recovery fails; the deferred event is queued again after
		// DeferredRetry, and that replay recovers the pause without a restart.
		store := pipelinetest.NewMemStore()
		ev := diedWhilePausing(t, store)
		flaky := &flakyPause{completionWatch: &completionWatch{MemStore: store, key: ev.DedupeKey(), done: make(chan struct{})},
			failed: make(chan struct{}, 16)}
		flaky.fails.Store(3)
		h := start(t, opts{store: store, cfg: pipeline.Config{DeferredRetry: 10 * time.Millisecond},
			deps: func(d *pipeline.Deps) { d.Store = flaky }}, agenttest.Reply("superseded"))
		select {
		case <-flaky.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the deferred event was not retried and completed within 10s")
		}
		if n := len(flaky.failed); n != 3 {
			t.Errorf("failed reads = %d, want the first recovery's 3", n)
		}
		if n := h.model.Calls(); n != 0 {
			t.Errorf("model calls = %d, want 0", n)
		}
		if posts := h.rep.Posts(); len(posts) != 1 || posts[0].Out.Kind != echogate.OutApprovalPrompt {
			t.Errorf("posts = %q, want the pause's one prompt", h.rep.Texts())
		}
		if tr, _ := store.GetTurn(context.Background(), "t_pausing"); tr.Status != echogate.TurnPaused {
			t.Errorf("turn record = %s, want paused", tr.Status)
		}
	})
}
