package tracing

import "errors"

// Sentinel errors.
var (
	// ErrNoEndpoint is returned by New when neither Config.Endpoint nor the OTLP environment
	// variables name a collector (and no exporter option was given): tracing is off.
	ErrNoEndpoint = errors.New("tracing: no OTLP endpoint configured")
	// ErrInvalid is wrapped by Validate and New for a bad Config or a malformed OTEL_* variable.
	ErrInvalid = errors.New("tracing: invalid configuration")
)
