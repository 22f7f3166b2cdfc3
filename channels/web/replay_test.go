package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// finishTurn plays one whole turn of eventID in session: start, one delta, done.
func finishTurn(ch *Channel, session, eventID, answer string) {
	ch.ObserveTurn(turnEv(echogate.TurnStarted, session, eventID, ""))
	ch.ObserveTurn(turnEv(echogate.TurnDelta, session, eventID, answer))
	done := turnEv(echogate.TurnDone, session, eventID, answer)
	done.Status = "done"
	ch.ObserveTurn(done)
}

func replayLen(ch *Channel, session string) int {
	if s := ch.lockLiveSession(session); s != nil {
		defer s.mu.Unlock()
		return len(s.events.buf)
	}
	return -1
}

// checkReplayBytes: the channel's total is the sum of the sessions' buffers.
func checkReplayBytes(t *testing.T, ch *Channel) int {
	t.Helper()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	sum := 0
	for _, s := range ch.sessions {
		s.mu.Lock()
		sum += s.events.bytes
		s.mu.Unlock()
	}
	if got := ch.replayBytes.Load(); int64(sum) != got {
		t.Errorf("replayBytes = %d, want the sessions' sum %d", got, sum)
	}
	return sum
}

// A finished turn's buffer stays for ReplayGrace, longer while a stream is attached or a turn
// runs, and is given back after it.
func TestReplayGivenBackAfterGrace(t *testing.T) {
	clk := newTestClock()
	ch, err := New(Config{Now: clk.Now, ReplayGrace: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	finishTurn(ch, "done", "e1", "a")
	finishTurn(ch, "attached", "e2", "a")
	ch.mu.Lock()
	sub := ch.sessions["attached"].subscribe("")
	ch.mu.Unlock()
	ch.ObserveTurn(turnEv(echogate.TurnStarted, "running", "e3", ""))

	clk.advance(9 * time.Second)
	if _, released := ch.evictIdle(clk.Now()); released != 0 {
		t.Errorf("evictIdle within the grace released %d buffers, want 0", released)
	}
	if n := replayLen(ch, "done"); n != 3 {
		t.Errorf("buffer of the finished session within the grace = %d entries, want 3 (start, delta, done)", n)
	}
	clk.advance(2 * time.Second)
	if _, released := ch.evictIdle(clk.Now()); released != 1 {
		t.Errorf("evictIdle after the grace released %d buffers, want 1 (attached and running keep theirs)", released)
	}
	for session, want := range map[string]int{"done": 0, "attached": 3, "running": 1} {
		if got := replayLen(ch, session); got != want {
			t.Errorf("buffer of %s after the grace = %d entries, want %d", session, got, want)
		}
	}
	ch.mu.Lock()
	ch.sessions["attached"].unsubscribe(sub)
	ch.mu.Unlock()
	clk.advance(11 * time.Second)
	ch.evictIdle(clk.Now())
	if got := replayLen(ch, "attached"); got != 0 {
		t.Errorf("buffer of attached after its stream left and the grace passed = %d entries, want 0", got)
	}
	if snap, ok := ch.History("done"); !ok || snap.LastEventID != 3 {
		t.Errorf("History(done) after the release = %+v, %v; want the session kept with its last event id 3", snap, ok)
	}
	checkReplayBytes(t, ch)

	// Ids go on from the released buffer's.
	finishTurn(ch, "done", "e4", "b")
	ch.mu.Lock()
	evs := ch.sessions["done"].replayLatestTurn()
	ch.mu.Unlock()
	if len(evs) != 3 || evs[0].Seq != 4 {
		t.Errorf("the next turn's events = %d from id %d, want 3 from id 4", len(evs), evs[0].Seq)
	}
}

// A turn's start drops the earlier turns' events, unless an attached stream has yet to read them.
func TestTurnStartDropsEarlierTurns(t *testing.T) {
	ch, _ := New(Config{}, nil)
	finishTurn(ch, "s", "e1", "a")
	finishTurn(ch, "s", "e2", "b")
	ch.mu.Lock()
	s := ch.sessions["s"]
	got := len(s.events.buf)
	sub := s.subscribe("") // reads from id 7 on
	sub.next = 5           // as if it had read only up to the second turn's start
	ch.mu.Unlock()
	if got != 3 {
		t.Errorf("after two turns the buffer holds %d entries, want the last turn's 3", got)
	}
	finishTurn(ch, "s", "e3", "c")
	ch.mu.Lock()
	first := s.events.firstSeq()
	ch.mu.Unlock()
	if first != 5 {
		t.Errorf("with a stream at id 5 the buffer starts at %d, want 5", first)
	}
	checkReplayBytes(t, ch)
}

// ReplayTotalBytes bounds all buffers together: finished sessions give theirs back, least
// recently active first, within the grace too.
func TestReplayTotalBytes(t *testing.T) {
	clk := newTestClock()
	const total = 64 << 10
	ch, _ := New(Config{Now: clk.Now, ReplayTotalBytes: total}, nil)
	answer := strings.Repeat("x", 4<<10)
	for i := range 100 {
		clk.advance(time.Millisecond)
		finishTurn(ch, fmt.Sprintf("s%d", i), "e", answer)
		if got := checkReplayBytes(t, ch); got > total {
			t.Fatalf("after %d sessions the buffers hold %d bytes, want at most %d", i+1, got, total)
		}
	}
	if replayLen(ch, "s99") != 3 || replayLen(ch, "s0") != 0 {
		t.Errorf("buffers: newest %d entries, oldest %d; want the newest kept (3) and the oldest given back (0)", replayLen(ch, "s99"), replayLen(ch, "s0"))
	}
}

// A retried POST of a message whose turn ended after its buffer was given back gets that
// turn's done (its text from the history), not a second turn or a stream that never ends.
func TestRetryAfterReplayReleased(t *testing.T) {
	clk := newTestClock()
	e := newEnv(t, Config{Now: clk.Now, JanitorInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	body := `{"session":"r","text":"once","id":"m1"}`
	resp := e.post(t, ctx, "/api/chat", body)
	ev := e.sink.next(t)
	finishTurn(e.ch, "r", ev.ID, "the answer")
	if _, err := e.ch.Send(ctx, echogate.Outbound{Conversation: ev.Conversation, Turn: "t-" + ev.ID, Text: "the answer", ReplyTo: ev.Message}); err != nil {
		t.Fatal(err)
	}
	newSSEReader(resp.Body).rest(t)
	resp.Body.Close()

	clk.advance(e.ch.cfg.ReplayGrace + time.Second)
	if _, released := e.ch.evictIdle(clk.Now()); released != 1 {
		t.Fatalf("evictIdle released %d buffers, want 1", released)
	}
	resp = e.post(t, ctx, "/api/chat", body)
	defer resp.Body.Close()
	got := newSSEReader(resp.Body).rest(t)
	if !slices.Equal(types(got), []string{"done"}) {
		t.Fatalf("retried stream = %q, want [done]", types(got))
	}
	if w := got[0].turn(t); w.Status != "done" || w.Text != "the answer" || w.EventID != ev.ID {
		t.Errorf("retried done = status %q, text %q, event %q; want done, the answer, %s", w.Status, w.Text, w.EventID, ev.ID)
	}
	e.sink.empty(t)

	// A re-attach after the release has nothing to replay or follow.
	r := e.get(t, ctx, "/api/chat/stream?session=r", map[string]string{"Last-Event-ID": "2"})
	r.Body.Close()
	if r.StatusCode != http.StatusNoContent {
		t.Errorf("GET /api/chat/stream after the release = %d, want 204", r.StatusCode)
	}
}
