package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// BenchmarkTurnWrites measures the store writes of one turn, as the pipeline does them:
// claim event, upsert session, create turn, append 4 messages, record usage, update turn,
// complete event. Turns run in parallel over 1000 sessions from 1000 goroutines; ns/op is per
// turn (wall time / turns), turns/s is its inverse.
func BenchmarkTurnWrites(b *testing.B) {
	for _, sync := range []string{"normal", "full"} {
		b.Run("synchronous="+sync, func(b *testing.B) {
			s := openTemp(b, Config{Synchronous: sync})
			benchTurns(b, s, 1000)
		})
	}
}

// BenchmarkTurnWithHistory adds the read of the turn's context (the last 50 messages).
func BenchmarkTurnWithHistory(b *testing.B) {
	s := openTemp(b, Config{})
	ctx := context.Background()
	for i := range 1000 {
		key := echogate.SessionKey(fmt.Sprintf("bench:s%d", i))
		msgs := make([]echogate.Message, 50)
		for j := range msgs {
			msgs[j] = echogate.Message{Role: echogate.RoleUser, Content: "earlier message with some realistic length to it"}
		}
		if err := s.AppendMessages(ctx, key, "seed", msgs, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	benchTurnsRead(b, s, 1000)
}

func benchTurns(b *testing.B, s *Store, sessions int) { runBench(b, s, sessions, false) }

func benchTurnsRead(b *testing.B, s *Store, sessions int) { runBench(b, s, sessions, true) }

func runBench(b *testing.B, s *Store, sessions int, withHistory bool) {
	// A cancellable ctx like the pipeline's, so the driver's interrupt path is measured too.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seq atomic.Int64
	payload := []byte(`{"ID":"Ev0123456789","Kind":1,"Conversation":{"Platform":"slack","Channel":"C0123456"},"Text":"what is the weather in Zurich tomorrow?"}`)
	msgs := []echogate.Message{
		{Role: echogate.RoleUser, Content: "what is the weather in Zurich tomorrow?"},
		{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "call_1", Name: "http_fetch", Arguments: `{"url":"https://wttr.in/Zurich"}`}}},
		{Role: echogate.RoleTool, ToolCallID: "call_1", Name: "http_fetch", Content: "Zurich: ⛅️ +12°C, wind 9 km/h, rain 0.1 mm"},
		{Role: echogate.RoleAssistant, Content: "Tomorrow in Zurich: partly cloudy, around 12°C, light wind and almost no rain."},
	}
	b.SetParallelism(max(1, sessions/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			key := echogate.SessionKey(fmt.Sprintf("bench:s%d", n%int64(sessions)))
			ev := fmt.Sprintf("slack:Ev%d", n)
			turn := fmt.Sprintf("turn-%d", n)
			now := time.Now()
			if ok, err := s.ClaimEvent(ctx, ev, payload, now); err != nil || !ok {
				b.Errorf("ClaimEvent = %v, %v", ok, err)
				return
			}
			if err := s.UpsertSession(ctx, echogate.SessionInfo{Key: key, UserID: "slack:U1", CreatedAt: now, UpdatedAt: now}); err != nil {
				b.Error(err)
				return
			}
			tr := echogate.TurnRecord{ID: turn, Session: key, EventKey: ev, UserID: "slack:U1", Status: echogate.TurnRunning, StartedAt: now}
			if err := s.CreateTurn(ctx, tr); err != nil {
				b.Error(err)
				return
			}
			if withHistory {
				if _, err := s.History(ctx, key, 50); err != nil {
					b.Error(err)
					return
				}
			}
			if err := s.AppendMessages(ctx, key, turn, msgs, now); err != nil {
				b.Error(err)
				return
			}
			u := echogate.Usage{Kind: echogate.UsageModel, Model: "gpt-4o-mini", InputTokens: 812, OutputTokens: 64, CostUSD: 0.00016}
			if _, err := s.RecordUsage(ctx, echogate.UsageRecord{Turn: turn, Session: key, UserID: "slack:U1", Channel: "slack:C0123456", Trigger: echogate.TriggerMessage, Usage: u, At: now}); err != nil {
				b.Error(err)
				return
			}
			tr.Status, tr.Model, tr.InputTokens, tr.OutputTokens, tr.CostUSD, tr.EndedAt = echogate.TurnDoneSt, u.Model, u.InputTokens, u.OutputTokens, u.CostUSD, time.Now()
			if err := s.UpdateTurn(ctx, tr); err != nil {
				b.Error(err)
				return
			}
			if err := s.CompleteEvent(ctx, ev, time.Now()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if el := time.Since(start); el > 0 {
		b.ReportMetric(float64(b.N)/el.Seconds(), "turns/s")
	}
}
