package traced

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/tracing"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

func attrsOf(sp sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range sp.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func TestTracedModelFailureAndFirstToken(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(context.Background(), tracing.Config{Getenv: func(string) string { return "" }}, nil, tracing.WithSyncExporter(exp))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }
	boom := fmt.Errorf("upstream: %w", agent.ErrUnavailable)
	inner := agenttest.NewScriptedModel(agenttest.Step{Text: "partial", Err: boom, Model: "gpt-routed",
		Usage: echogate.Usage{InputTokens: 11, OutputTokens: 2, Failed: true}})
	m := NewModel(inner, tr.OTel(), "openai", now)
	var got strings.Builder
	_, err = m.Generate(context.Background(), agent.Request{Model: "gpt-test", MaxTokens: 100}, func(d agent.Delta) error {
		got.WriteString(d.Text)
		return nil
	})
	if !errors.Is(err, agent.ErrUnavailable) {
		t.Fatalf("Generate error = %v, want the model's error unchanged", err)
	}
	if got.String() != "partial" {
		t.Errorf("deltas = %q, want them forwarded", got.String())
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 1 {
		t.Fatalf("spans = %d, want 1", len(spans))
	}
	sp := spans[0]
	a := attrsOf(sp)
	if sp.Status().Code != codes.Error || !strings.Contains(sp.Status().Description, "unavailable") || a["error.type"].AsString() != "_OTHER" {
		t.Errorf("status = %v %q error.type %q, want Error naming the failure", sp.Status().Code, sp.Status().Description, a["error.type"].AsString())
	}
	if a["gen_ai.response.model"].AsString() != "gpt-routed" || a["gen_ai.usage.input_tokens"].AsInt64() != 11 || a["gen_ai.request.max_tokens"].AsInt64() != 100 {
		t.Errorf("attributes = %v, want the routed model, the failed call's usage and max_tokens", a)
	}
	var ttft float64 = -1
	for _, ev := range sp.Events() {
		if ev.Name == "gen_ai.first_token" {
			for _, kv := range ev.Attributes {
				if kv.Key == "gen_ai.server.time_to_first_token" {
					ttft = kv.Value.AsFloat64()
				}
			}
		}
	}
	if ttft != 0.25 {
		t.Errorf("time to first token = %v s, want 0.25 (one tick of the fake clock)", ttft)
	}
}

func TestTraceReplierForwards(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(context.Background(), tracing.Config{Getenv: func(string) string { return "" }}, nil, tracing.WithSyncExporter(exp))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	inner := pipelinetest.NewReplier("web")
	w := NewReplier(pipelinetest.StreamingReplier{Replier: inner}, "web", NewTurns(tr))
	ctx := context.Background()
	out := echogate.Outbound{Conversation: echogate.ConversationRef{Platform: "web", Channel: "c"}, Text: "hi", Turn: "t_1"}
	ref, err := w.Send(ctx, out)
	if err != nil || ref.ID == "" {
		t.Fatalf("Send = %v, %v", ref, err)
	}
	// Edit outside a traced context is forwarded without a span.
	if err := pipeline.CapsOf(w).Editor.Edit(ctx, ref, "hi again"); err != nil {
		t.Fatal(err)
	}
	st, err := pipeline.CapsOf(w).Streamer.StartStream(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, "ab"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, "ab"); err == nil {
		t.Error("a second Finish succeeded, want the inner stream's error")
	}
	pipeline.CapsOf(w).Observer.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDelta, Text: "x"})
	posts := inner.Posts()
	if len(posts) != 2 || posts[0].Text != "hi again" || posts[0].Edits != 1 || posts[1].Text != "ab" || posts[1].Joined() != "a" {
		t.Errorf("inner posts = %+v, want the send (edited once) and the stream", posts)
	}
	if evs := inner.Events(); len(evs) != 1 || evs[0].Text != "x" {
		t.Errorf("inner events = %+v, want the observed delta", evs)
	}
	var ops []string
	for _, sp := range exp.GetSpans().Snapshots() {
		ops = append(ops, sp.Name()+":"+attrsOf(sp)["echogate.post.operation"].AsString())
	}
	if got, want := strings.Join(ops, " "), "echogate.post web:send echogate.post web:stream"; got != want {
		t.Errorf("post spans = %s, want %s (no span for an untraced edit, one per stream)", got, want)
	}
}
