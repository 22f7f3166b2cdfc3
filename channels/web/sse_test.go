package web

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

// A 64 KiB answer streamed by a fast model in 4-byte deltas, read at full speed over SSE, 20
// times: every stream delivers the whole text and ends with done. (Answers of 4 KiB or more
// dropped even a loopback reader, "client fell behind", when each stream had a 256-event queue.)
func TestSSEFastReaderGetsLongAnswers(t *testing.T) {
	e := newEnv(t, Config{})
	answer := strings.Repeat("abc ", 16<<10) // 64 KiB
	for round := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		session := fmt.Sprintf("fast%d", round%3) // sessions are reused across turns too
		resp := e.post(t, ctx, "/api/chat", `{"session":"`+session+`","text":"long please"}`)
		ev := e.sink.next(t)
		go func() {
			e.ch.ObserveTurn(turnEv(echogate.TurnStarted, session, ev.ID, ""))
			for i := 0; i < len(answer); i += 4 {
				e.ch.ObserveTurn(turnEv(echogate.TurnDelta, session, ev.ID, answer[i:i+4]))
			}
			done := turnEv(echogate.TurnDone, session, ev.ID, answer)
			done.Status = "done"
			e.ch.ObserveTurn(done)
		}()
		got := newSSEReader(resp.Body).rest(t)
		resp.Body.Close()
		cancel()
		var text strings.Builder
		for _, g := range got {
			if g.Type == "delta" {
				text.WriteString(g.turn(t).Text)
			}
		}
		if len(got) == 0 || got[len(got)-1].Type != "done" {
			t.Fatalf("round %d: %d events, last %q; want the stream to end with done", round, len(got), types(got)[max(0, len(got)-1):])
		}
		if text.Len() != len(answer) || text.String() != answer {
			t.Fatalf("round %d: deltas hold %d bytes, want the whole %d-byte answer", round, text.Len(), len(answer))
		}
		if w := got[len(got)-1].turn(t); w.Text != answer || w.Status != "done" {
			t.Fatalf("round %d: done = %d bytes, status %q; want the answer, done", round, len(w.Text), w.Status)
		}
	}
}

// A POST /api/chat holds no per-stream event buffer: its subscriber is a cursor and a wake-up.
func TestSubscriberIsCheap(t *testing.T) {
	ch, _ := New(Config{}, nil)
	ch.ObserveTurn(turnEv(echogate.TurnStarted, "c", "e", ""))
	ch.mu.Lock()
	sub := ch.sessions["c"].subscribe("e")
	ch.mu.Unlock()
	if cap(sub.wake) != 1 {
		t.Errorf("subscriber wake capacity = %d, want 1", cap(sub.wake))
	}
}
