package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/storage/postgres"
)

// tripCounter is a pgx tracer that counts what the store sends: each Query/Exec (BEGIN and
// COMMIT included) and each batch is one round trip once its statements are prepared. What a
// store sends on its own clock is not counted (background): one landing inside a measured call
// would make the count flaky.
type tripCounter struct {
	mu    sync.Mutex
	trips int
	sql   []string
}

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if background(d.SQL) {
		return ctx
	}
	c.mu.Lock()
	c.trips++
	c.sql = append(c.sql, strings.Fields(d.SQL)[0])
	c.mu.Unlock()
	return ctx
}
func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.mu.Lock()
	c.trips++
	c.sql = append(c.sql, "(batch)")
	c.mu.Unlock()
	return ctx
}
func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// background tells the statements a store sends on its own clock: lease renewals (every
// LeaseTTL/3 through a pooler), the stops poll, and the stops watch's LISTEN and first read
// (its connection is traced too; it reconnects a second after losing it).
func background(sql string) bool {
	return strings.HasPrefix(sql, "UPDATE session_leases SET expires_at") || strings.HasPrefix(sql, "SELECT id, session, actor") ||
		strings.HasPrefix(sql, "LISTEN ")
}

func (c *tripCounter) reset() {
	c.mu.Lock()
	c.trips, c.sql = 0, nil
	c.mu.Unlock()
}

func (c *tripCounter) get() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips, append([]string(nil), c.sql...)
}

// TestTurnWritesRoundTrips: the writes of a turn's end and of its progress are one round trip
// each (one implicit transaction), not BEGIN, a batch and COMMIT.
func TestTurnWritesRoundTrips(t *testing.T) {
	t.Parallel()
	tc := &tripCounter{}
	st := openStore(t, postgres.Config{Schema: newSchema(t), MaxConns: 4, MaxLockConns: 1, Tracer: tc})
	ctx := ctxT(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key := echogate.SessionKey("web:trips")
	for name, write := range map[string]func(i int) error{
		"FinishTurn": func(i int) error {
			id := randomName("t_")
			if err := st.CreateTurn(ctx, echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnRunning}); err != nil {
				return err
			}
			tc.reset()
			return st.FinishTurn(ctx, echogate.TurnEnd{Session: key, Turn: echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnDoneSt},
				Messages: []echogate.Message{{Role: echogate.RoleAssistant, Content: "a"}},
				Usage:    []echogate.UsageRecord{{Turn: id, Session: key, Usage: echogate.Usage{Kind: "chat", Model: "m"}}}})
		},
		"RecordProgress": func(i int) error {
			tc.reset()
			return st.RecordProgress(ctx, key, "t", []echogate.Message{{Role: echogate.RoleUser, Content: "q"}},
				[]echogate.UsageRecord{{Turn: "t", Session: key, Usage: echogate.Usage{Kind: "chat", Model: "m"}}}, time.Time{})
		},
	} {
		for i := range 3 { // the first call prepares the statements
			if err := write(i); err != nil {
				t.Fatalf("%s #%d: %v", name, i, err)
			}
		}
		if n, sql := tc.get(); n != 1 {
			t.Errorf("%s: %d round trips %v, want 1", name, n, sql)
		}
	}
}

// TestSendAtomicRollsBackTogether: the statements of one implicit-transaction batch commit or
// roll back together.
func TestSendAtomicRollsBackTogether(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := ctxT(t)
	err := st.WithConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE TABLE atomic_probe (n int)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue("INSERT INTO atomic_probe VALUES (1)")
	b.Queue("SELECT 1 / (SELECT count(*) FROM atomic_probe WHERE n = 2)") // division by zero
	if err := st.SendAtomic(ctx, b); err == nil {
		t.Fatal("SendAtomic of a failing batch = nil, want the division's error")
	}
	var n int
	if err := st.WithConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT count(*) FROM atomic_probe").Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("rows after a failed atomic batch = %d, want 0 (the insert rolled back with it)", n)
	}
}
