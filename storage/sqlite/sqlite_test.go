package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/storagetest"
)

// openTemp opens and migrates a store on a fresh file in t's temp dir.
func openTemp(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "echogate.db")
	}
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	if err := s.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Store { return openTemp(t, Config{}) })
}

func TestNewValidates(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg     Config
		wantErr string // substring; empty: valid
	}{
		"zero value":         {Config{}, ""},
		"full":               {Config{Path: "/tmp/x.db", BusyTimeout: time.Second, ReadConns: 8, Synchronous: "FULL"}, ""},
		"memory":             {Config{Path: ":memory:"}, "plain file path"},
		"uri":                {Config{Path: "file:x.db?mode=ro"}, "plain file path"},
		"query":              {Config{Path: "x.db?_pragma=foo"}, "must not contain '?'"},
		"directory":          {Config{Path: "data/"}, "names a directory"},
		"negative busy":      {Config{BusyTimeout: -time.Second}, "busy timeout"},
		"too many readers":   {Config{ReadConns: 1000}, "read conns"},
		"negative readers":   {Config{ReadConns: -1}, "read conns"},
		"bad synchronous":    {Config{Synchronous: "off"}, `use "normal" or "full"`},
		"synchronous normal": {Config{Synchronous: " Normal "}, ""},
	} {
		s, err := New(tt.cfg, nil)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: New(%+v) = %v, want nil", name, tt.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: New(%+v) = %v, %v; want an ErrInvalid error mentioning %q", name, tt.cfg, s, err, tt.wantErr)
		}
	}
}

func TestNewDefaults(t *testing.T) {
	s, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs(DefaultPath)
	if s.Path() != want {
		t.Errorf("New(Config{}).Path() = %q, want %q", s.Path(), want)
	}
	if s.busyTimeout != DefaultBusyTimeout || s.readConns < minReadConns || s.synchronous != "normal" {
		t.Errorf("New(Config{}) = busy %s, readers %d, sync %q; want %s, >= %d, normal", s.busyTimeout, s.readConns, s.synchronous, DefaultBusyTimeout, minReadConns)
	}
	if _, err := os.Stat(filepath.Dir(want)); err == nil && false {
		t.Log("New must not create anything") // New does no I/O: checked by TestOpenCreatesDirectory
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "echogate.db")
	s, err := New(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("after New, stat(dir) = %v, want not exist (New does no I/O)", err)
	}
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping = %v, want nil", err)
	}
	var mode string
	if err := s.st.Load().r.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := s.Open(ctx); err == nil {
		t.Errorf("Open twice = nil, want an error")
	}
}

func TestLifecycleErrors(t *testing.T) {
	ctx := context.Background()
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "x.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, "k"); !errors.Is(err, ErrNotOpen) {
		t.Errorf("GetSession before Open = %v, want ErrNotOpen", err)
	}
	if err := s.Migrate(ctx); !errors.Is(err, ErrNotOpen) {
		t.Errorf("Migrate before Open = %v, want ErrNotOpen", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrNotOpen) {
		t.Errorf("Ping before Open = %v, want ErrNotOpen", err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close twice = %v, want nil", err)
	}
	if _, err := s.ClaimEvent(ctx, "k", nil, time.Time{}); !errors.Is(err, ErrClosed) {
		t.Errorf("ClaimEvent after Close = %v, want ErrClosed", err)
	}
	if err := s.Open(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close = %v, want ErrClosed", err)
	}
}

func TestOpenRejectsNonDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(context.Background()); err == nil {
		s.Close()
		t.Fatalf("Open(%s) = nil, want an error", path)
	} else if !strings.Contains(err.Error(), path) {
		t.Errorf("Open(text file) = %v, want the path named", err)
	}
}

func TestMigrateIdempotent(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	for i := range 3 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+2, err)
		}
	}
	applied, known, err := s.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := builtinMigrations()
	if applied != len(ms) || known != len(ms) {
		t.Errorf("SchemaVersion = %d, %d; want %d, %d", applied, known, len(ms), len(ms))
	}
	var rows int
	if err := s.st.Load().r.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) {
		t.Errorf("schema_migrations rows = %d, want %d (one per migration)", rows, len(ms))
	}
	var name string
	var at int64
	if err := s.st.Load().r.QueryRowContext(ctx, "SELECT name, applied_at FROM schema_migrations WHERE version = 1").Scan(&name, &at); err != nil {
		t.Fatal(err)
	}
	if name != "0001_init" || at <= 0 {
		t.Errorf("schema_migrations[1] = %q at %d, want 0001_init at a real time", name, at)
	}
}

func TestSchemaVersionOfFreshDatabase(t *testing.T) {
	ctx := context.Background()
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "x.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	applied, known, err := s.SchemaVersion(ctx)
	if err != nil || applied != 0 || known < 1 {
		t.Errorf("SchemaVersion(fresh) = %d, %d, %v; want 0, >= 1, nil", applied, known, err)
	}
	if _, err := s.GetSession(ctx, "k"); err == nil || errors.Is(err, echogate.ErrNotFound) {
		t.Errorf("GetSession before Migrate = %v, want a real error (no table), not not-found", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "echogate.db")
	first, err := New(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	if ok, err := first.ClaimEvent(ctx, "slack:Ev1", []byte(`{"id":"Ev1"}`), at); err != nil || !ok {
		t.Fatalf("ClaimEvent = %v, %v", ok, err)
	}
	if err := first.AppendMessages(ctx, "s", "t1", []echogate.Message{{Role: echogate.RoleUser, Content: "before restart"}}, at); err != nil {
		t.Fatal(err)
	}
	if err := first.SavePending(ctx, echogate.PendingTurn{Session: "s", Turn: "t1", Kind: echogate.PauseApproval, State: []byte("state"), CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := openTemp(t, Config{Path: path}) // Open + Migrate again: the restart
	if ok, err := second.ClaimEvent(ctx, "slack:Ev1", nil, at.Add(time.Minute)); err != nil || ok {
		t.Errorf("ClaimEvent(Ev1) after restart = %v, %v; want false (duplicate), nil", ok, err)
	}
	evs, err := second.UnfinishedEvents(ctx, at.Add(time.Hour), 0)
	if err != nil || len(evs) != 1 || string(evs[0].Payload) != `{"id":"Ev1"}` {
		t.Errorf("UnfinishedEvents after restart = %+v, %v; want Ev1 to replay", evs, err)
	}
	h, err := second.History(ctx, "s", 0)
	if err != nil || len(h) != 1 || h[0].Message.Content != "before restart" {
		t.Errorf("History after restart = %+v, %v", h, err)
	}
	if err := second.AppendMessages(ctx, "s", "t2", []echogate.Message{{Role: echogate.RoleUser, Content: "after"}}, at); err != nil {
		t.Fatal(err)
	}
	h, _ = second.History(ctx, "s", 0)
	if len(h) != 2 || h[1].Seq <= h[0].Seq {
		t.Errorf("History after appending post-restart = %+v, want seq to continue", h)
	}
	p, err := second.GetPending(ctx, "s")
	if err != nil || string(p.State) != "state" {
		t.Errorf("GetPending after restart = %+v, %v; want the paused turn", p, err)
	}
}

func TestMigrateRejectsNewerSchema(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	err := s.st.Load().wr.do(ctx, false, func(tx *wtx) error {
		_, err := tx.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future', 0)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Migrate(ctx)
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade echogate") {
		t.Errorf("Migrate on a newer schema = %v, want ErrSchemaTooNew telling to upgrade", err)
	}
}

func TestMigrateFailureRollsBack(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	ms, err := builtinMigrations()
	if err != nil {
		t.Fatal(err)
	}
	next := len(ms) + 1
	bad := append(ms[:len(ms):len(ms)], migration{version: next, name: "bad",
		sql: "CREATE TABLE half_done (a INTEGER) STRICT; CREATE TABLE broken (a INTEGR) STRICT;"})
	if _, err := s.migrate(ctx, bad); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("migrate(bad) = %v, want an error naming the migration", err)
	}
	applied, _, err := s.SchemaVersion(ctx)
	if err != nil || applied != len(ms) {
		t.Errorf("SchemaVersion after a failed migration = %d, %v; want %d", applied, err, len(ms))
	}
	var n int
	if err := s.st.Load().r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'half_done'").Scan(&n); err != nil || n != 0 {
		t.Errorf("table of the failed migration exists (%d, %v), want it rolled back", n, err)
	}
	good := append(ms[:len(ms):len(ms)], migration{version: next, name: "good", sql: "CREATE TABLE later (a INTEGER) STRICT;"})
	if _, err := s.migrate(ctx, good); err != nil {
		t.Fatalf("migrate(good) after a failure: %v", err)
	}
	if applied, _, _ := s.SchemaVersion(ctx); applied != next {
		t.Errorf("SchemaVersion = %d, want %d", applied, next)
	}
}

func TestLoadMigrations(t *testing.T) {
	for name, tt := range map[string]struct {
		files   map[string]string
		want    []string
		wantErr string
	}{
		"ordered": {map[string]string{"m/0002_b.sql": "B", "m/0001_a.sql": "A"}, []string{"0001_a", "0002_b"}, ""},
		"gap":     {map[string]string{"m/0001_a.sql": "A", "m/0003_c.sql": "C"}, nil, "want 2"},
		"dup":     {map[string]string{"m/0001_a.sql": "A", "m/0001_b.sql": "B"}, nil, "want 2"},
		"name":    {map[string]string{"m/1_a.sql": "A"}, nil, "0001_short_name.sql"},
		"upper":   {map[string]string{"m/0001_Init.sql": "A"}, nil, "0001_short_name.sql"},
	} {
		fsys := fstest.MapFS{}
		for p, body := range tt.files {
			fsys[p] = &fstest.MapFile{Data: []byte(body)}
		}
		ms, err := loadMigrations(fsys, "m")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: loadMigrations = %v, want an error mentioning %q", name, err, tt.wantErr)
			}
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.name)
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: loadMigrations = %q, %v; want %q", name, got, err, tt.want)
		}
	}
	if _, err := builtinMigrations(); err != nil {
		t.Errorf("embedded migrations: %v", err)
	}
}

// Two stores on one file stand for two processes (or a restarted one racing the old): the
// dedupe must still answer "first" exactly once.
func TestClaimAcrossStores(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	// Each store waits for the other's write lock. The default 5s busy timeout is a real-time
	// bound that a starved CI runner can exceed; this test is about exactly-once, so the wait
	// is bounded only generously.
	cfg := Config{Path: path, BusyTimeout: 2 * time.Minute}
	a := openTemp(t, cfg)
	b := openTemp(t, cfg)
	const n = 50
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins = map[string]int{}
	)
	for i := range n {
		for _, s := range []*Store{a, b} {
			wg.Go(func() {
				key := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				ok, err := s.ClaimEvent(ctx, key, nil, time.Time{})
				if err != nil {
					t.Errorf("ClaimEvent(%q): %v", key, err)
					return
				}
				if ok {
					mu.Lock()
					wins[key]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(wins) != n {
		t.Errorf("%d keys claimed from two stores: %d won, want %d", n, len(wins), n)
	}
	for k, w := range wins {
		if w != 1 {
			t.Errorf("key %q won %d times, want 1", k, w)
		}
	}
}

func TestZeroTimesUseClock(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	s := openTemp(t, Config{Now: func() time.Time { return now }})
	if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: "s"}); err != nil {
		t.Fatal(err)
	}
	si, _ := s.GetSession(ctx, "s")
	if !si.CreatedAt.Equal(now) || !si.UpdatedAt.Equal(now) {
		t.Errorf("session with zero times = %v/%v, want the clock %v", si.CreatedAt, si.UpdatedAt, now)
	}
	if err := s.CreateTurn(ctx, echogate.TurnRecord{ID: "t", Session: "s"}); err != nil {
		t.Fatal(err)
	}
	tr, _ := s.GetTurn(ctx, "t")
	if !tr.StartedAt.Equal(now) || !tr.EndedAt.IsZero() {
		t.Errorf("turn with zero times = %v/%v, want %v and zero", tr.StartedAt, tr.EndedAt, now)
	}
	if _, err := s.RecordUsage(ctx, echogate.UsageRecord{Session: "s"}); err != nil {
		t.Fatal(err)
	}
	if sum, _ := s.SumUsage(ctx, echogate.UsageFilter{Since: now, Until: now.Add(time.Microsecond)}); sum != (echogate.Usage{}) {
		t.Errorf("SumUsage = %+v", sum) // zero usage, but the record must be in the window:
	}
	l, _ := s.ListUsage(ctx, echogate.UsageFilter{Since: now, Until: now.Add(time.Microsecond)}, 0)
	if len(l) != 1 {
		t.Errorf("ListUsage(window at clock) = %d records, want 1", len(l))
	}
}

func TestPruneEvents(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = pruneBatch + 10 // more than one batch
	for i := range n {
		key := "e" + time.Duration(i).String()
		if _, err := s.ClaimEvent(ctx, key, nil, base); err != nil {
			t.Fatal(err)
		}
		if i%10 != 0 { // every tenth stays unfinished
			if err := s.CompleteEvent(ctx, key, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cutoff := base.Add(time.Duration(n) * time.Millisecond)
	got, err := s.PruneEvents(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(n - (n+9)/10); got != want {
		t.Errorf("PruneEvents = %d, want %d", got, want)
	}
	un, _ := s.UnfinishedEvents(ctx, cutoff, 0)
	if len(un) != (n+9)/10 {
		t.Errorf("UnfinishedEvents after prune = %d, want %d (unfinished are never pruned)", len(un), (n+9)/10)
	}
	if ok, _ := s.ClaimEvent(ctx, "e1ns", nil, base); !ok {
		t.Errorf("ClaimEvent(pruned key) = false, want true (pruned keys are forgotten)")
	}
}

func TestCloseUnderLoad(t *testing.T) {
	// Close while readers and writers run: in-flight calls finish or fail cleanly (no panic,
	// no race), later calls get ErrClosed.
	ctx := context.Background()
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "x.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				key := echogate.SessionKey("s" + string(rune('a'+i)))
				if err := s.AppendMessages(ctx, key, "t", []echogate.Message{{Role: echogate.RoleUser, Content: "x"}}, time.Time{}); errors.Is(err, ErrClosed) {
					return
				}
				if _, err := s.History(ctx, key, 5); errors.Is(err, ErrClosed) {
					return
				}
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close under load = %v", err)
	}
	close(stop)
	wg.Wait()
	if err := s.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close = %v, want ErrClosed", err)
	}
}

// Events recorded in the main database by earlier versions move into the event log at
// Migrate: unfinished ones are still replayed, completed ones still dedupe.
func TestMigrateMovesEventsIntoTheEventLog(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	// As an earlier version left them: in the main database's events table.
	err := s.st.Load().wr.do(ctx, true, func(tx *wtx) error {
		for _, q := range []string{
			`INSERT INTO events (key, payload, claimed_at) VALUES ('web:old-open', x'7b7d', 1000)`,
			`INSERT INTO events (key, payload, claimed_at, completed_at) VALUES ('web:old-done', x'', 1000, 2000)`,
		} {
			if _, err := tx.w.conn.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	open, err := s.UnfinishedEvents(ctx, time.Now(), 0)
	if err != nil || len(open) != 1 || open[0].Key != "web:old-open" || string(open[0].Payload) != "{}" {
		t.Errorf("UnfinishedEvents after the move = %+v, %v; want web:old-open with its payload", open, err)
	}
	if ok, err := s.ClaimEvent(ctx, "web:old-done", nil, time.Time{}); err != nil || ok {
		t.Errorf("ClaimEvent(web:old-done) = %v, %v; want false (still a duplicate)", ok, err)
	}
	var left int
	if err := s.st.Load().r.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&left); err != nil || left != 0 {
		t.Errorf("events left in the main database = %d, %v; want 0", left, err)
	}
	// Idempotent: a second Migrate finds nothing to move.
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate = %v", err)
	}
	if _, err := os.Stat(EventsPath(s.Path())); err != nil {
		t.Errorf("event log file: %v", err)
	}
}

func TestEventsPath(t *testing.T) {
	for in, want := range map[string]string{
		"/data/echogate.db": "/data/echogate-events.db",
		"/data/gw":          "/data/gw-events",
		"/d.v1/gw.sqlite":   "/d.v1/gw-events.sqlite",
	} {
		if got := EventsPath(in); got != want {
			t.Errorf("EventsPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// Several pending migrations are one upgrade: when the last fails, the ones before it are
// rolled back with it, the version stays, and the next start applies them all.
func TestMigrateUpgradesWholeOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Config{})
	ms, err := builtinMigrations()
	if err != nil {
		t.Fatal(err)
	}
	n := len(ms)
	first := migration{version: n + 1, name: "first", sql: "CREATE TABLE first_step (a INTEGER) STRICT;"}
	second := migration{version: n + 2, name: "second", sql: "ALTER TABLE first_step ADD COLUMN b TEXT;"}
	bad := migration{version: n + 3, name: "bad", sql: "CREATE TABLE broken (a INTEGR) STRICT;"}
	if _, err := s.migrate(ctx, append(ms[:n:n], first, second, bad)); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("migrate(first, second, bad) = %v, want an error naming bad", err)
	}
	if applied, _, err := s.SchemaVersion(ctx); err != nil || applied != n {
		t.Errorf("SchemaVersion after the failed upgrade = %d, %v; want %d (nothing of it applied)", applied, err, n)
	}
	var tables int
	if err := s.st.Load().r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'first_step'").Scan(&tables); err != nil || tables != 0 {
		t.Errorf("first_step exists (%d, %v) after the upgrade failed, want it rolled back", tables, err)
	}
	if _, err := s.migrate(ctx, append(ms[:n:n], first, second)); err != nil {
		t.Fatalf("migrate(first, second): %v", err)
	}
	if applied, _, _ := s.SchemaVersion(ctx); applied != n+2 {
		t.Errorf("SchemaVersion = %d, want %d", applied, n+2)
	}
	var cols int
	if err := s.st.Load().r.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info('first_step') WHERE name IN ('a', 'b')").Scan(&cols); err != nil || cols != 2 {
		t.Errorf("first_step has %d of its columns a and b (%v), want both migrations applied", cols, err)
	}
}
