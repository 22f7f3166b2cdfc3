package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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

// retainedAfterTurns runs sessions × turns through POST /api/chat (workers at a time), lets the
// replay grace pass and returns the heap the channel retained per session.
func retainedAfterTurns(t *testing.T, cfg Config, sessions, turns int, answer string) int64 {
	t.Helper()
	const workers = 8
	clk := newTestClock()
	cfg.Now, cfg.JanitorInterval = clk.Now, time.Hour
	e := newEnv(t, cfg)
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

	e.ch.mu.Lock()
	live, bytes := len(e.ch.sessions), e.ch.replayBytes.Load()
	e.ch.mu.Unlock()
	if live != sessions+1 || bytes != 0 {
		t.Errorf("after the grace: %d sessions, %d replay bytes; want %d sessions (history kept) and 0", live, bytes, sessions+1)
	}
	return retained / int64(sessions)
}

// N sessions × M turns through POST /api/chat, then the replay grace: what the channel keeps per
// session is its history and little else (no replay buffer, no stream state). A regression
// guard on retained bytes, not on time. (Every session used to keep its replay buffer, about
// ten times its history, until IdleTimeout.)
func TestRetainedHeapAfterTurns(t *testing.T) {
	const sessions, turns = 300, 5
	answer := strings.Repeat("word ", 50)[:240]
	perSession := retainedAfterTurns(t, Config{}, sessions, turns, answer)
	// The history alone: per turn the question and the answer, two entries of ~100 bytes.
	historyBytes := int64(turns * (len(answer) + 16 + 2*128))
	if limit := 2<<10 + historyBytes; perSession > limit {
		t.Errorf("retained heap after %d sessions × %d turns = %d bytes per session, want at most %d", sessions, turns, perSession, limit)
	}
	t.Logf("retained heap: %d bytes per session after %d × %d turns (history ~%d bytes)", perSession, sessions, turns, historyBytes)
}

// The same with the histories bounded far below what the sessions said (HistoryTotalBytes):
// the retained heap is the bound plus a session's bare state, however many sessions there were.
func TestRetainedHeapBoundedByHistoryTotal(t *testing.T) {
	const sessions, turns, total = 300, 5, 64 << 10
	answer := strings.Repeat("word ", 50)[:240]
	perSession := retainedAfterTurns(t, Config{HistoryTotalBytes: total}, sessions, turns, answer)
	// Unbounded, each session would keep ~2.5 KB of history (see TestRetainedHeapAfterTurns).
	if limit := int64(total/sessions + 1<<10); perSession > limit {
		t.Errorf("retained heap after %d sessions × %d turns with HistoryTotalBytes %d = %d bytes per session, want at most %d", sessions, turns, total, perSession, limit)
	}
	t.Logf("retained heap with HistoryTotalBytes %d: %d bytes per session after %d × %d turns", total, perSession, sessions, turns)
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
	replay := e.ch.replayBytes.Load()
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

// stackInuse is the bytes of goroutine stacks after a few collections (each may halve a stack
// that uses under a quarter of itself).
func stackInuse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}

// A stream waiting for its turn costs about the stack of an idle keep-alive connection plus the
// server's small connection reader: the request's checks and the submit (JSON decoding, the
// sink) run in a call that has returned, so the handler's stack, grown by them, is shrunk by the
// collector while it waits. A regression guard on bytes: when the handler followed the stream
// from the frame that had made those calls, a waiting stream held ~12 KB of stack more than an
// idle connection, ~12 MB for a thousand concurrent turns.
//
// The figures are taken in a child process with GODEBUG=adaptivestackstart=0: every goroutine
// then starts at the minimum stack and holds what it grew to, whatever ran before in the process
// (by default new goroutines start at the running average, which the other tests move).
func TestWaitingStreamStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation enlarges every frame")
	}
	if os.Getenv("WEB_STACK_CHILD") == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestWaitingStreamStack$", "-test.v")
		cmd.Env = append(os.Environ(), "WEB_STACK_CHILD=1", "GODEBUG=adaptivestackstart=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the measuring child process: %v\n%s", err, out)
		}
		t.Logf("%s", bytes.TrimSpace(out))
		return
	}
	const n = 200
	e := newEnv(t, Config{JanitorInterval: time.Hour})
	ctx := context.Background()
	connect := func() *http.Client {
		c := &http.Client{Transport: &http.Transport{}}
		t.Cleanup(c.CloseIdleConnections)
		return c
	}
	base := stackInuse()
	for range n { // idle keep-alive connections: a server and a client goroutine or two each
		c := connect()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/chat/history?session=x", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	idle := stackInuse()
	for i := range n { // the same again, each with a stream waiting for its turn
		c := connect()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/api/chat", strings.NewReader(fmt.Sprintf(`{"session":"s%d","text":"question"}`, i)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		e.sink.next(t)
	}
	streams := stackInuse()
	perIdle, perStream := int64(idle-base)/n, int64(streams-idle)/n
	t.Logf("stack per idle connection %d bytes, per connection with a waiting stream %d", perIdle, perStream)
	if extra := perStream - perIdle; extra > 6<<10 {
		t.Errorf("a waiting stream's connection holds %d bytes of stack more than an idle one, want at most 6 KiB", extra)
	}
}
