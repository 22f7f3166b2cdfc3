package sqlite

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// walFrames returns the number of frames in the WAL file of the database at path. Within a
// test the log only grows: the writer restarts it past restartFrames, the checkpointer
// truncates it after truncateIdle without commits, neither of which a short test reaches.
func walFrames(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	const header, frame = 32, 24 + 4096
	if fi.Size() < header {
		return 0
	}
	return (fi.Size() - header) / frame
}

// plainTurnWrites runs the store writes of a plain turn as the pipeline issues them (web chat,
// an answer without tools): claim the event, create the turn record, then finish it with the
// user's message and the answer (the input's write folded into the end), one usage entry and
// the event's completion. It returns the WAL frames each step added to the main database and
// the event log.
func plainTurnWrites(t *testing.T, s *Store, n int) (steps []string, main, events []int64) {
	t.Helper()
	ctx := context.Background()
	key := echogate.SessionKey(fmt.Sprintf("web:s%d", n%4))
	ev := fmt.Sprintf("web:ev%d", n)
	turn := fmt.Sprintf("turn-%08d", n)
	now := time.Now()
	rec := echogate.TurnRecord{ID: turn, Session: key, EventKey: ev, UserID: "web:u1", Agent: "default", Status: echogate.TurnRunning, StartedAt: now}
	ended := rec
	ended.Status, ended.Model, ended.InputTokens, ended.OutputTokens, ended.EndedAt = echogate.TurnDoneSt, "gpt-4o-mini", 120, 30, now
	calls := []struct {
		name string
		fn   func() error
	}{
		{"claim event", func() error { _, err := s.ClaimEvent(ctx, ev, nil, now); return err }},
		{"create turn", func() error { return s.CreateTurn(ctx, rec) }},
		{"finish turn", func() error {
			return s.FinishTurn(ctx, echogate.TurnEnd{
				Session: key, Turn: ended, EventKey: ev, At: now,
				Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hello there"}, {Role: echogate.RoleAssistant, Content: "Hello! How can I help?"}},
				Usage: []echogate.UsageRecord{{Turn: turn, Session: key, UserID: "web:u1", Channel: "web", Agent: "default", Trigger: echogate.TriggerMessage,
					Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "gpt-4o-mini", InputTokens: 120, OutputTokens: 30}, At: now}},
			})
		}},
	}
	for _, c := range calls {
		m0, e0 := walFrames(t, s.path), walFrames(t, s.eventsPath)
		if err := c.fn(); err != nil {
			t.Fatalf("turn %d: %s: %v", n, c.name, err)
		}
		steps = append(steps, c.name)
		main = append(main, walFrames(t, s.path)-m0)
		events = append(events, walFrames(t, s.eventsPath)-e0)
	}
	return steps, main, events
}

// TestPlainTurnWALFrames is a regression guard on what a plain turn costs the log: every WAL
// frame is a page written (two pwrite calls) and later copied back by a checkpoint. It logs
// the frames per step and fails when a turn's commits write more than the bounds below.
// Today: claim 3 (event log: table, key index, unfinished index); create 3 (turns, its two
// indexes); finish 9 in the main database (usage and its six indexes, messages, the turns
// row) and 3 in the event log (the row, leaving the unfinished index, the completed index).
func TestPlainTurnWALFrames(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := context.Background()
	for i := range 4 { // the sessions exist, as after their first turn
		key := echogate.SessionKey(fmt.Sprintf("web:s%d", i))
		if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: key, UserID: "web:u1", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 { // warm: the tables' right-hand pages exist
		plainTurnWrites(t, s, i)
	}
	var mainTotal, evTotal int64
	const turns = 20
	for i := range turns {
		steps, m, e := plainTurnWrites(t, s, 100+i)
		for j := range steps {
			if i == 0 {
				t.Logf("%-12s main %d frames, event log %d", steps[j], m[j], e[j])
			}
			mainTotal += m[j]
			evTotal += e[j]
		}
	}
	t.Logf("per turn: main %.1f frames, event log %.1f", float64(mainTotal)/turns, float64(evTotal)/turns)
	const maxMain, maxEvents = 13, 6
	if mainTotal > maxMain*turns {
		t.Errorf("main database: %d WAL frames over %d plain turns, want at most %d a turn", mainTotal, turns, maxMain)
	}
	if evTotal > maxEvents*turns {
		t.Errorf("event log: %d WAL frames over %d plain turns, want at most %d a turn", evTotal, turns, maxEvents)
	}
}
