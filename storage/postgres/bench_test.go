package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/echogate/echogate/storage/postgres"
)

// Benchmarks report figures for the hot paths of a turn; they never gate on time.
//
//	eval "$(scripts/pg-test-cluster.sh start)"
//	go test -run '^$' -bench . -benchtime 2s ./storage/postgres/

func BenchmarkClaimEvent(b *testing.B) {
	st := newStore(b)
	ctx := ctxT(b)
	payload := []byte(`{"ID":"Ev123","Kind":1,"Text":"hello"}`)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.ClaimEvent(ctx, fmt.Sprintf("slack:E%d", n.Add(1)), payload, time.Time{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkAppendMessages4(b *testing.B) {
	st := newStore(b)
	ctx := ctxT(b)
	msgs := []echogate.Message{
		{Role: echogate.RoleUser, Content: "what's the weather in Lisbon?"},
		{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "c1", Name: "http_fetch", Arguments: `{"url":"https://wttr.in/Lisbon"}`}}},
		{Role: echogate.RoleTool, ToolCallID: "c1", Name: "http_fetch", Content: "Sunny, 21°C"},
		{Role: echogate.RoleAssistant, Content: "Sunny and 21°C in Lisbon."},
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		// One session per goroutine, as the dispatcher runs one turn per session at a time.
		key := echogate.SessionKey(fmt.Sprintf("web:s%d", n.Add(1)))
		for pb.Next() {
			if err := st.AppendMessages(ctx, key, "t", msgs, time.Time{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkHistory50(b *testing.B) {
	st := newStore(b)
	ctx := ctxT(b)
	key := echogate.SessionKey("web:long")
	msgs := make([]echogate.Message, 100)
	for i := range msgs {
		msgs[i] = echogate.Message{Role: echogate.RoleUser, Content: fmt.Sprintf("message %d with some text in it", i)}
	}
	for range 5 {
		if err := st.AppendMessages(ctx, key, "t", msgs, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h, err := st.History(ctx, key, 50)
		if err != nil || len(h) != 50 {
			b.Fatalf("History = %d, %v", len(h), err)
		}
	}
}

func BenchmarkTryLockSession(b *testing.B) {
	st := newStore(b)
	ctx := ctxT(b)
	key := echogate.SessionKey(randomName("web:bench"))
	b.ReportAllocs()
	for b.Loop() {
		unlock, ok, err := st.TryLockSession(ctx, key)
		if err != nil || !ok {
			b.Fatalf("TryLockSession = %v, %v", ok, err)
		}
		unlock()
	}
}

// BenchmarkLaneTurns runs a plain turn's store work — the claim with the session's lock, the
// start with its reads, the end releasing the lock — in many sessions at once, one goroutine
// each (as many sessions' turns run at once), on the default 8 lock lanes. trips/turn is below
// 3 when the lanes group what waits for them: the figure group commit buys.
func BenchmarkLaneTurns(b *testing.B) {
	tc := &tripCounter{}
	st := openStore(b, postgres.Config{Schema: newSchema(b), MaxConns: 8, Tracer: tc})
	ctx := ctxT(b)
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	var sessions atomic.Int64
	tc.reset()
	b.SetParallelism(64) // 128 sessions at once on 2 cores
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := echogate.SessionKey(fmt.Sprintf("web:lane%d", sessions.Add(1)))
		for pb.Next() {
			if err := laneTurn(ctx, st, key); err != nil {
				b.Error(err)
				return
			}
		}
	})
	n, _ := tc.get()
	b.ReportMetric(float64(n)/float64(b.N), "trips/turn")
}

// laneTurn is one plain turn's store work in session key.
func laneTurn(ctx context.Context, st *postgres.Store, key echogate.SessionKey) error {
	ev, id := randomName("ev_"), randomName("t_")
	first, unlock, locked, _, err := st.ClaimEventLocking(ctx, ev, nil, time.Time{}, key)
	if err != nil || !first || !locked {
		return fmt.Errorf("ClaimEventLocking = %v, %v, %v", first, locked, err)
	}
	defer unlock()
	if _, err := st.BeginWithInput(ctx, echogate.TurnRecord{ID: id, Session: key, EventKey: ev, Status: echogate.TurnRunning}, nil, time.Time{},
		turnstart.Reads{Checkpoint: true}); err != nil {
		return err
	}
	return st.FinishTurn(ctx, echogate.TurnEnd{Session: key, EventKey: ev, ReleaseSession: true,
		Turn:     echogate.TurnRecord{ID: id, Session: key, Status: echogate.TurnDoneSt},
		Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "q"}, {Role: echogate.RoleAssistant, Content: "a"}},
		Usage:    []echogate.UsageRecord{{Turn: id, Session: key, Usage: echogate.Usage{Kind: "chat", Model: "m", InputTokens: 10, OutputTokens: 5}}}})
}
