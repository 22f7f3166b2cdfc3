package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// testClock is a settable clock for Config.Now.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// playTurns answers every event reaching the sink the way the pipeline does: start, the answer
// in 16-byte deltas, done, then the reply through Send. It returns when ctx ends.
func playTurns(ctx context.Context, e *env, answer string) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-e.sink.events:
			session := ev.Conversation.Channel
			e.ch.ObserveTurn(turnEv(echogate.TurnStarted, session, ev.ID, ""))
			for i := 0; i < len(answer); i += 16 {
				e.ch.ObserveTurn(turnEv(echogate.TurnDelta, session, ev.ID, answer[i:min(i+16, len(answer))]))
			}
			done := turnEv(echogate.TurnDone, session, ev.ID, answer)
			done.Status = "done"
			e.ch.ObserveTurn(done)
			_, _ = e.ch.Send(ctx, echogate.Outbound{Conversation: ev.Conversation, Turn: done.Turn, Text: answer, ReplyTo: ev.Message})
		}
	}
}

func heapAlloc() uint64 {
	http.DefaultClient.CloseIdleConnections()
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // a second cycle empties the pools' victim caches
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// N sessions × M turns through POST /api/chat, then the replay grace: what the channel keeps per
// session is its history and little else (no replay buffer, no stream state). A regression
// guard on retained bytes, not on time. (Every session used to keep its replay buffer, about
// ten times its history, until IdleTimeout.)
func TestRetainedHeapAfterTurns(t *testing.T) {
	const sessions, turns, workers = 300, 5, 8
	answer := strings.Repeat("word ", 50)[:240]
	clk := newTestClock()
	e := newEnv(t, Config{Now: clk.Now, JanitorInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go playTurns(ctx, e, answer)

	chat := func(session string, turn int) error {
		rctx, rcancel := context.WithTimeout(ctx, waitLimit)
		defer rcancel()
		resp := e.post(t, rctx, "/api/chat", fmt.Sprintf(`{"session":%q,"text":"question %d"}`, session, turn))
		defer resp.Body.Close()
		// Read to the end: the handler has detached its stream once the body ends.
		r := newSSEReader(resp.Body)
		last := ""
		for {
			ev, err := r.next()
			if err == io.EOF && last == "done" {
				return nil
			}
			if err != nil {
				return fmt.Errorf("session %s turn %d: %v after %q, want the stream to end with done", session, turn, err, last)
			}
			if ev.Type != "" {
				last = ev.Type
			}
		}
	}
	if err := chat("warm-up", 0); err != nil { // pools, the server's first connection
		t.Fatal(err)
	}
	base := heapAlloc()

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := w; s < sessions; s += workers {
				for turn := range turns {
					if err := chat(fmt.Sprintf("s%d", s), turn); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	clk.advance(e.ch.cfg.ReplayGrace + time.Second)
	if n, released := e.ch.evictIdle(clk.Now()); n != 0 || released != sessions+1 {
		t.Errorf("evictIdle after the grace = %d sessions, %d replays, want 0 and %d", n, released, sessions+1)
	}
	retained := int64(heapAlloc()) - int64(base)
	perSession := retained / sessions

	e.ch.mu.Lock()
	live, bytes := len(e.ch.sessions), e.ch.replayBytes
	e.ch.mu.Unlock()
	if live != sessions+1 || bytes != 0 {
		t.Errorf("after the grace: %d sessions, %d replay bytes; want %d sessions (history kept) and 0", live, bytes, sessions+1)
	}
	// The history alone: per turn the question and the answer, two entries of ~100 bytes.
	historyBytes := int64(turns * (len(answer) + 16 + 2*128))
	if limit := 2<<10 + historyBytes; perSession > limit {
		t.Errorf("retained heap after %d sessions × %d turns = %d bytes per session, want at most %d", sessions, turns, perSession, limit)
	}
	t.Logf("retained heap: %d bytes per session after %d × %d turns (history ~%d bytes)", perSession, sessions, turns, historyBytes)
}

// A stream waiting for its turn's next event holds no batch or encoding buffer: those are taken
// for one write and given back, so what N attached streams cost beyond the events in the replay
// buffer is their cursors. A regression guard on held bytes: every stream used to keep the
// batch it last wrote (its events and their encoding, ~10 KB for a burst of deltas) until the
// turn ended, a thousand concurrent turns holding ~10 MB of buffers between their writes.
func TestWaitingStreamsHoldNoBuffers(t *testing.T) {
	const streams, deltas = 100, 30
	e := newEnv(t, Config{JanitorInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type stream struct {
		session, eventID string
		body             io.ReadCloser
		r                *sseReader
	}
	all := make([]stream, streams)
	for i := range all {
		s := &all[i]
		s.session = fmt.Sprintf("s%d", i)
		resp := e.post(t, ctx, "/api/chat", fmt.Sprintf(`{"session":%q,"text":"question"}`, s.session))
		s.body, s.r = resp.Body, newSSEReader(resp.Body)
		s.eventID = e.sink.next(t).ID
	}
	defer func() {
		for _, s := range all {
			s.body.Close()
		}
	}()
	base := heapAlloc()

	delta := strings.Repeat("x", 16)
	for _, s := range all {
		e.ch.ObserveTurn(turnEv(echogate.TurnStarted, s.session, s.eventID, ""))
		for range deltas {
			e.ch.ObserveTurn(turnEv(echogate.TurnDelta, s.session, s.eventID, delta))
		}
	}
	for _, s := range all { // each stream wrote its events and waits for the next
		for n := 0; n < 1+deltas; {
			ev, err := s.r.next()
			if err != nil {
				t.Fatalf("session %s: %v after %d events, want %d", s.session, err, n, 1+deltas)
			}
			if ev.Type != "" {
				n++
			}
		}
	}
	held := int64(heapAlloc()) - int64(base)
	e.ch.mu.Lock()
	replay := int64(e.ch.replayBytes)
	e.ch.mu.Unlock()
	perStream := (held - replay) / streams
	t.Logf("%d waiting streams: %d bytes held each beyond the replay buffer's %d", streams, perStream, replay/streams)
	// The replay buffer's estimate counts its entries; what a stream itself may add is a
	// cursor, not a batch: 31 events are ~7 KB as wireEvents and ~6 KB encoded.
	if perStream > 1<<10 {
		t.Errorf("each waiting stream holds %d bytes beyond the replay buffer, want at most 1 KiB", perStream)
	}

	for _, s := range all {
		done := turnEv(echogate.TurnDone, s.session, s.eventID, "answer")
		done.Status = "done"
		e.ch.ObserveTurn(done)
	}
	for _, s := range all {
		if evs := s.r.rest(t); len(evs) == 0 || evs[len(evs)-1].Type != "done" {
			t.Fatalf("session %s ended with %v, want done", s.session, types(evs))
		}
	}
}
