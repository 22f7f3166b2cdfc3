package pgtrips

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/compress"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/tools"
)

// latency is the database's distance the tracer adds to each round trip: concurrent round trips
// then overlap whatever the scheduler does, and the ones a turn waits for one after another
// show as a chain.
const latency = 25 * time.Millisecond

// trip is one round trip: a statement or a batch, with when it was sent and answered.
type trip struct {
	sql        string
	start, end time.Time
}

// tracer records the store's round trips (query and lock pools).
type tracer struct {
	mu    sync.Mutex
	on    bool
	trips []trip
}

type tripKey struct{}

func (tr *tracer) begin(ctx context.Context, sql string) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.on {
		return ctx
	}
	tr.trips = append(tr.trips, trip{sql: sql, start: time.Now()})
	return context.WithValue(ctx, tripKey{}, len(tr.trips)-1)
}

func (tr *tracer) finish(ctx context.Context) {
	i, ok := ctx.Value(tripKey{}).(int)
	if !ok {
		return
	}
	time.Sleep(latency) // the answer's way back from a database `latency` away
	tr.mu.Lock()
	tr.trips[i].end = time.Now()
	tr.mu.Unlock()
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return tr.begin(ctx, d.SQL)
}
func (tr *tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	tr.finish(ctx)
}
func (tr *tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	sql := make([]string, 0, d.Batch.Len())
	for _, q := range d.Batch.QueuedQueries {
		sql = append(sql, q.SQL)
	}
	return tr.begin(ctx, "batch["+strings.Join(sql, " ; ")+"]")
}
func (tr *tracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (tr *tracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	tr.finish(ctx)
}

func (tr *tracer) record(on bool) []trip {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.on = on
	out := tr.trips
	tr.trips = nil
	return out
}

// criticalPath returns the longest chain of round trips each sent after the previous one was
// answered (the most that do not overlap, chosen by earliest answer): the ones the turn waited
// for one after another.
func criticalPath(trips []trip) []trip {
	s := slices.Clone(trips)
	slices.SortFunc(s, func(a, b trip) int { return a.end.Compare(b.end) })
	var chain []trip
	var last time.Time
	for _, t := range s {
		if !t.start.Before(last) {
			chain = append(chain, t)
			last = t.end
		}
	}
	return chain
}

func short(sql string) string {
	f := strings.Join(strings.Fields(sql), " ")
	if len(f) > 90 {
		f = f[:90] + "…"
	}
	return f
}

// poolConns is the store's pool size; warmPool opens them all before the counted turn, so
// that no connection's set-up (its type look-ups) is counted as the turn's.
const poolConns = 8

// warmPool holds n of the store's connections at once, which opens them.
func warmPool(t *testing.T, st *postgres.Store, n int) {
	t.Helper()
	var held, wg sync.WaitGroup
	held.Add(n)
	all := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- st.WithConn(context.Background(), func(*pgx.Conn) error {
				held.Done()
				<-all
				return nil
			})
		}()
	}
	held.Wait()
	close(all)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("warm the pool: %v", err)
		}
	}
}

// openStore returns an open, migrated store on a schema of the test's own (direct) or, with
// pooled, on a database of its own reached through PgBouncer (database.pooler: transaction;
// PgBouncer does not carry a schema's search_path).
func openStore(t *testing.T, tr *tracer, pooled bool) *postgres.Store {
	t.Helper()
	direct := os.Getenv("ECHOGATE_TEST_DATABASE_URL")
	if direct == "" {
		t.Skip("ECHOGATE_TEST_DATABASE_URL not set")
	}
	through := os.Getenv("ECHOGATE_TEST_PGBOUNCER_URL")
	if pooled && through == "" {
		t.Skip("ECHOGATE_TEST_PGBOUNCER_URL not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("echogate_trips_%d", time.Now().UnixNano())
	create, drop := "CREATE SCHEMA "+name, "DROP SCHEMA "+name+" CASCADE"
	cfg := postgres.Config{URL: direct, Schema: name, MaxConns: poolConns, MaxLockConns: 2, Tracer: tr}
	if pooled {
		create, drop = "CREATE DATABASE "+name, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"
		u, err := url.Parse(through)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		cfg = postgres.Config{URL: u.String(), Pooler: postgres.PoolerTransaction, MaxConns: poolConns, Tracer: tr}
	}
	if _, err := admin.Exec(ctx, create); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, drop); err != nil {
			t.Errorf("%s: %v", drop, err)
		}
		_ = admin.Close(ctx)
	})
	st, err := postgres.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPlainTurnRoundTripsOnPostgres: a plain turn on PostgreSQL, from the event's arrival
// (Submit) to its end write (FinishTurn), its lock's release included (each round trip costs
// CPU on both sides, critical or not), makes 3 round trips in all, one after another: the claim
// with the session's lock and the paused-turn read, the start (the context's reads with the
// turn's record), the end with the lock's release. So it does directly (an advisory lock) and
// through PgBouncer (a lease row). The session's third turn is counted: the first prepares the
// statements and writes the session record, as any conversation's first message does.
func TestPlainTurnRoundTripsOnPostgres(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pooled bool
	}{{"Direct", false}, {"PgBouncer", true}} {
		t.Run(tt.name, func(t *testing.T) { plainTurnRoundTrips(t, tt.pooled) })
	}
}

func plainTurnRoundTrips(t *testing.T, pooled bool) {
	// The claim takes the session's lock (directly an advisory lock, through a pooler a lease
	// row) and the end write gives it back.
	const maxCritical, maxTotal = 3, 3
	tr := &tracer{}
	st := openStore(t, tr, pooled)
	model := agenttest.NewScriptedModel()
	model.SetDefault(agenttest.Reply("hello"))
	comp, err := compress.New(compress.Config{ChatModel: "m"}, model, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	rep := pipelinetest.NewReplier(echogate.PlatformWeb)
	p, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Store: st, Model: model, Tools: reg, Compactor: comp,
		Repliers: map[string]pipeline.Replier{echogate.PlatformWeb: rep}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	<-p.Started()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)

	conv := echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "trips", DM: true}
	turn := func(id string) {
		t.Helper()
		ev := echogate.InboundEvent{ID: id, Kind: echogate.KindDirect, Conversation: conv, Actor: echogate.Actor{ID: "u1"}, Text: "hi " + id}
		if err := p.Submit(context.Background(), ev); err != nil {
			t.Fatalf("Submit(%s) = %v", id, err)
		}
		select {
		case <-rep.Done:
		case <-time.After(30 * time.Second):
			t.Fatalf("turn %s did not finish within 30s", id)
		}
	}
	turn("e1")
	turn("e2")
	warmPool(t, st, poolConns)
	tr.record(true)
	turn("e3")
	stop() // every round trip of the turn has been answered
	trips := tr.record(false)

	// The end write is the batch that completes the event (FinishTurn); what follows it (the
	// lock's release) is not on the path to the answer.
	endAt := -1
	for i, tp := range trips {
		if strings.Contains(tp.sql, "completed_at") && strings.HasPrefix(tp.sql, "batch[") {
			endAt = i
		}
	}
	if endAt < 0 {
		t.Fatalf("no end write (FinishTurn's batch) among the turn's round trips: %v", trips)
	}
	var path []trip
	for _, tp := range trips {
		if !tp.start.After(trips[endAt].end) && !notTheTurns(tp.sql) {
			path = append(path, tp)
		}
	}
	chain := criticalPath(path)
	var b strings.Builder
	for _, tp := range path {
		fmt.Fprintf(&b, "\n  %6.1f ms → %6.1f ms  %s", ms(tp.start, path[0].start), ms(tp.end, path[0].start), short(tp.sql))
	}
	t.Logf("plain turn: %d round trips from the event to its end write, %d on the critical path:%s", len(path), len(chain), b.String())
	if len(chain) > maxCritical {
		t.Errorf("plain turn's critical path = %d round trips, want ≤ %d", len(chain), maxCritical)
	}
	total := turnTrips(trips, path[0], trips[endAt])
	t.Logf("plain turn: %d round trips in all (the lock's release included)", len(total))
	if len(total) > maxTotal {
		var all strings.Builder
		for _, tp := range total {
			fmt.Fprintf(&all, "\n  %s", short(tp.sql))
		}
		t.Errorf("plain turn's round trips in all = %d, want ≤ %d:%s", len(total), maxTotal, all.String())
	}
}

// turnTrips are the counted turn's round trips, from its first (first) to its lock's release
// after its end write (end): neither the previous turn's release, which may still be in flight
// when the event arrives, nor what runs on its own clock (onItsOwnClock).
func turnTrips(trips []trip, first, end trip) []trip {
	var out []trip
	for _, tp := range trips {
		release := isRelease(tp.sql)
		if onItsOwnClock(tp.sql) || tp.start.Before(first.start) || release && tp.start.Before(end.start) {
			continue
		}
		out = append(out, tp)
	}
	return out
}

// notTheTurns tells the round trips that are not the counted turn's: the previous turn's lock
// release, which may still be in flight when the event arrives, and what runs on its own clock.
func notTheTurns(sql string) bool {
	return isRelease(sql) || onItsOwnClock(sql)
}

// onItsOwnClock tells what the gateway sends on a timer rather than for a turn: the stops poll
// through a pooler, the janitor's read of the pending approvals (ListPending: once in CI it
// landed inside the counted turn, counted as a fourth round trip), the lease renewals.
func onItsOwnClock(sql string) bool {
	return strings.HasPrefix(sql, "SELECT id, session, actor FROM stops") ||
		strings.Contains(sql, "FROM pending ORDER BY created_at") ||
		strings.HasPrefix(sql, "UPDATE session_leases SET expires_at")
}

// isRelease tells a round trip that only gives a session's lock back; an end write that
// releases the lock with it (TurnEnd.ReleaseSession) is the turn's own.
func isRelease(sql string) bool {
	return (strings.Contains(sql, "pg_advisory_unlock") || strings.Contains(sql, "DELETE FROM session_leases")) &&
		!strings.Contains(sql, "completed_at")
}

func ms(t, from time.Time) float64 { return float64(t.Sub(from).Microseconds()) / 1000 }
