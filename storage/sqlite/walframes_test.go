package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// WAL layout (https://sqlite.org/fileformat2.html#walformat): a 32-byte header, then frames of
// a 24-byte header (page number first, big-endian) and the page. Within a test the log only
// grows: the writer restarts it past restartFrames, the checkpointer truncates it after
// truncateIdle without commits, neither of which a short test reaches.
const walHeader, walFrameHeader, walPage = 32, 24, 4096

// walFrames returns the number of frames in the WAL file of the database at path.
func walFrames(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < walHeader {
		return 0
	}
	return (fi.Size() - walHeader) / (walFrameHeader + walPage)
}

// walPagesFrom returns the page numbers of the frames of path's WAL from frame `from` on.
func walPagesFrom(t *testing.T, path string, from int64) []uint32 {
	t.Helper()
	f, err := os.Open(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pages []uint32
	hdr := make([]byte, walFrameHeader)
	for i := from; ; i++ {
		_, err := f.ReadAt(hdr, walHeader+i*(walFrameHeader+walPage))
		if err == io.EOF {
			return pages
		}
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, binary.BigEndian.Uint32(hdr))
	}
}

// pageOwners names the b-tree (table or index) of each page, from SQLite's dbstat table.
func pageOwners(t *testing.T, db *sql.DB, pages []uint32) []string {
	t.Helper()
	rows, err := db.Query(`SELECT pageno, name FROM dbstat`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	owner := map[uint32]string{}
	for rows.Next() {
		var (
			p    uint32
			name string
		)
		if err := rows.Scan(&p, &name); err != nil {
			t.Fatal(err)
		}
		owner[p] = name
	}
	out := make([]string, 0, len(pages))
	for _, p := range pages {
		n, ok := owner[p]
		switch {
		case p == 1:
			n = "(header)"
		case !ok:
			n = "(free list)"
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// eventPayload is a claimed event's payload as the dispatcher stores it: the JSON of a web
// chat message (about 500 bytes).
var eventPayload = func() []byte {
	b, err := json.Marshal(echogate.InboundEvent{ID: "web:3f2a9c1e7b", Kind: echogate.KindDirect,
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "s-4b1d2e", DM: true},
		Actor:        echogate.Actor{ID: "u1", Name: "Ada"}, Text: "hello there, what can you do?", ReceivedAt: time.Now()})
	if err != nil {
		panic(err)
	}
	return b
}()

// turnStep is one store call of a turn.
type turnStep struct {
	name string
	fn   func() error
}

// stepFrames is what one step added to the two logs: frame counts and the b-trees written.
type stepFrames struct {
	name         string
	main, events int64
	mainTrees    []string
	eventTrees   []string
}

// runSteps runs the steps in order and returns what each added to the main database's and
// the event log's WAL. With owners it names the b-trees too (slow: one dbstat scan a step).
func runSteps(t *testing.T, s *Store, steps []turnStep, owners bool) []stepFrames {
	t.Helper()
	d := s.st.Load()
	out := make([]stepFrames, 0, len(steps))
	for _, c := range steps {
		m0, e0 := walFrames(t, s.path), walFrames(t, s.eventsPath)
		if err := c.fn(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := stepFrames{name: c.name, main: walFrames(t, s.path) - m0, events: walFrames(t, s.eventsPath) - e0}
		if owners {
			f.mainTrees = pageOwners(t, d.r, walPagesFrom(t, s.path, m0))
			f.eventTrees = pageOwners(t, d.ev.r, walPagesFrom(t, s.eventsPath, e0))
		}
		out = append(out, f)
	}
	return out
}

// turnFixture is the records of turn n of a test session.
func turnFixture(n int) (key echogate.SessionKey, ev string, rec echogate.TurnRecord, usage echogate.UsageRecord) {
	key = echogate.SessionKey(fmt.Sprintf("web:s%d", n%4))
	ev = fmt.Sprintf("web:ev%d", n)
	turn := fmt.Sprintf("turn-%08d", n)
	now := time.Now()
	rec = echogate.TurnRecord{ID: turn, Session: key, EventKey: ev, UserID: "web:u1", Agent: "default", Status: echogate.TurnRunning, StartedAt: now}
	usage = echogate.UsageRecord{Turn: turn, Session: key, UserID: "web:u1", Channel: "web", Agent: "default", Trigger: echogate.TriggerMessage,
		Usage: echogate.Usage{Kind: echogate.UsageModel, Model: "gpt-4o-mini", InputTokens: 120, OutputTokens: 30}, At: now}
	return key, ev, rec, usage
}

// plainTurnSteps are the store writes of a plain turn as the pipeline issues them (web chat,
// an answer without tools): claim the event, create the turn record, then finish it with the
// user's message and the answer (the input's write folded into the end), one usage entry and
// the event's completion.
func plainTurnSteps(s *Store, n int) []turnStep {
	ctx := context.Background()
	key, ev, rec, usage := turnFixture(n)
	ended := rec
	ended.Status, ended.Model, ended.InputTokens, ended.OutputTokens, ended.EndedAt = echogate.TurnDoneSt, "gpt-4o-mini", 120, 30, time.Now()
	return []turnStep{
		{"claim event", func() error {
			_, err := s.ClaimEvent(ctx, ev, eventPayload, rec.StartedAt)
			return err
		}},
		{"create turn", func() error { return s.CreateTurn(ctx, rec) }},
		{"finish turn", func() error {
			return s.FinishTurn(ctx, echogate.TurnEnd{
				Session: key, Turn: ended, EventKey: ev, At: ended.EndedAt,
				Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hello there"}, {Role: echogate.RoleAssistant, Content: "Hello! How can I help?"}},
				Usage:    []echogate.UsageRecord{usage},
			})
		}},
	}
}

// toolTurnSteps are the store writes of a turn with one tool call: the model asks for a tool,
// so the user's message and the first call's usage are written before the tool runs (one
// RecordProgress), then the end with the call, its result and the answer, the second call's
// usage and the event's completion.
func toolTurnSteps(s *Store, n int) []turnStep {
	ctx := context.Background()
	key, ev, rec, usage := turnFixture(n)
	ended := rec
	ended.Status, ended.Model, ended.InputTokens, ended.OutputTokens, ended.EndedAt = echogate.TurnDoneSt, "gpt-4o-mini", 240, 60, time.Now()
	call := echogate.Message{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{}`}}}
	result := echogate.Message{Role: echogate.RoleTool, ToolCallID: "call_1", Content: "2026-12-02T03:00:00Z"}
	return []turnStep{
		{"claim event", func() error {
			_, err := s.ClaimEvent(ctx, ev, eventPayload, rec.StartedAt)
			return err
		}},
		{"create turn", func() error { return s.CreateTurn(ctx, rec) }},
		{"progress", func() error {
			return s.RecordProgress(ctx, key, rec.ID, []echogate.Message{{Role: echogate.RoleUser, Content: "what time is it?"}},
				[]echogate.UsageRecord{usage}, time.Now())
		}},
		{"finish turn", func() error {
			return s.FinishTurn(ctx, echogate.TurnEnd{
				Session: key, Turn: ended, EventKey: ev, At: ended.EndedAt,
				Messages: []echogate.Message{call, result, {Role: echogate.RoleAssistant, Content: "It is 03:00 UTC."}},
				Usage:    []echogate.UsageRecord{usage},
			})
		}},
	}
}

// measureTurns runs warm turns, then `turns` measured ones of the kind steps builds, logging
// the first measured turn's steps with the b-trees they wrote. It returns the WAL frames per
// turn of the main database and of the event log.
func measureTurns(t *testing.T, steps func(*Store, int) []turnStep, turns int) (mainPer, eventsPer float64) {
	t.Helper()
	s := openTemp(t, Config{})
	// Each completion commits with the next claim, as with turns less than lazyDelay apart,
	// however slow the machine running the test.
	s.st.Load().ev.wr.lazy.delay.Store(int64(time.Hour))
	ctx := context.Background()
	for i := range 4 { // the sessions exist, as after their first turn
		key := echogate.SessionKey(fmt.Sprintf("web:s%d", i))
		if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: key, UserID: "web:u1", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 { // warm: the tables' right-hand pages exist
		runSteps(t, s, steps(s, i), false)
	}
	var mainTotal, evTotal int64
	for i := range turns {
		for _, f := range runSteps(t, s, steps(s, 1000+i), i == 0) {
			if i == 0 {
				t.Logf("%-13s main %d frames %v; event log %d %v", f.name, f.main, strings.Join(f.mainTrees, " "), f.events, strings.Join(f.eventTrees, " "))
			}
			mainTotal += f.main
			evTotal += f.events
		}
	}
	mainPer, eventsPer = float64(mainTotal)/float64(turns), float64(evTotal)/float64(turns)
	t.Logf("per turn: main %.1f frames, event log %.1f", mainPer, eventsPer)
	return mainPer, eventsPer
}

// TestPlainTurnWALFrames is a regression guard on what a plain turn costs the log: every WAL
// frame is a page written (two pwrite calls) and later copied back by a checkpoint. It logs
// the b-trees each step writes and fails when a turn's commits write more than the bounds.
func TestPlainTurnWALFrames(t *testing.T) {
	mainPer, evPer := measureTurns(t, plainTurnSteps, 20)
	const maxMain, maxEvents = 11, 5
	if mainPer > maxMain {
		t.Errorf("main database: %.1f WAL frames per plain turn, want at most %d", mainPer, maxMain)
	}
	if evPer > maxEvents {
		t.Errorf("event log: %.1f WAL frames per plain turn, want at most %d", evPer, maxEvents)
	}
}

// TestToolTurnWALFrames is the same guard for a turn with one tool call.
func TestToolTurnWALFrames(t *testing.T) {
	mainPer, evPer := measureTurns(t, toolTurnSteps, 20)
	const maxMain, maxEvents = 19, 5
	if mainPer > maxMain {
		t.Errorf("main database: %.1f WAL frames per one-tool turn, want at most %d", mainPer, maxMain)
	}
	if evPer > maxEvents {
		t.Errorf("event log: %.1f WAL frames per one-tool turn, want at most %d", evPer, maxEvents)
	}
}

// BenchmarkSequentialTurnWrites measures the store writes of one turn at a time (the spaced
// turns of a quiet gateway, where no group commit shares pages): ns/op is per turn, and
// frames/turn what it wrote to both logs, cpu-µs/turn the process's CPU time (the writer and
// checkpointer goroutines included). Run it with -benchtime of at most 800x, so the WAL does not
// restart (restartFrames) and the frame count stays exact.
func BenchmarkSequentialTurnWrites(b *testing.B) {
	for name, steps := range map[string]func(*Store, int) []turnStep{"plain": plainTurnSteps, "one-tool": toolTurnSteps} {
		b.Run(name, func(b *testing.B) {
			s := openTemp(b, Config{})
			ctx := context.Background()
			for i := range 4 {
				key := echogate.SessionKey(fmt.Sprintf("web:s%d", i))
				if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: key, UserID: "web:u1", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
					b.Fatal(err)
				}
			}
			m0, e0 := walFrames(b, s.path), walFrames(b, s.eventsPath)
			cpu0 := processCPU(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for _, st := range steps(s, i) {
					if err := st.fn(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/turn")
			frames := walFrames(b, s.path) - m0 + walFrames(b, s.eventsPath) - e0
			b.ReportMetric(float64(frames)/float64(b.N), "frames/turn")
		})
	}
}

// processCPU returns the CPU time (user and system) the test process used so far.
func processCPU(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
