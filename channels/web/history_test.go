package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// The histories of all sessions together stay within HistoryTotalBytes: past it, the least
// recently active sessions without a turn or a stream lose theirs; the session that just got a
// message and one with an attached stream keep theirs.
func TestHistoryTotalBytes(t *testing.T) {
	const total, sessions = 64 << 10, 100
	clk := newTestClock()
	ch, err := New(Config{Now: clk.Now, HistoryTotalBytes: total}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a message of one kilobyte ", 40)[:1024]
	send := func(session string) {
		t.Helper()
		clk.advance(time.Second)
		out := echogate.Outbound{Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: session, DM: true}, Text: text}
		if _, err := ch.Send(context.Background(), out); err != nil {
			t.Fatalf("Send to %s: %v", session, err)
		}
	}
	send("attached")
	att := ch.lockLiveSession("attached")
	sub := att.subscribe("")
	att.mu.Unlock()
	for i := range sessions {
		send(fmt.Sprintf("s%d", i))
	}

	kept, sum := 0, 0
	for i := range sessions {
		snap, ok := ch.History(fmt.Sprintf("s%d", i))
		if !ok {
			t.Fatalf("session s%d was forgotten, want it kept (only its history may go)", i)
		}
		for _, m := range snap.Messages {
			sum += len(m.Text)
		}
		if len(snap.Messages) > 0 {
			kept++
		}
	}
	if sum > total {
		t.Errorf("histories hold %d bytes of text over %d sessions, want at most HistoryTotalBytes %d", sum, sessions, total)
	}
	if last, _ := ch.History(fmt.Sprintf("s%d", sessions-1)); len(last.Messages) != 1 {
		t.Errorf("the latest session's history = %d messages, want its 1", len(last.Messages))
	}
	if first, _ := ch.History("s0"); len(first.Messages) != 0 {
		t.Errorf("the least recently active session's history = %d messages, want it dropped", len(first.Messages))
	}
	if att, _ := ch.History("attached"); len(att.Messages) != 1 {
		t.Errorf("the history of a session with an attached stream = %d messages, want its 1 kept", len(att.Messages))
	}
	if kept < total/2/len(text) {
		t.Errorf("%d sessions kept their history, want the most recent ones, about %d", kept, total*3/4/len(text))
	}

	att.mu.Lock()
	att.unsubscribe(sub)
	att.mu.Unlock()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	want := 0
	for _, s := range ch.sessions {
		for i := range s.history {
			want += entryBytes(&s.history[i])
		}
		if got := s.historyBytes; got != sumEntries(s.history) {
			t.Errorf("session %s: historyBytes = %d, want %d", s.id, got, sumEntries(s.history))
		}
	}
	if got := ch.historyBytes.Load(); got != int64(want) {
		t.Errorf("historyBytes = %d, want the entries' %d", got, want)
	}
}

func sumEntries(h []Entry) int {
	n := 0
	for i := range h {
		n += entryBytes(&h[i])
	}
	return n
}

// The per-session bound drops the oldest messages and their bytes.
func TestAddHistoryLimit(t *testing.T) {
	s := newSession("s", time.Now())
	for i := range 5 {
		s.addHistory(Entry{ID: fmt.Sprintf("m%d", i), Text: strings.Repeat("x", i)}, 3)
	}
	if got := s.history; len(got) != 3 || got[0].ID != "m2" || got[2].ID != "m4" {
		t.Errorf("history after 5 messages with limit 3 = %+v, want m2..m4", got)
	}
	if s.historyBytes != sumEntries(s.history) {
		t.Errorf("historyBytes = %d, want %d", s.historyBytes, sumEntries(s.history))
	}
	if n := s.removeHistory("m3"); n == 0 || s.historyBytes != sumEntries(s.history) || len(s.history) != 2 {
		t.Errorf("removeHistory(m3) = %d; history %+v with %d bytes, want m2, m4 with %d", n, s.history, s.historyBytes, sumEntries(s.history))
	}
}
