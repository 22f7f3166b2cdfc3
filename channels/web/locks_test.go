package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// TestSessionsDoNotWaitForEachOther: the state of each web session has its own lock, so a
// session whose lock is held (a stream copying its events, a turn publishing) does not hold up
// the turn events, messages and history reads of another session. With one lock for every
// session, 1000 concurrent sessions kept it in starvation mode: each unlock handed it to the
// next waiter through the scheduler.
func TestSessionsDoNotWaitForEachOther(t *testing.T) {
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.ObserveTurn(turnEv(echogate.TurnStarted, "a", "ea", ""))
	a := ch.lockLiveSession("a")
	if a == nil {
		t.Fatal("session a is not live after its turn started")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.ObserveTurn(turnEv(echogate.TurnStarted, "b", "eb", ""))
		ch.ObserveTurn(turnEv(echogate.TurnDelta, "b", "eb", "hello"))
		out := echogate.Outbound{Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "b", DM: true}, Text: "note"}
		if _, err := ch.Send(context.Background(), out); err != nil {
			t.Errorf("Send to b: %v", err)
		}
		if snap, ok := ch.History("b"); !ok || len(snap.Messages) != 1 {
			t.Errorf("History(b) = %+v, %v; want its one message", snap, ok)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("session b's events and history waited for session a's lock")
	}
	a.mu.Unlock()
	if replayLen(ch, "a") != 1 {
		t.Errorf("session a's buffer = %d events, want its start", replayLen(ch, "a"))
	}
}

// TestConcurrentSessionsKeepTheTotals drives many sessions at once through everything that
// crosses sessions — eviction to make room (MaxSessions), shedding of replay buffers and
// histories past their totals, the janitor — while streams read, and checks (under -race)
// that the channel's byte totals stay the sums of the live sessions'.
func TestConcurrentSessionsKeepTheTotals(t *testing.T) {
	clk := &testClock{now: time.Unix(1_700_000_000, 0)}
	ch, err := New(Config{MaxSessions: 12, ReplayTotalBytes: 2 << 10, HistoryTotalBytes: 1 << 10,
		ReplayGrace: time.Second, Now: clk.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		workers = 8
		turns   = 200
		ids     = 24 // twice MaxSessions: creating sessions evicts others
	)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Streams: attach to a session, read what is published, leave.
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := ch.lockLiveSession(fmt.Sprintf("s%d", (r*7+i)%ids))
				if s == nil {
					time.Sleep(time.Millisecond)
					continue
				}
				sub := s.subscribe("")
				s.mu.Unlock()
				for range 3 {
					select {
					case <-sub.wake:
					case <-time.After(time.Millisecond):
					}
					s.mu.Lock()
					_, _, _ = s.pending(sub, nil)
					s.mu.Unlock()
				}
				s.mu.Lock()
				s.unsubscribe(sub)
				s.mu.Unlock()
			}
		}()
	}
	// The janitor.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clk.advance(300 * time.Millisecond)
				ch.evictIdle(clk.Now())
			}
		}
	}()
	var turnsWG sync.WaitGroup
	for w := range workers {
		turnsWG.Add(1)
		go func() {
			defer turnsWG.Done()
			for i := range turns {
				id := fmt.Sprintf("s%d", (w*5+i)%ids)
				evID := fmt.Sprintf("e%d.%d", w, i)
				ch.ObserveTurn(turnEv(echogate.TurnStarted, id, evID, ""))
				for range 4 {
					ch.ObserveTurn(turnEv(echogate.TurnDelta, id, evID, "some streamed tokens of the answer "))
				}
				done := turnEv(echogate.TurnDone, id, evID, "the answer, in full, as the history keeps it")
				done.Status = "done"
				ch.ObserveTurn(done)
				out := echogate.Outbound{Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: id, DM: true},
					Text: "a notice between turns", Turn: done.Turn}
				if _, err := ch.Send(context.Background(), out); err != nil && !errors.Is(err, ErrTooManySessions) {
					t.Errorf("Send: %v", err)
				}
				ch.History(id)
			}
		}()
	}
	turnsWG.Wait()
	close(stop)
	wg.Wait()

	checkReplayBytes(t, ch)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if n := len(ch.sessions); n > 12 {
		t.Errorf("%d live sessions, want at most MaxSessions 12", n)
	}
	var hist int64
	for _, s := range ch.sessions {
		s.mu.Lock()
		if got := s.historyBytes; got != sumEntries(s.history) {
			t.Errorf("session %s: historyBytes = %d, want %d", s.id, got, sumEntries(s.history))
		}
		hist += int64(s.historyBytes)
		s.mu.Unlock()
	}
	if got := ch.historyBytes.Load(); got != hist {
		t.Errorf("historyBytes = %d, want the sessions' sum %d", got, hist)
	}
}
