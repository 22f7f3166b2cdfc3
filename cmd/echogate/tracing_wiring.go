package main

// OpenTelemetry traces (tracing: in the config): one trace per turn. The pipeline starts the turn,
// context, tool and response spans through its Tracer hook; the decorators of pipeline/traced add
// the spans the pipeline cannot see (one per model call, one per message posted). Without an
// endpoint nothing here runs: the pipeline gets no Tracer and the model and repliers are not
// wrapped.

import (
	"context"
	"errors"
	"time"

	"github.com/echogate/echogate/internal/tracing"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/traced"
)

// tracingShutdownTimeout bounds the flush of queued spans at exit: an unreachable collector must
// not hold up shutdown.
const tracingShutdownTimeout = 5 * time.Second

// tracingWiring is the tracer of a running command and the turn spans it knows of.
type tracingWiring struct {
	tracer *tracing.Tracer
	turns  *traced.Turns
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
	c.tracing = &tracingWiring{tracer: tr, turns: traced.NewTurns(tr)}
	system := "openai"
	if c.cfg.demoMode() {
		system = "_OTHER"
	}
	deps.Tracer = c.tracing.turns
	deps.Model = traced.NewModel(deps.Model, tr.OTel(), system, time.Now)
	wrapped := make(map[string]pipeline.Replier, len(deps.Repliers))
	for platform, r := range deps.Repliers {
		wrapped[platform] = traced.NewReplier(r, platform, c.tracing.turns)
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
