package web

import (
	"testing"

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
	ch.mu.Lock()
	s := ch.sessions["bench"]
	stop := make(chan struct{})
	for range 3 {
		sub := s.subscribe("")
		go func() {
			for {
				select {
				case <-sub.wake:
					ch.mu.Lock()
					_, _, _ = s.pending(sub)
					ch.mu.Unlock()
				case <-stop:
					return
				}
			}
		}()
	}
	s.subscribe("")
	ch.mu.Unlock()
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
