package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// A 64 KiB answer streamed by a fast model in 16-byte deltas (4096 of them, as fast as the
// channel takes them), read at full speed over SSE, 20 times: every stream delivers the whole
// text and ends with done. (Answers of 4 KiB or more dropped even a loopback reader, "client fell
// behind", when each stream had a 256-event queue; this one dropped at event 257.)
func TestSSEFastReaderGetsLongAnswers(t *testing.T) {
	e := newEnv(t, Config{})
	answer := strings.Repeat("abc ", 16<<10) // 64 KiB
	const delta = 16
	for round := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		session := fmt.Sprintf("fast%d", round%3) // sessions are reused across turns too
		resp := e.post(t, ctx, "/api/chat", `{"session":"`+session+`","text":"long please"}`)
		ev := e.sink.next(t)
		go func() {
			e.ch.ObserveTurn(turnEv(echogate.TurnStarted, session, ev.ID, ""))
			for i := 0; i < len(answer); i += delta {
				e.ch.ObserveTurn(turnEv(echogate.TurnDelta, session, ev.ID, answer[i:i+delta]))
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

// A client that re-attaches (GET /api/chat/stream) in the middle of a fast 64 KiB answer gets
// the turn from its start, whole, ending with done (at 32 KiB the first re-attach dropped too).
func TestSSEReattachDuringLongAnswer(t *testing.T) {
	e := newEnv(t, Config{})
	answer := strings.Repeat("wxyz", 16<<10)
	for round := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		session := fmt.Sprintf("re%d", round)
		resp := e.post(t, ctx, "/api/chat", `{"session":"`+session+`","text":"long"}`)
		ev := e.sink.next(t)
		e.ch.ObserveTurn(turnEv(echogate.TurnStarted, session, ev.ID, ""))
		half := make(chan struct{})
		go func() {
			for i := 0; i < len(answer); i += 4 {
				if i == len(answer)/2 {
					close(half)
				}
				e.ch.ObserveTurn(turnEv(echogate.TurnDelta, session, ev.ID, answer[i:i+4]))
			}
			done := turnEv(echogate.TurnDone, session, ev.ID, answer)
			done.Status = "done"
			e.ch.ObserveTurn(done)
		}()
		<-half
		re := e.get(t, ctx, "/api/chat/stream?session="+session, nil)
		for name, body := range map[string]*http.Response{"post": resp, "re-attach": re} {
			got := newSSEReader(body.Body).rest(t)
			body.Body.Close()
			var text strings.Builder
			for _, g := range got {
				if g.Type == "delta" {
					text.WriteString(g.turn(t).Text)
				}
			}
			if len(got) == 0 || got[len(got)-1].Type != "done" || text.String() != answer {
				t.Fatalf("round %d %s: %d events, %d bytes of deltas, last %q; want the whole answer and done",
					round, name, len(got), text.Len(), types(got)[max(0, len(got)-1):])
			}
		}
		cancel()
	}
}

// deadlineRecorder is a ResponseWriter that records the write deadlines set on it.
type deadlineRecorder struct {
	httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// Each write to a client has at least WriteTimeout to complete, and a stream's batches share
// one deadline update instead of one per write and one per flush.
func TestSSEWriteDeadlineShared(t *testing.T) {
	const timeout = time.Minute
	rec := &deadlineRecorder{ResponseRecorder: *httptest.NewRecorder()}
	sw := &sseWriter{w: rec, rc: http.NewResponseController(rec), timeout: timeout}
	start := time.Now()
	for i := range 10 {
		if err := sw.event(wireEvent{TurnEvent: turnEv(echogate.TurnDelta, "s", "e", fmt.Sprint(i))}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if len(rec.deadlines) != 1 {
		t.Fatalf("write deadlines set for 10 batches = %d, want 1", len(rec.deadlines))
	}
	if d := rec.deadlines[0]; d.Before(start.Add(timeout)) {
		t.Errorf("write deadline = now+%s, want at least now+%s", d.Sub(start), timeout)
	}
	if got := strings.Count(rec.Body.String(), "event: delta"); got != 10 {
		t.Errorf("events written = %d, want 10", got)
	}
}
