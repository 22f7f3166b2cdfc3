package pipeline_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

type upsertCounter struct {
	*pipelinetest.MemStore
	upserts atomic.Int64
}

// UpsertSession counts the call once the record is written, so a test that waits for the count
// then sees the record.
func (s *upsertCounter) UpsertSession(ctx context.Context, si echogate.SessionInfo) error {
	defer s.upserts.Add(1)
	return s.MemStore.UpsertSession(ctx, si)
}

// The session record is written at a session's first event and then at most once a minute; a
// session deleted in between gets its record back at its next turn.
func TestSessionRecordWrittenOncePerMinute(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	uc := &upsertCounter{MemStore: mem}
	// Replicas (lockingStore): a session deleted by another process is noticed at the next turn.
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = lockingStore{uc} }},
		agenttest.Reply("1"), agenttest.Reply("2"), agenttest.Reply("3"), agenttest.Reply("4"), agenttest.Reply("5"))
	ctx := context.Background()
	key := echogate.SessionKey("web:s1")
	turn := func(text string) {
		t.Helper()
		h.submit(msg("s1", "ann", text))
		if d := h.waitDone(); d.Status != "done" {
			t.Fatalf("turn %q: done = %+v", text, d)
		}
	}
	turn("a")
	turn("b") // its history read fills the cache; the record is still fresh
	turn("c")
	if n := uc.upserts.Load(); n > 2 {
		t.Errorf("UpsertSession called %d times in three turns within a second, want at most 2 (the first turn, and the second when the first could not mark it)", n)
	}
	before := uc.upserts.Load()
	h.advance(2 * time.Minute)
	turn("d")
	// The record is written beside the turn and may land just after "done".
	deadline := time.Now().Add(5 * time.Second)
	for uc.upserts.Load() == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := uc.upserts.Load(); n != before+1 {
		t.Errorf("UpsertSession after two minutes: %d more calls, want 1", n-before)
	}
	info, err := mem.GetSession(ctx, key)
	if err != nil || !info.UpdatedAt.Equal(*h.now.Load()) {
		t.Errorf("session after the later turn = %+v, %v; want UpdatedAt moved to now", info, err)
	}
	// Deleted meanwhile by another replica: the next turn records the session again.
	if err := mem.DeleteSession(ctx, key); err != nil {
		t.Fatal(err)
	}
	turn("e")
	if _, err := mem.GetSession(ctx, key); err != nil {
		t.Errorf("GetSession after a turn in a deleted session = %v, want it recorded again", err)
	}
}
