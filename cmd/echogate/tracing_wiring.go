package main

// OpenTelemetry traces (tracing: in the config): one trace per turn. The pipeline starts the turn,
// context, tool and response spans through its Tracer hook; this file adds the spans the pipeline
// cannot see: one `chat <model>` span per model call (GenAI attributes, token counts, time to
// first token) and one `echogate.post <platform>` span per message posted (Send, or a stream from
// StartStream to Finish). Without an endpoint nothing here runs: the pipeline gets no Tracer and
// the model and repliers are not wrapped.

import (
	"context"
	"errors"
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

// tracingShutdownTimeout bounds the flush of queued spans at exit: an unreachable collector must
// not hold up shutdown.
const tracingShutdownTimeout = 5 * time.Second

// tracingWiring is the tracer of a running command and the turn spans it knows of.
type tracingWiring struct {
	tracer *tracing.Tracer
	turns  *turnTracer
}

// tracingConfig maps the `tracing:` section to the tracing package's Config.
func (t TracingConf) tracingConfig() tracing.Config {
	return tracing.Config{
		Endpoint:       t.Endpoint,
		Headers:        t.Headers,
		Insecure:       t.Insecure,
		ServiceName:    t.ServiceName,
		ServiceVersion: version,
		SampleRatio:    t.SampleRatio,
		Getenv:         t.getenv,
	}
}

// enabled reports whether tracing is configured (an endpoint here or in the OTLP environment,
// and OTEL_SDK_DISABLED not true).
func (t TracingConf) enabled() bool { return tracing.Enabled(t.tracingConfig()) }

// validate checks the section (and the OTEL_* variables it reads) without I/O.
func (t TracingConf) validate() error {
	err := tracing.Validate(t.tracingConfig())
	if err == nil {
		return nil
	}
	var ce *tracing.ConfigError
	if !errors.As(err, &ce) {
		return &ConfigError{Key: "tracing", Msg: err.Error()}
	}
	key := ce.Field // an OTEL_* variable
	switch ce.Field {
	case "endpoint", "headers", "sample_ratio":
		key = "tracing." + ce.Field
	}
	return &ConfigError{Key: key, Msg: ce.Msg}
}

// wireTracing creates the tracer when tracing is configured and wraps the pipeline's model and
// repliers; it leaves deps alone otherwise.
func (c *core) wireTracing(deps *pipeline.Deps, opts ...tracing.Option) error {
	if !c.cfg.Tracing.enabled() && len(opts) == 0 {
		return nil
	}
	tr, err := tracing.New(context.Background(), c.cfg.Tracing.tracingConfig(), c.log, opts...)
	if err != nil {
		return err
	}
	c.tracing = &tracingWiring{tracer: tr, turns: newTurnTracer(tr)}
	system := "openai"
	if c.cfg.demoMode() {
		system = "_OTHER"
	}
	deps.Tracer = c.tracing.turns
	deps.Model = newTracedModel(deps.Model, tr.OTel(), system, time.Now)
	wrapped := make(map[string]pipeline.Replier, len(deps.Repliers))
	for platform, r := range deps.Repliers {
		wrapped[platform] = traceReplier(r, platform, c.tracing.turns)
	}
	deps.Repliers = wrapped
	tc := c.cfg.Tracing.tracingConfig()
	endpoint, _ := tracing.EndpointURL(tc) // validated by loadConfig; empty with an injected exporter
	c.log.Info("tracing on: exporting OpenTelemetry spans over OTLP/HTTP", "endpoint", endpoint, "service", tracing.ServiceName(tc))
	return nil
}

// stopTracing flushes the queued spans (bounded by tracingShutdownTimeout) and stops the
// exporter. Safe to call when tracing is off, and more than once.
func (c *core) stopTracing() {
	if c.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
	defer cancel()
	if err := c.tracing.tracer.Shutdown(ctx); err != nil {
		c.log.Warn("tracing: spans not flushed at exit", "err", err)
	}
}

// --- turn spans ---

// turnTracer is the pipeline's Tracer: it remembers the span of every running turn by turn id,
// so work the pipeline runs on a context without the turn (the stream of a reply, the plan
// message) still lands in the turn's trace.
type turnTracer struct {
	tr *tracing.Tracer

	mu   sync.Mutex
	live map[string]trace.Span
}

func newTurnTracer(tr *tracing.Tracer) *turnTracer {
	return &turnTracer{tr: tr, live: map[string]trace.Span{}}
}

// Start implements pipeline.Tracer.
func (t *turnTracer) Start(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error, map[string]string)) {
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
func (t *turnTracer) parent(ctx context.Context, turn string) context.Context {
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

// running is the number of turn spans open (tests).
func (t *turnTracer) running() int {
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

func newTracedModel(inner agent.Model, tr trace.Tracer, system string, now func() time.Time) *tracedModel {
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

// tracedReplier records one `echogate.post <platform>` span per message posted. traceReplier
// returns a value with exactly the capabilities (Streamer, Editor, Typer, TurnObserver, Reactor)
// of the wrapped replier, because the pipeline finds them by type assertion.
type tracedReplier struct {
	inner    pipeline.Replier
	platform string
	turns    *turnTracer
}

// The capabilities the pipeline and channels look for, by the channels package's signatures.
type (
	replierStreamer interface {
		StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error)
	}
	replierEditor interface {
		Edit(ctx context.Context, ref echogate.MessageRef, text string) error
	}
	replierTyper interface {
		StartTyping(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) (stop func())
	}
	replierObserver interface {
		ObserveTurn(ev echogate.TurnEvent)
	}
	replierReactor interface {
		React(ctx context.Context, ref echogate.MessageRef, emoji string) error
		Unreact(ctx context.Context, ref echogate.MessageRef, emoji string) error
	}
)

// traceReplier wraps r; the result has the same optional capabilities as r.
func traceReplier(r pipeline.Replier, platform string, turns *turnTracer) pipeline.Replier {
	c := &tracedReplier{inner: r, platform: platform, turns: turns}
	mask := 0
	if _, ok := r.(replierStreamer); ok {
		mask |= 1
	}
	if _, ok := r.(replierEditor); ok {
		mask |= 2
	}
	if _, ok := r.(replierTyper); ok {
		mask |= 4
	}
	if _, ok := r.(replierObserver); ok {
		mask |= 8
	}
	if _, ok := r.(replierReactor); ok {
		mask |= 16
	}
	return withCaps(c, mask)
}

// withCaps returns c with the capabilities of mask: 1 Streamer, 2 Editor, 4 Typer, 8
// TurnObserver, 16 Reactor. Every combination has its own type, because the pipeline finds
// capabilities by type assertion.
func withCaps(c *tracedReplier, mask int) pipeline.Replier {
	switch mask {
	case 0:
		return struct{ sendCap }{sendCap{c}}
	case 1:
		return struct {
			sendCap
			streamCap
		}{sendCap{c}, streamCap{c}}
	case 2:
		return struct {
			sendCap
			editCap
		}{sendCap{c}, editCap{c}}
	case 3:
		return struct {
			sendCap
			streamCap
			editCap
		}{sendCap{c}, streamCap{c}, editCap{c}}
	case 4:
		return struct {
			sendCap
			typeCap
		}{sendCap{c}, typeCap{c}}
	case 5:
		return struct {
			sendCap
			streamCap
			typeCap
		}{sendCap{c}, streamCap{c}, typeCap{c}}
	case 6:
		return struct {
			sendCap
			editCap
			typeCap
		}{sendCap{c}, editCap{c}, typeCap{c}}
	case 7:
		return struct {
			sendCap
			streamCap
			editCap
			typeCap
		}{sendCap{c}, streamCap{c}, editCap{c}, typeCap{c}}
	case 8:
		return struct {
			sendCap
			observeCap
		}{sendCap{c}, observeCap{c}}
	case 9:
		return struct {
			sendCap
			streamCap
			observeCap
		}{sendCap{c}, streamCap{c}, observeCap{c}}
	case 10:
		return struct {
			sendCap
			editCap
			observeCap
		}{sendCap{c}, editCap{c}, observeCap{c}}
	case 11:
		return struct {
			sendCap
			streamCap
			editCap
			observeCap
		}{sendCap{c}, streamCap{c}, editCap{c}, observeCap{c}}
	case 12:
		return struct {
			sendCap
			typeCap
			observeCap
		}{sendCap{c}, typeCap{c}, observeCap{c}}
	case 13:
		return struct {
			sendCap
			streamCap
			typeCap
			observeCap
		}{sendCap{c}, streamCap{c}, typeCap{c}, observeCap{c}}
	case 14:
		return struct {
			sendCap
			editCap
			typeCap
			observeCap
		}{sendCap{c}, editCap{c}, typeCap{c}, observeCap{c}}
	case 15:
		return struct {
			sendCap
			streamCap
			editCap
			typeCap
			observeCap
		}{sendCap{c}, streamCap{c}, editCap{c}, typeCap{c}, observeCap{c}}
	case 16:
		return struct {
			sendCap
			reactCap
		}{sendCap{c}, reactCap{c}}
	case 17:
		return struct {
			sendCap
			streamCap
			reactCap
		}{sendCap{c}, streamCap{c}, reactCap{c}}
	case 18:
		return struct {
			sendCap
			editCap
			reactCap
		}{sendCap{c}, editCap{c}, reactCap{c}}
	case 19:
		return struct {
			sendCap
			streamCap
			editCap
			reactCap
		}{sendCap{c}, streamCap{c}, editCap{c}, reactCap{c}}
	case 20:
		return struct {
			sendCap
			typeCap
			reactCap
		}{sendCap{c}, typeCap{c}, reactCap{c}}
	case 21:
		return struct {
			sendCap
			streamCap
			typeCap
			reactCap
		}{sendCap{c}, streamCap{c}, typeCap{c}, reactCap{c}}
	case 22:
		return struct {
			sendCap
			editCap
			typeCap
			reactCap
		}{sendCap{c}, editCap{c}, typeCap{c}, reactCap{c}}
	case 23:
		return struct {
			sendCap
			streamCap
			editCap
			typeCap
			reactCap
		}{sendCap{c}, streamCap{c}, editCap{c}, typeCap{c}, reactCap{c}}
	case 24:
		return struct {
			sendCap
			observeCap
			reactCap
		}{sendCap{c}, observeCap{c}, reactCap{c}}
	case 25:
		return struct {
			sendCap
			streamCap
			observeCap
			reactCap
		}{sendCap{c}, streamCap{c}, observeCap{c}, reactCap{c}}
	case 26:
		return struct {
			sendCap
			editCap
			observeCap
			reactCap
		}{sendCap{c}, editCap{c}, observeCap{c}, reactCap{c}}
	case 27:
		return struct {
			sendCap
			streamCap
			editCap
			observeCap
			reactCap
		}{sendCap{c}, streamCap{c}, editCap{c}, observeCap{c}, reactCap{c}}
	case 28:
		return struct {
			sendCap
			typeCap
			observeCap
			reactCap
		}{sendCap{c}, typeCap{c}, observeCap{c}, reactCap{c}}
	case 29:
		return struct {
			sendCap
			streamCap
			typeCap
			observeCap
			reactCap
		}{sendCap{c}, streamCap{c}, typeCap{c}, observeCap{c}, reactCap{c}}
	case 30:
		return struct {
			sendCap
			editCap
			typeCap
			observeCap
			reactCap
		}{sendCap{c}, editCap{c}, typeCap{c}, observeCap{c}, reactCap{c}}
	case 31:
		return struct {
			sendCap
			streamCap
			editCap
			typeCap
			observeCap
			reactCap
		}{sendCap{c}, streamCap{c}, editCap{c}, typeCap{c}, observeCap{c}, reactCap{c}}
	}
	return struct{ sendCap }{sendCap{c}} // unreachable: mask < 32
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

type sendCap struct{ c *tracedReplier }

// Unwrap returns the wrapped replier, for capabilities that need no span (the activity view).
func (s sendCap) Unwrap() pipeline.Replier { return s.c.inner }

func (s sendCap) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	ctx, span := s.c.start(ctx, "send", out)
	ref, err := s.c.inner.Send(ctx, out)
	span.SetAttributes(attribute.Int("echogate.post.chars", len(out.Text)))
	if ref.ID != "" {
		span.SetAttributes(attribute.String("messaging.message.id", ref.ID))
	}
	tracing.End(span, err)
	return ref, err
}

type streamCap struct{ c *tracedReplier }

// StartStream starts the post span; it ends when the stream is finished (or fails to start).
func (s streamCap) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	ctx, span := s.c.start(ctx, "stream", out)
	st, err := s.c.inner.(replierStreamer).StartStream(ctx, out)
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

type editCap struct{ c *tracedReplier }

// Edit records a span only inside a traced context (an edit carries no turn to attach to).
func (e editCap) Edit(ctx context.Context, ref echogate.MessageRef, text string) error {
	ed := e.c.inner.(replierEditor)
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

type typeCap struct{ c *tracedReplier }

func (t typeCap) StartTyping(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) (stop func()) {
	return t.c.inner.(replierTyper).StartTyping(ctx, conv, on)
}

type observeCap struct{ c *tracedReplier }

func (o observeCap) ObserveTurn(ev echogate.TurnEvent) { o.c.inner.(replierObserver).ObserveTurn(ev) }

type reactCap struct{ c *tracedReplier }

func (r reactCap) React(ctx context.Context, ref echogate.MessageRef, emoji string) error {
	return r.c.inner.(replierReactor).React(ctx, ref, emoji)
}

func (r reactCap) Unreact(ctx context.Context, ref echogate.MessageRef, emoji string) error {
	return r.c.inner.(replierReactor).Unreact(ctx, ref, emoji)
}
