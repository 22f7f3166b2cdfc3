package web

import (
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// BenchmarkObserveTurn measures one turn event into a session with a replay buffer and four
// attached streams (three read what they are woken for, one never reads).
func BenchmarkObserveTurn(b *testing.B) {
	ch, err := New(Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ch.ObserveTurn(turnEv(echogate.TurnStarted, "bench", "e", ""))
	s := ch.lockLiveSession("bench")
	stop := make(chan struct{})
	for range 3 {
		sub := s.subscribe("")
		go func() {
			for {
				select {
				case <-sub.wake:
					s.mu.Lock()
					_, _, _ = s.pending(sub, nil)
					s.mu.Unlock()
				case <-stop:
					return
				}
			}
		}()
	}
	s.subscribe("")
	s.mu.Unlock()
	defer close(stop)
	ev := turnEv(echogate.TurnDelta, "bench", "e", "some streamed tokens ")
	b.ReportAllocs()
	for b.Loop() {
		ch.ObserveTurn(ev)
	}
}

// BenchmarkSubscribe measures what one SSE stream costs its session: a cursor and a one-slot
// wake-up (each POST /api/chat used to allocate a 256-event queue).
func BenchmarkSubscribe(b *testing.B) {
	ch, err := New(Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ch.ObserveTurn(turnEv(echogate.TurnStarted, "bench", "e", ""))
	s := ch.sessions["bench"]
	b.ReportAllocs()
	for b.Loop() {
		s.unsubscribe(s.subscribe("e"))
	}
}

// BenchmarkEncodeEvents: one plain turn's events (start, three deltas, done) encoded as SSE.
func BenchmarkEncodeEvents(b *testing.B) {
	now := time.Now()
	ev := func(typ echogate.TurnEventType, seq int64, text string) wireEvent {
		return wireEvent{TurnEvent: echogate.TurnEvent{Type: typ, Session: "web:bench-session", Turn: "01JTURNID0000000000000000", Seq: seq,
			Text: text, EventID: "EVENTID0000000000000000000", Time: now}}
	}
	evs := []wireEvent{ev(echogate.TurnStarted, 1, ""), ev(echogate.TurnDelta, 2, "Hello, "), ev(echogate.TurnDelta, 3, "this is <the> answer"),
		ev(echogate.TurnDelta, 4, " to \"your\" question.\n"), ev(echogate.TurnDone, 5, "Hello, this is <the> answer to \"your\" question.\n")}
	evs[4].Status = "done"
	sc := getScratch()
	b.ReportAllocs()
	for b.Loop() {
		sc.buf.Reset()
		for _, e := range evs {
			if err := sc.append(e); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(sc.buf.Len()), "bytes/turn")
}
