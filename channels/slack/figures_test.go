package slack

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// streamRun streams a words-long answer at tokensPerSec (model time, on a clock k times faster
// than real) and returns the Web API calls made for it, the wall time from the first delta to
// the first visible update, and the model-time duration of the generation.
func streamRun(tb testing.TB, native bool, words int, tokensPerSec float64) (calls map[string]int, firstVisible, gen time.Duration) {
	tb.Helper()
	clock := newScaledClock(50)
	srv := slacktest.New(slacktest.Options{}) // records wall time
	defer srv.Close()
	ch, err := New(Config{BotToken: srv.BotToken(), SigningSecret: "x", APIURL: srv.APIURL(), Clock: clock, DisableNativeStreaming: !native}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	thread := srv.AddMessage(slacktest.Message{Channel: "C1", User: "U1", Text: "<@UBOT> write an essay"})
	ch.authors.Add(msgKey("C1", thread), "U1")
	conv := echogate.ConversationRef{Platform: "slack", Workspace: "T0001", Channel: "C1", Thread: thread}
	reply := echogate.MessageRef{Platform: "slack", Channel: "C1", ID: thread}

	var answer strings.Builder
	for i := range words {
		if i > 0 && i%80 == 0 {
			answer.WriteString("\n\n")
		}
		fmt.Fprintf(&answer, "word%d ", i)
	}
	text := answer.String()
	// ~1.3 tokens per word: emit one word per 1.3 tokens.
	perWord := time.Duration(1.3 / tokensPerSec * float64(time.Second))

	stop := ch.StartTyping(ctx, conv, reply)
	st, err := ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, ReplyTo: reply})
	if err != nil {
		tb.Fatal(err)
	}
	genStart := clock.Now()
	first := time.Now()
	const tick = 100 * time.Millisecond // the model's deltas arrive in 100ms batches
	perTick := max(1, int(tick/perWord))
	for i, w := range strings.SplitAfter(text, " ") {
		if err := st.Append(ctx, w); err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			first = time.Now()
		}
		if i%perTick == perTick-1 {
			<-clock.After(tick)
		}
	}
	gen = clock.Now().Sub(genStart)
	refs, err := st.Finish(ctx, text)
	if err != nil {
		tb.Fatal(err)
	}
	stop()
	if len(refs) != 1 {
		tb.Fatalf("Finish refs = %d, want 1", len(refs))
	}
	msgs := srv.BotMessages("C1")
	if len(msgs) != 1 || strings.TrimSpace(msgs[0].Text) != strings.TrimSpace(text) {
		tb.Fatalf("answer not posted once in full: %d messages", len(msgs))
	}
	calls = map[string]int{}
	var firstAt time.Time
	for _, c := range srv.Calls() {
		calls[c.Method]++
		if firstAt.IsZero() && (c.Method == "chat.startStream" || c.Method == "chat.postMessage") {
			firstAt = c.Time
		}
	}
	return calls, firstAt.Sub(first), gen
}

func total(calls map[string]int) int {
	n := 0
	for _, v := range calls {
		n += v
	}
	return n
}

// TestStreamCallBudget checks that a 2,000-word answer streamed at 60 tokens/s costs about one
// update per StreamUpdateInterval, and reports the figures.
func TestStreamCallBudget(t *testing.T) {
	for _, native := range []bool{true, false} {
		calls, first, gen := streamRun(t, native, 2000, 60)
		// startStream/post + one update per interval + stop/final edit + typing set/clear.
		limit := int(math.Ceil(gen.Seconds()/DefaultStreamUpdateInterval.Seconds())) + 6
		if n := total(calls); n > limit {
			t.Errorf("native=%v: %d Web API calls for %s of generation, want <= %d: %v", native, n, gen.Round(time.Second), limit, calls)
		}
		t.Logf("native=%v: 2000 words over %s (model time): %d Web API calls %v; first token -> first visible update %s (wall, loopback)",
			native, gen.Round(time.Second), total(calls), calls, first)
	}
}

// BenchmarkStream2000Words reports the Web API calls and the first-token-to-first-visible-update
// latency of a 2,000-word streamed answer (60 tokens/s model, 1s update interval, loopback).
func BenchmarkStream2000Words(b *testing.B) {
	for _, native := range []bool{true, false} {
		b.Run(fmt.Sprintf("native=%v", native), func(b *testing.B) {
			var calls, lat float64
			for range b.N {
				c, first, _ := streamRun(b, native, 2000, 60)
				calls += float64(total(c))
				lat += float64(first.Microseconds())
			}
			b.ReportMetric(calls/float64(b.N), "api-calls/answer")
			b.ReportMetric(lat/float64(b.N), "µs-first-visible")
		})
	}
}
