// Package tracing records OpenTelemetry traces and exports them over OTLP/HTTP. It is off unless
// configured: cmd creates a Tracer only when an endpoint is set (Config.Endpoint or
// OTEL_EXPORTER_OTLP_ENDPOINT), and passes nil otherwise, so an unconfigured gateway runs no SDK.
//
// A Tracer satisfies the pipeline's Tracer interface structurally (Start with string attributes);
// the decorators in cmd use the underlying OpenTelemetry tracer (OTel) for typed attributes and
// events. Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists
// (gen_ai.operation.name, gen_ai.request.model, gen_ai.tool.name, gen_ai.usage.input_tokens, …).
//
// Spans are exported in batches from a bounded queue: a slow or absent collector never holds up
// a turn, spans beyond the queue are dropped. Shutdown flushes what is queued.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names the tracer (the instrumentation scope of every span).
const instrumentationName = "github.com/echogate/echogate"

// Tracer starts spans and exports them. It is safe for concurrent use. Create it with New and
// call Shutdown once when the process exits.
type Tracer struct {
	tp       *sdktrace.TracerProvider
	tr       trace.Tracer
	shutdown atomic.Bool
}

// Option changes how New builds the Tracer (tests inject exporters).
type Option func(*options)

type options struct {
	exporter sdktrace.SpanExporter
	sync     bool
}

// WithExporter replaces the OTLP/HTTP exporter: spans go to e, batched as usual. The endpoint is
// then not needed.
func WithExporter(e sdktrace.SpanExporter) Option {
	return func(o *options) { o.exporter, o.sync = e, false }
}

// WithSyncExporter replaces the OTLP/HTTP exporter and exports every span as soon as it ends
// (tests: an in-memory exporter sees a span right after its end function returned). Never use it
// in production: each span end waits for the export.
func WithSyncExporter(e sdktrace.SpanExporter) Option {
	return func(o *options) { o.exporter, o.sync = e, true }
}

// New validates cfg and builds the tracer provider with its exporter. It does no network I/O:
// the first export happens after Config.BatchTimeout. ctx bounds resource detection (host name,
// OTEL_RESOURCE_ATTRIBUTES). log, when not nil, receives the SDK's internal errors (failed
// exports), at most one line per minute; the SDK has a single process-wide error handler, so the
// last New's log wins.
//
// Without an endpoint (and without an exporter option) New returns ErrNoEndpoint; a bad Config
// returns an error wrapping ErrInvalid.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*Tracer, error) {
	cfg = cfg.withDefaults()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	exp := o.exporter
	if exp == nil {
		if !Enabled(cfg) {
			return nil, ErrNoEndpoint
		}
		endpoint, err := cfg.endpointURL()
		if err != nil {
			return nil, err
		}
		headers, err := cfg.headers()
		if err != nil {
			return nil, err
		}
		exp = newExporter(endpoint, headers, cfg.ExportTimeout)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(cfg.ServiceName)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(cfg.ServiceVersion))
	}
	// Later detectors win: OTEL_RESOURCE_ATTRIBUTES may add attributes (deployment.environment…),
	// the configured service name stays.
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv(),
		resource.WithAttributes(attrs...))
	if err != nil {
		if res == nil {
			return nil, fmt.Errorf("tracing: detect resource: %w", err)
		}
		if log != nil {
			log.Warn("tracing: some resource attributes could not be detected; spans carry the rest", "err", err)
		}
	}
	var proc sdktrace.SpanProcessor
	if o.sync {
		proc = sdktrace.NewSimpleSpanProcessor(exp)
	} else {
		proc = sdktrace.NewBatchSpanProcessor(exp,
			sdktrace.WithBatchTimeout(cfg.BatchTimeout),
			sdktrace.WithExportTimeout(cfg.ExportTimeout),
			sdktrace.WithMaxQueueSize(cfg.MaxQueueSize),
			sdktrace.WithMaxExportBatchSize(min(512, cfg.MaxQueueSize)))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithSpanProcessor(proc))
	if log != nil {
		otel.SetErrorHandler(newErrorLog(log, time.Minute, time.Now))
	}
	return &Tracer{tp: tp, tr: tp.Tracer(instrumentationName)}, nil
}

// OTel returns the underlying OpenTelemetry tracer, for decorators that set typed attributes and
// events themselves (model and replier spans in cmd).
func (t *Tracer) OTel() trace.Tracer { return t.tr }

// Start starts a span named name as a child of the span in ctx (a new trace when there is none)
// and returns the context carrying it. attrs are converted by Attributes. end must be called
// once (later calls do nothing): its attrs are added, a non-nil err marks the span failed (see
// End), and the span ends. Start never blocks on I/O.
func (t *Tracer) Start(ctx context.Context, name string, attrs map[string]string) (context.Context, func(err error, attrs map[string]string)) {
	ctx, span := t.tr.Start(ctx, name, trace.WithSpanKind(KindOf(name)), trace.WithAttributes(Attributes(attrs)...))
	var once sync.Once
	return ctx, func(err error, attrs map[string]string) {
		once.Do(func() {
			if span.IsRecording() && len(attrs) > 0 {
				span.SetAttributes(Attributes(attrs)...)
			}
			End(span, err)
		})
	}
}

// ForceFlush exports every finished span now. It blocks until done or ctx ends.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if err := t.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("tracing: flush: %w", err)
	}
	return nil
}

// Shutdown exports the spans still queued and stops the exporter. It blocks until done or ctx
// ends (spans not exported by then are lost); bound ctx, a collector may be unreachable. Spans
// started afterwards are not recorded. Calls after the first return nil.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if !t.shutdown.CompareAndSwap(false, true) {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown (flush spans): %w", err)
	}
	return nil
}

// End marks span failed when err is not nil (status Error with the error text, an exception
// event and error.type) and ends it.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetAttributes(attribute.String("error.type", ErrorType(err)))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// ErrorType is the low-cardinality error.type of err: "canceled", "timeout", or "_OTHER".
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// KindOf is the span kind of a span name: the turn consumes an inbound event (consumer), model
// calls ("chat …") and posts ("echogate.post …") call out (client), everything else is internal.
func KindOf(name string) trace.SpanKind {
	switch {
	case name == "echogate.turn":
		return trace.SpanKindConsumer
	case strings.HasPrefix(name, "chat "), strings.HasPrefix(name, "echogate.post"):
		return trace.SpanKindClient
	}
	return trace.SpanKindInternal
}

// Attributes converts string attributes to typed ones: the keys of the GenAI conventions that are
// numbers (gen_ai.usage.input_tokens, gen_ai.usage.output_tokens, gen_ai.request.max_tokens,
// gen_ai.request.temperature) and any key ending in _tokens, _messages or _count become numbers,
// gen_ai.response.finish_reasons a string list (comma-separated), "true"/"false" booleans;
// everything else stays a string. Empty values are left out.
func Attributes(m map[string]string) []attribute.KeyValue {
	if len(m) == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, 0, len(m))
	for k, v := range m {
		if v == "" {
			continue
		}
		out = append(out, typed(k, v))
	}
	return out
}

func typed(k, v string) attribute.KeyValue {
	switch {
	case k == "gen_ai.response.finish_reasons":
		parts := strings.Split(v, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return attribute.StringSlice(k, parts)
	case k == "gen_ai.request.temperature" || k == "gen_ai.request.top_p":
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return attribute.Float64(k, f)
		}
	case strings.HasSuffix(k, "_tokens") || strings.HasSuffix(k, "_messages") || strings.HasSuffix(k, "_count"):
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return attribute.Int64(k, n)
		}
	case v == "true" || v == "false":
		return attribute.Bool(k, v == "true")
	}
	return attribute.String(k, v)
}

// errorLog is the SDK's error handler: it logs export failures at most once per interval and
// counts the ones it held back.
type errorLog struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func newErrorLog(log *slog.Logger, interval time.Duration, now func() time.Time) *errorLog {
	return &errorLog{log: log, interval: interval, now: now}
}

// Handle implements otel.ErrorHandler.
func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	l.log.Warn("tracing: OpenTelemetry export failed; spans may be lost (check tracing.endpoint and the collector)",
		"err", err, "suppressed_since_last", suppressed)
}
