package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// needsWake(sub, ev) = whether publishing ev wakes the stream of sub. A stream in its flush
// window (lazy) is woken only for what must go out at once; the rest waits for the window's end.
func TestNeedsWake(t *testing.T) {
	lim := ringLimits{events: 64, bytes: 64 << 10}
	ev := func(typ echogate.TurnEventType) wireEvent {
		return wireEvent{TurnEvent: turnEv(typ, "s", "e1", "x")}
	}
	for name, tt := range map[string]struct {
		lazy, tokens bool
		unread       int // events published that the stream has not read, ev included
		ringBytes    int // the replay buffer's bytes
		ev           wireEvent
		want         bool
	}{
		"idle stream, start":                {false, false, 1, 0, ev(echogate.TurnStarted), true},
		"idle stream, later delta":          {false, true, 1, 0, ev(echogate.TurnDelta), true},
		"window open, start":                {true, false, 1, 0, ev(echogate.TurnStarted), false},
		"window open, the first token":      {true, false, 2, 0, ev(echogate.TurnDelta), true},
		"window open, a later token":        {true, true, 3, 0, ev(echogate.TurnDelta), false},
		"window open, tool call":            {true, true, 3, 0, ev(echogate.TurnToolCall), false},
		"window open, done":                 {true, true, 3, 0, ev(echogate.TurnDone), true},
		"window open, a quarter unread":     {true, true, 16, 0, ev(echogate.TurnToolResult), true},
		"window open, the buffer half full": {true, true, 3, 32 << 10, ev(echogate.TurnDelta), true},
	} {
		s := newSession("s", time.Time{})
		s.lastSeq = 100 + int64(tt.unread) - 1
		s.events.bytes = tt.ringBytes
		sub := &subscriber{next: 100, lazy: tt.lazy, tokens: tt.tokens}
		if got := s.needsWake(sub, &tt.ev, lim); got != tt.want {
			t.Errorf("%s: needsWake = %v, want %v", name, got, tt.want)
		}
	}
}

// The first token of a turn reaches the client at once, without waiting for the stream's flush
// window (here an hour, so a stream that waited for it would never show the token before the
// turn ends); the rest of the turn follows.
func TestFirstTokenIsNotHeldBack(t *testing.T) {
	e := newEnv(t, Config{FlushInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// The response's headers wait for the stream's first flush: post from a goroutine.
	type result struct {
		resp *http.Response
		err  error
	}
	posted := make(chan result, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/api/chat", strings.NewReader(`{"session":"ft","text":"hi"}`))
		if err != nil {
			posted <- result{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		posted <- result{resp, err}
	}()
	ev := e.sink.next(t)
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "ft", ev.ID, ""))
	e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "ft", ev.ID, "Hel"))
	res := <-posted
	if res.err != nil {
		t.Fatalf("POST /api/chat before the turn ended: %v", res.err)
	}
	defer res.resp.Body.Close()
	r := newSSEReader(res.resp.Body)
	if got := r.nextEvent(t); got.Type != "start" {
		t.Fatalf("first event = %q, want start", got.Type)
	}
	if got := r.nextEvent(t); got.Type != "delta" || got.turn(t).Text != "Hel" {
		t.Fatalf("second event = %q %q, want the delta Hel while the turn still runs", got.Type, got.Data)
	}
	e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "ft", ev.ID, "lo"))
	done := turnEv(echogate.TurnDone, "ft", ev.ID, "Hello")
	done.Status = "done"
	e.ch.ObserveTurn(done)
	rest := r.rest(t)
	if got := types(rest); len(got) != 2 || got[0] != "delta" || got[1] != "done" || rest[0].turn(t).Text != "lo" {
		t.Fatalf("rest of the stream = %q, want [delta done] with the delta lo", got)
	}
}
