package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
)

// doneReplier signals answered turns by event id and keeps nothing else.
type doneReplier struct{ waiters sync.Map } // event id -> chan struct{}

func (r *doneReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{Platform: echogate.PlatformWeb, Channel: out.Conversation.Channel, ID: "m"}, nil
}

func (r *doneReplier) ObserveTurn(ev echogate.TurnEvent) {
	if ev.Type != echogate.TurnDone {
		return
	}
	if ch, ok := r.waiters.LoadAndDelete(ev.EventID); ok {
		close(ch.(chan struct{}))
	}
}

// retainedHeap is the live heap after a full collection.
func retainedHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestRetainedHeapIsBounded is a regression guard for memory that stays after load: the gateway
// core (SQLite store, the OpenAI provider against a model server, the pipeline with its caches)
// runs S sessions × M short turns, then S×3 more sessions; the heap retained per extra session
// must stay small. Per-session state that is never evicted (a buffer, a map entry with the
// transcript) shows up here as kilobytes per session.
func TestRetainedHeapIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few thousand turns")
	}
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{Lenient: true, Forget: true,
		Default: &agenttest.Answer{Text: "A short answer from the model."}})
	defer fake.Close()
	dir := t.TempDir()
	vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-test"}
	cfg, err := loadConfig("", func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := newCore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep := &doneReplier{}
	if err := c.newPipeline(map[string]pipeline.Replier{echogate.PlatformWeb: rep}); err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = c.pipeline.Run(pctx) }()
	defer func() { stop(); <-ran }()
	<-c.pipeline.Started()

	seq := 0
	run := func(from, to, turns int) {
		t.Helper()
		const parallel = 16
		for s := from; s < to; s += parallel {
			for turn := range turns {
				var chans []chan struct{}
				for k := s; k < min(s+parallel, to); k++ {
					seq++
					id := fmt.Sprintf("e%d", seq)
					ch := make(chan struct{})
					rep.waiters.Store(id, ch)
					chans = append(chans, ch)
					ev := echogate.InboundEvent{ID: id, Kind: echogate.KindDirect, Text: fmt.Sprintf("message %d of a short conversation", turn),
						Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: fmt.Sprintf("s%d", k), DM: true},
						Actor:        echogate.Actor{ID: fmt.Sprintf("u%d", k)}, ReceivedAt: time.Now()}
					if err := c.pipeline.Submit(ctx, ev); err != nil {
						t.Fatalf("Submit = %v", err)
					}
				}
				for _, ch := range chans {
					select {
					case <-ch:
					case <-time.After(time.Minute):
						t.Fatalf("a turn was not answered within a minute")
					}
				}
			}
		}
	}
	const sessions, turns = 64, 3
	run(0, sessions, turns)
	base := retainedHeap()
	run(sessions, 4*sessions, turns)
	after := retainedHeap()
	grown := int64(after) - int64(base)
	perSession := grown / (3 * sessions)
	t.Logf("retained heap %d KiB after %d sessions, %d KiB after %d: %d bytes per extra session",
		base>>10, sessions, after>>10, 4*sessions, perSession)
	// A session's cached window of short messages and its bookkeeping are a few KiB.
	if perSession > 8<<10 {
		t.Errorf("retained heap grew %d bytes per session over %d sessions of %d turns, want at most 8 KiB", perSession, 3*sessions, turns)
	}
}
