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
		lazy, tokens, shown bool
		unread              int // events published that the stream has not read, ev included
		ringBytes           int // the replay buffer's bytes
		ev                  wireEvent
		want                bool
	}{
		"idle stream, start":                {false, false, false, 1, 0, ev(echogate.TurnStarted), true},
		"idle stream, later delta":          {false, true, true, 1, 0, ev(echogate.TurnDelta), true},
		"window open, start":                {true, false, false, 1, 0, ev(echogate.TurnStarted), false},
		"window open, the first token":      {true, false, true, 2, 0, ev(echogate.TurnDelta), true},
		"first window, the first token":     {true, false, false, 2, 0, ev(echogate.TurnDelta), false},
		"first window, done":                {true, false, false, 3, 0, ev(echogate.TurnDone), true},
		"window open, a later token":        {true, true, true, 3, 0, ev(echogate.TurnDelta), false},
		"window open, tool call":            {true, true, true, 3, 0, ev(echogate.TurnToolCall), false},
		"window open, done":                 {true, true, true, 3, 0, ev(echogate.TurnDone), true},
		"window open, a quarter unread":     {true, true, true, 16, 0, ev(echogate.TurnToolResult), true},
		"window open, the buffer half full": {true, true, true, 3, 32 << 10, ev(echogate.TurnDelta), true},
	} {
		s := newSession("s", time.Time{})
		s.lastSeq = 100 + int64(tt.unread) - 1
		s.events.bytes = tt.ringBytes
		sub := &subscriber{next: 100, lazy: tt.lazy, tokens: tt.tokens, shown: tt.shown}
		if got := s.needsWake(sub, &tt.ev, lim); got != tt.want {
			t.Errorf("%s: needsWake = %v, want %v", name, got, tt.want)
		}
	}
}

// postAsync posts a chat message from a goroutine: the response's headers wait for the stream's
// first flush.
func postAsync(ctx context.Context, e *env, body string) <-chan *http.Response {
	posted := make(chan *http.Response, 1)
	go func() {
		defer close(posted)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/api/chat", strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			posted <- resp
		}
	}()
	return posted
}

// A turn that ends within the stream's first flush window reaches the client whole when it
// ends (here the window is an hour: the end is never held back), and a first token that comes
// after the headers went out reaches the client while the turn still runs.
func TestStreamFlushes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	done := func(session, id string) echogate.TurnEvent {
		d := turnEv(echogate.TurnDone, session, id, "Hello")
		d.Status = "done"
		return d
	}

	e := newEnv(t, Config{FlushInterval: time.Hour})
	posted := postAsync(ctx, e, `{"session":"fast","text":"hi"}`)
	ev := e.sink.next(t)
	for _, d := range []string{"", "Hel", "lo"} {
		typ := echogate.TurnDelta
		if d == "" {
			typ = echogate.TurnStarted
		}
		e.ch.ObserveTurn(turnEv(typ, "fast", ev.ID, d))
	}
	e.ch.ObserveTurn(done("fast", ev.ID))
	resp := <-posted
	if resp == nil {
		t.Fatal("POST /api/chat got no response after the turn ended")
	}
	got := types(newSSEReader(resp.Body).rest(t))
	resp.Body.Close()
	if want := []string{"start", "delta", "delta", "done"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("fast turn's stream = %q, want %q", got, want)
	}

	e = newEnv(t, Config{FlushInterval: 20 * time.Millisecond})
	posted = postAsync(ctx, e, `{"session":"slow","text":"hi"}`)
	ev = e.sink.next(t)
	resp = <-posted // the headers went out with the first window
	if resp == nil {
		t.Fatal("POST /api/chat got no response headers")
	}
	defer resp.Body.Close()
	e.ch.ObserveTurn(turnEv(echogate.TurnStarted, "slow", ev.ID, ""))
	e.ch.ObserveTurn(turnEv(echogate.TurnDelta, "slow", ev.ID, "Hel"))
	r := newSSEReader(resp.Body)
	if a, b := r.nextEvent(t), r.nextEvent(t); a.Type != "start" || b.Type != "delta" || b.turn(t).Text != "Hel" {
		t.Fatalf("events while the turn runs = %q %q, want start and the delta Hel", a.Type, b.Type)
	}
	e.ch.ObserveTurn(done("slow", ev.ID))
	if rest := types(r.rest(t)); len(rest) != 1 || rest[0] != "done" {
		t.Fatalf("rest of the stream = %q, want [done]", rest)
	}
}
