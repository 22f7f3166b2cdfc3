package pgtrips

import (
	"context"
	"fmt"
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

func openStore(t *testing.T, tr *tracer) *postgres.Store {
	t.Helper()
	url := os.Getenv("ECHOGATE_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("ECHOGATE_TEST_DATABASE_URL not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("echogate_trips_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		_ = admin.Close(ctx)
	})
	st, err := postgres.New(postgres.Config{URL: url, Schema: schema, MaxConns: 8, MaxLockConns: 2, Tracer: tr}, nil)
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
// (Submit) to its end write (FinishTurn), waits for at most 4 round trips one after another.
// The session's second turn is counted: the first prepares the statements and writes the
// session record, as any conversation's first message does.
func TestPlainTurnRoundTripsOnPostgres(t *testing.T) {
	const maxCritical = 4
	tr := &tracer{}
	st := openStore(t, tr)
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
	turn("e2") // the handled event's lock is given back after its turn: wait for it with e3's
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
		if !tp.start.After(trips[endAt].end) {
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
}

func ms(t, from time.Time) float64 { return float64(t.Sub(from).Microseconds()) / 1000 }
