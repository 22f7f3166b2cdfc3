package pipeline_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// heldEndStore holds every FinishTurn until release is closed, telling ended about each.
type heldEndStore struct {
	*pipelinetest.MemStore
	hold    chan struct{}
	ended   chan struct{}
	release chan struct{}
}

func (s *heldEndStore) FinishTurn(ctx context.Context, end echogate.TurnEnd) error {
	select {
	case <-s.hold:
		s.ended <- struct{}{}
		<-s.release
	default:
	}
	return s.MemStore.FinishTurn(ctx, end)
}

// okModel answers "ok" at once and keeps nothing of the request.
type okModel struct{}

func (okModel) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	if err := onDelta(agent.Delta{Text: "ok"}); err != nil {
		return agent.Response{}, err
	}
	return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: "ok"}, FinishReason: "stop",
		Usage: echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, InputTokens: 10, OutputTokens: 1}}, nil
}

// TestTurnWaitingForItsEndKeepsNoContext guards what a turn keeps while it waits for the write
// of its end, which under load is where most in-flight turns are (the store's writer is the
// bottleneck): not its model context nor the agent loop's copy of the conversation, only its
// own few new messages and records. Every session has a full history window (cached, as
// between the turns of an active conversation); the heap grown by the turns held in
// FinishTurn is compared with the size of one window of messages.
func TestTurnWaitingForItsEndKeepsNoContext(t *testing.T) {
	const sessions, window = 40, 80
	store := &heldEndStore{MemStore: pipelinetest.NewMemStore(), hold: make(chan struct{}),
		ended: make(chan struct{}, sessions), release: make(chan struct{})}
	h := start(t, opts{cfg: pipeline.Config{HistoryMessages: window}, deps: func(d *pipeline.Deps) {
		d.Store, d.Model = store, okModel{}
	}})
	ctx := context.Background()
	text := strings.Repeat("a line of an ordinary conversation ", 4) // ~140 bytes
	for i := range sessions {
		key := echogate.SessionKey(fmt.Sprintf("web:s%d", i))
		for j := range window {
			role := echogate.RoleUser
			if j%2 == 1 {
				role = echogate.RoleAssistant
			}
			if err := store.AppendMessages(ctx, key, fmt.Sprintf("t_old%d", j/2), []echogate.Message{{Role: role, Content: text}}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A first turn per session fills the history cache, as in a running conversation.
	for i := range sessions {
		h.submit(msg(fmt.Sprintf("s%d", i), "u", "hello"))
		h.waitDone()
	}
	before := liveHeap()
	close(store.hold)
	for i := range sessions {
		h.submit(msg(fmt.Sprintf("s%d", i), "u", "and now?"))
	}
	for range sessions {
		select {
		case <-store.ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the turns did not reach FinishTurn within 10s")
		}
	}
	perTurn := (liveHeap() - before) / sessions
	close(store.release)
	for range sessions {
		h.waitDone()
	}
	// One copy of the window is 80 messages of 144 bytes (their text is shared), 11.5 KB; the
	// turn's own state (Turn, responder, records, contexts, logger, the fakes' records) about 9 KB.
	windowBytes := int64(window) * 144
	t.Logf("%d bytes held per turn waiting for its end (one window of messages: %d bytes)", perTurn, windowBytes)
	if perTurn > windowBytes {
		t.Errorf("a turn waiting for its end holds %d bytes, want at most %d (less than one copy of its history window)", perTurn, windowBytes)
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
