// Package traced holds the tracing decorators of the turn's path: the pipeline's Tracer that
// keeps each running turn's span (Turns), a model that records one `chat <model>` span per call
// with the GenAI attributes, token counts and time to first token (NewModel), and a replier that
// records one `echogate.post <platform>` span per message posted, a stream from StartStream to
// Finish (NewReplier). They are built on internal/tracing's Tracer; cmd wraps the pipeline's model
// and repliers with them only when tracing is configured.
package traced

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/tracing"
	"github.com/echogate/echogate/pipeline"
)

// --- turn spans ---

// Turns is the pipeline's Tracer: it remembers the span of every running turn by turn id,
// so work the pipeline runs on a context without the turn (the stream of a reply, the plan
// message) still lands in the turn's trace.
type Turns struct {
	tr *tracing.Tracer

	mu   sync.Mutex
	live map[string]trace.Span
}

// NewTurns returns the Tracer of the pipeline, starting its spans on tr.
func NewTurns(tr *tracing.Tracer) *Turns {
	return &Turns{tr: tr, live: map[string]trace.Span{}}
}

// Start implements pipeline.Tracer.
func (t *Turns) Start(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error, map[string]string)) {
	ctx, end := t.tr.Start(ctx, name, attrs)
	id := attrs["echogate.turn"]
	if name != "echogate.turn" || id == "" {
		return ctx, end
	}
	span := trace.SpanFromContext(ctx)
	t.mu.Lock()
	t.live[id] = span
	t.mu.Unlock()
	return ctx, func(err error, attrs map[string]string) {
		t.mu.Lock()
		if t.live[id] == span {
			delete(t.live, id)
		}
		t.mu.Unlock()
		end(err, attrs)
	}
}

// parent returns ctx when it carries a span, else ctx with the running turn's span (when turn is
// running), else ctx.
func (t *Turns) parent(ctx context.Context, turn string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() || turn == "" {
		return ctx
	}
	t.mu.Lock()
	span := t.live[turn]
	t.mu.Unlock()
	if span == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}

// Running is the number of turn spans open (tests).
func (t *Turns) Running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// --- model calls ---

// tracedModel records one `chat <model>` span per Generate with the GenAI attributes of
// OpenTelemetry's semantic conventions, and the time to the first token as a span event.
type tracedModel struct {
	inner  agent.Model
	tr     trace.Tracer
	system string
	now    func() time.Time
}

// NewModel wraps inner: each Generate is one client span on tr; system names the provider
// (gen_ai.system) and now is the clock of the time to first token.
func NewModel(inner agent.Model, tr trace.Tracer, system string, now func() time.Time) agent.Model {
	return &tracedModel{inner: inner, tr: tr, system: system, now: now}
}

// Generate implements agent.Model: it forwards to the wrapped model unchanged.
func (m *tracedModel) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	name := "chat"
	if req.Model != "" {
		name += " " + req.Model
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.system", m.system),
		attribute.String("gen_ai.provider.name", m.system),
		attribute.String("gen_ai.request.model", req.Model),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", float64(*req.Temperature)))
	}
	if len(req.Tools) > 0 {
		attrs = append(attrs, attribute.Int("echogate.request.tools_count", len(req.Tools)))
	}
	ctx, span := m.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		defer span.End()
		return m.inner.Generate(ctx, req, onDelta)
	}
	start := m.now()
	first := false
	resp, err := m.inner.Generate(ctx, req, func(d agent.Delta) error {
		if !first && (d.Text != "" || d.Reasoning != "") {
			first = true
			ttft := m.now().Sub(start)
			span.AddEvent("gen_ai.first_token", trace.WithAttributes(
				attribute.Float64("gen_ai.server.time_to_first_token", ttft.Seconds())))
		}
		if onDelta == nil {
			return nil
		}
		return onDelta(d)
	})
	model := resp.Model
	if model == "" {
		model = resp.Usage.Model
	}
	out := []attribute.KeyValue{
		attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
	}
	if model != "" {
		out = append(out, attribute.String("gen_ai.response.model", model))
	}
	if resp.Usage.CachedInputTokens > 0 {
		out = append(out, attribute.Int64("gen_ai.usage.cache_read.input_tokens", resp.Usage.CachedInputTokens))
	}
	if resp.FinishReason != "" {
		out = append(out, attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}))
	}
	if resp.RouteReason != "" {
		out = append(out, attribute.String("echogate.route_reason", resp.RouteReason))
	}
	if n := len(resp.Message.ToolCalls); n > 0 {
		out = append(out, attribute.Int("echogate.response.tool_calls_count", n))
	}
	if d, ok := echogate.RetryAfter(err); ok {
		out = append(out, attribute.Float64("echogate.retry_after_seconds", d.Seconds()))
	}
	span.SetAttributes(out...)
	tracing.End(span, err)
	return resp, err
}

// --- outbound posts ---

// tracedReplier records one `echogate.post <platform>` span per message posted. It states the
// wrapped replier's capabilities through Caps (pipeline.CapsProvider), wrapping streams and
// edits in spans and passing typing and turn observation through.
type tracedReplier struct {
	inner    pipeline.Replier
	caps     pipeline.Caps // the wrapped replier's
	platform string
	turns    *Turns
}

// NewReplier wraps r, the replier of platform; the result has the same capabilities as r.
func NewReplier(r pipeline.Replier, platform string, turns *Turns) pipeline.Replier {
	return &tracedReplier{inner: r, caps: pipeline.CapsOf(r), platform: platform, turns: turns}
}

// Caps implements pipeline.CapsProvider.
func (c *tracedReplier) Caps() pipeline.Caps {
	out := pipeline.Caps{Typer: c.caps.Typer, Observer: c.caps.Observer, Finder: c.caps.Finder, Activity: c.caps.Activity, Downloader: c.caps.Downloader}
	if c.caps.Streamer != nil {
		out.Streamer = tracedStreamer{c}
	}
	if c.caps.Editor != nil {
		out.Editor = tracedEditor{c}
	}
	return out
}

var outboundKinds = [...]string{
	echogate.OutReply:          "reply",
	echogate.OutApprovalPrompt: "approval_prompt",
	echogate.OutNotice:         "notice",
	echogate.OutPlan:           "plan",
}

func kindName(k echogate.OutboundKind) string {
	if int(k) < len(outboundKinds) {
		return outboundKinds[k]
	}
	return "kind_" + strconv.Itoa(int(k))
}

// start starts a post span under the span in ctx, else under the running turn of out.
func (c *tracedReplier) start(ctx context.Context, op string, out echogate.Outbound) (context.Context, trace.Span) {
	ctx = c.turns.parent(ctx, out.Turn)
	return c.turns.tr.OTel().Start(ctx, "echogate.post "+c.platform,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("echogate.channel", c.platform),
			attribute.String("echogate.post.operation", op),
			attribute.String("echogate.post.kind", kindName(out.Kind)),
			attribute.String("echogate.session", string(out.Session)),
			attribute.String("echogate.turn", out.Turn),
			attribute.String("messaging.destination.name", out.Conversation.Channel)))
}

// Send implements pipeline.Replier.
func (c *tracedReplier) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	ctx, span := c.start(ctx, "send", out)
	ref, err := c.inner.Send(ctx, out)
	span.SetAttributes(attribute.Int("echogate.post.chars", len(out.Text)))
	if ref.ID != "" {
		span.SetAttributes(attribute.String("messaging.message.id", ref.ID))
	}
	tracing.End(span, err)
	return ref, err
}

type tracedStreamer struct{ c *tracedReplier }

// StartStream starts the post span; it ends when the stream is finished (or fails to start).
func (s tracedStreamer) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	ctx, span := s.c.start(ctx, "stream", out)
	st, err := s.c.caps.Streamer.StartStream(ctx, out)
	if err != nil {
		tracing.End(span, err)
		return nil, err
	}
	return &tracedStream{inner: st, span: span}, nil
}

// tracedStream counts appends and ends the post span at Finish.
type tracedStream struct {
	inner      echogate.Stream
	span       trace.Span
	appends    atomic.Int64
	appendErrs atomic.Int64
	once       sync.Once
}

func (s *tracedStream) Append(ctx context.Context, delta string) error {
	s.appends.Add(1)
	err := s.inner.Append(ctx, delta)
	if err != nil {
		s.appendErrs.Add(1)
	}
	return err
}

// OnPost passes the pipeline's hook on to the channel's stream, when it reports its message.
func (s *tracedStream) OnPost(fn func(echogate.MessageRef)) {
	if pn, ok := s.inner.(echogate.PostNotifier); ok {
		pn.OnPost(fn)
	}
}

func (s *tracedStream) Finish(ctx context.Context, final string) ([]echogate.MessageRef, error) {
	refs, err := s.inner.Finish(ctx, final)
	s.once.Do(func() {
		s.span.SetAttributes(
			attribute.Int("echogate.post.chars", len(final)),
			attribute.Int64("echogate.stream.appends_count", s.appends.Load()),
			attribute.Int64("echogate.stream.append_errors_count", s.appendErrs.Load()),
			attribute.Int("echogate.post.messages_count", len(refs)))
		if len(refs) > 0 {
			s.span.SetAttributes(attribute.String("messaging.message.id", refs[len(refs)-1].ID))
		}
		tracing.End(s.span, err)
	})
	return refs, err
}

type tracedEditor struct{ c *tracedReplier }

// Edit records a span only inside a traced context (an edit carries no turn to attach to).
func (e tracedEditor) Edit(ctx context.Context, ref echogate.MessageRef, text string) error {
	ed := e.c.caps.Editor
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ed.Edit(ctx, ref, text)
	}
	ctx, span := e.c.turns.tr.OTel().Start(ctx, "echogate.post "+e.c.platform,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("echogate.channel", e.c.platform),
			attribute.String("echogate.post.operation", "edit"),
			attribute.String("messaging.message.id", ref.ID),
			attribute.Int("echogate.post.chars", len(text))))
	err := ed.Edit(ctx, ref, text)
	tracing.End(span, err)
	return err
}
