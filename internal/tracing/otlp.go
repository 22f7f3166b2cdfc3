package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// exporter sends spans to an OTLP/HTTP collector as protobuf (application/x-protobuf, gzip), as
// the OpenTelemetry exporter does, but encodes the few OTLP messages itself with protowire: the
// exporter package pulls the OTLP collector's generated gRPC service, and with it gRPC and the
// whole protobuf runtime, into every binary, for a feature most deployments leave off. Field
// numbers are those of opentelemetry-proto's collector/trace/v1 and trace/v1.
type exporter struct {
	url     string
	headers map[string]string
	client  *http.Client
	stopped atomic.Bool
}

func newExporter(url string, headers map[string]string, timeout time.Duration) *exporter {
	return &exporter{url: url, headers: headers, client: &http.Client{Timeout: timeout}}
}

// exportAttempts bounds the tries of one batch on a retryable failure (429, 502-504, transport).
const exportAttempts = 3

// ExportSpans posts one batch; it blocks until the collector answered or ctx ended.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() || len(spans) == 0 {
		return nil
	}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	if _, err := zw.Write(encodeRequest(spans)); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	body := zbuf.Bytes()
	var err error
	for attempt := 1; attempt <= exportAttempts; attempt++ {
		var retry bool
		if retry, err = e.post(ctx, body); err == nil || !retry || attempt == exportAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return err
}

func (e *exporter) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("otlp export to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return false, nil
	case s == http.StatusTooManyRequests, s == http.StatusBadGateway, s == http.StatusServiceUnavailable, s == http.StatusGatewayTimeout:
		return true, fmt.Errorf("otlp export to %s: %s", e.url, resp.Status)
	default:
		return false, fmt.Errorf("otlp export to %s: %s", e.url, resp.Status)
	}
}

// Shutdown stops exporting; the batch processor has flushed before it calls this.
func (e *exporter) Shutdown(ctx context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// encodeRequest is an ExportTraceServiceRequest: the spans grouped by resource and scope.
func encodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct{ name, version, schema string }
	var out []byte
	// Spans of one provider share one resource; group by scope in arrival order.
	i := 0
	for i < len(spans) {
		res := spans[i].Resource()
		var scopes []scopeKey
		byScope := map[scopeKey][]sdktrace.ReadOnlySpan{}
		j := i
		for ; j < len(spans) && spans[j].Resource() == res; j++ {
			sc := spans[j].InstrumentationScope()
			k := scopeKey{sc.Name, sc.Version, sc.SchemaURL}
			if _, ok := byScope[k]; !ok {
				scopes = append(scopes, k)
			}
			byScope[k] = append(byScope[k], spans[j])
		}
		var rs []byte
		var resMsg []byte
		schema := ""
		if res != nil {
			for _, kv := range res.Attributes() {
				resMsg = appendMsg(resMsg, 1, appendKeyValue(nil, kv))
			}
			schema = res.SchemaURL()
		}
		rs = appendMsg(rs, 1, resMsg)
		for _, k := range scopes {
			var ss, scope []byte
			scope = appendString(scope, 1, k.name)
			scope = appendString(scope, 2, k.version)
			ss = appendMsg(ss, 1, scope)
			for _, s := range byScope[k] {
				ss = appendMsg(ss, 2, encodeSpan(s))
			}
			ss = appendString(ss, 3, k.schema)
			rs = appendMsg(rs, 2, ss)
		}
		rs = appendString(rs, 3, schema)
		out = appendMsg(out, 1, rs)
		i = j
	}
	return out
}

func encodeSpan(s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	var b []byte
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = appendVarint(b, 6, uint64(spanKind(s.SpanKind())))
	b = appendFixed64(b, 7, unixNano(s.StartTime()))
	b = appendFixed64(b, 8, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = appendMsg(b, 9, appendKeyValue(nil, kv))
	}
	b = appendVarint(b, 10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		var e []byte
		e = appendFixed64(e, 1, unixNano(ev.Time))
		e = appendString(e, 2, ev.Name)
		for _, kv := range ev.Attributes {
			e = appendMsg(e, 3, appendKeyValue(nil, kv))
		}
		e = appendVarint(e, 4, uint64(ev.DroppedAttributeCount))
		b = appendMsg(b, 11, e)
	}
	b = appendVarint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		var m []byte
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		m = appendBytes(m, 1, ltid[:])
		m = appendBytes(m, 2, lsid[:])
		m = appendString(m, 3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			m = appendMsg(m, 4, appendKeyValue(nil, kv))
		}
		m = appendVarint(m, 5, uint64(l.DroppedAttributeCount))
		b = appendMsg(b, 13, m)
	}
	b = appendVarint(b, 14, uint64(s.DroppedLinks()))
	var st []byte
	st = appendString(st, 2, s.Status().Description)
	st = appendVarint(st, 3, uint64(statusCode(s.Status().Code)))
	b = appendMsg(b, 15, st)
	flags := uint32(sc.TraceFlags()) | 0x100 // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	if s.Parent().IsRemote() {
		flags |= 0x200
	}
	b = wireTag(b, 16, fixed32Type)
	return wireFixed32(b, flags)
}

// spanKind maps to OTLP's Span.SpanKind (the SDK numbers them the same way).
func spanKind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return int(trace.SpanKindInternal)
	}
	return int(k)
}

// statusCode maps to OTLP's Status.StatusCode: unset 0, ok 1, error 2.
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// appendKeyValue encodes a KeyValue{key = 1, value = 2 (AnyValue)}.
func appendKeyValue(b []byte, kv attribute.KeyValue) []byte {
	b = appendString(b, 1, string(kv.Key))
	return appendMsg(b, 2, anyValue(kv.Value))
}

// anyValue encodes an AnyValue: string 1, bool 2, int 3, double 4, array 5 (ArrayValue{values 1}).
func anyValue(v attribute.Value) []byte {
	var b []byte
	switch v.Type() {
	case attribute.BOOL:
		b = wireTag(b, 2, varintType)
		b = wireVarint(b, encodeBool(v.AsBool()))
	case attribute.INT64:
		b = wireTag(b, 3, varintType)
		b = wireVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = wireTag(b, 4, fixed64Type)
		b = wireFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = wireTag(b, 1, bytesType)
		b = wireString(b, v.AsString())
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		var arr []byte
		for _, e := range sliceValues(v) {
			arr = appendMsg(arr, 1, anyValue(e))
		}
		b = appendMsg(b, 5, arr)
	default:
		b = wireTag(b, 1, bytesType)
		b = wireString(b, v.Emit())
	}
	return b
}

func sliceValues(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(x))
		}
	case attribute.STRINGSLICE:
		for _, x := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(x))
		}
	}
	return out
}

// The append helpers write one field; empty strings, bytes and zero numbers are left out, as
// proto3 does (an empty embedded message is still written: its presence can matter).
func appendMsg(b []byte, num wireNumber, msg []byte) []byte {
	b = wireTag(b, num, bytesType)
	return wireBytes(b, msg)
}

func appendString(b []byte, num wireNumber, s string) []byte {
	if s == "" {
		return b
	}
	b = wireTag(b, num, bytesType)
	return wireString(b, s)
}

func appendBytes(b []byte, num wireNumber, v []byte) []byte {
	b = wireTag(b, num, bytesType)
	return wireBytes(b, v)
}

func appendVarint(b []byte, num wireNumber, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = wireTag(b, num, varintType)
	return wireVarint(b, v)
}

func appendFixed64(b []byte, num wireNumber, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = wireTag(b, num, fixed64Type)
	return wireFixed64(b, v)
}
