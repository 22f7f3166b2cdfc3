package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
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
