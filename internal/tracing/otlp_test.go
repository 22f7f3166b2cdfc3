package tracing

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeRequestDecodesAsOTLP: the hand-encoded request decodes with the OTLP protobuf
// definitions into the same span: ids, parent, name, kind, times, every attribute type, events,
// status, resource and scope.
func TestEncodeRequestDecodesAsOTLP(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tid, _ := trace.TraceIDFromHex("0102030405060708090a0b0c0d0e0f10")
	sid, _ := trace.SpanIDFromHex("1112131415161718")
	pid, _ := trace.SpanIDFromHex("2122232425262728")
	stub := tracetest.SpanStub{
		Name:        "chat gpt-4o-mini",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
		Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid}),
		SpanKind:    trace.SpanKindClient,
		StartTime:   start, EndTime: start.Add(1500 * time.Millisecond),
		Attributes: []attribute.KeyValue{attribute.String("gen_ai.system", "openai"), attribute.Int64("gen_ai.usage.input_tokens", 120),
			attribute.Bool("ok", true), attribute.Float64("ratio", 0.25), attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"})},
		Events:               []sdktrace.Event{{Name: "gen_ai.first_token", Time: start.Add(time.Second), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}}},
		Status:               sdktrace.Status{Code: codes.Error, Description: "model down"},
		Resource:             resource.NewSchemaless(attribute.String("service.name", "echogate")),
		InstrumentationScope: instrumentation.Scope{Name: instrumentationName, Version: "1"},
	}
	raw := encodeRequest([]sdktrace.ReadOnlySpan{stub.Snapshot(), stub.Snapshot()})
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		t.Fatalf("proto.Unmarshal = %v", err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 2 {
		t.Fatalf("request = %v, want one resource, one scope, two spans", &req)
	}
	rs := req.ResourceSpans[0]
	if a := rs.Resource.Attributes; len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "echogate" {
		t.Errorf("resource attributes = %v", a)
	}
	if sc := rs.ScopeSpans[0].Scope; sc.Name != instrumentationName || sc.Version != "1" {
		t.Errorf("scope = %v", sc)
	}
	sp := rs.ScopeSpans[0].Spans[0]
	checks := map[string]bool{
		"trace id":  string(sp.TraceId) == string(tid[:]),
		"span id":   string(sp.SpanId) == string(sid[:]),
		"parent":    string(sp.ParentSpanId) == string(pid[:]),
		"name":      sp.Name == stub.Name,
		"kind":      sp.Kind == tracepb.Span_SPAN_KIND_CLIENT,
		"start":     sp.StartTimeUnixNano == uint64(start.UnixNano()),
		"end":       sp.EndTimeUnixNano == uint64(start.Add(1500*time.Millisecond).UnixNano()),
		"status":    sp.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR && sp.Status.GetMessage() == "model down",
		"event":     len(sp.Events) == 1 && sp.Events[0].Name == "gen_ai.first_token" && sp.Events[0].Attributes[0].Value.GetIntValue() == 1,
		"sampled":   sp.Flags&1 == 1,
		"attrs":     len(sp.Attributes) == 5,
		"string":    sp.Attributes[0].Value.GetStringValue() == "openai",
		"int":       sp.Attributes[1].Value.GetIntValue() == 120,
		"bool":      sp.Attributes[2].Value.GetBoolValue(),
		"double":    sp.Attributes[3].Value.GetDoubleValue() == 0.25,
		"array":     sp.Attributes[4].Value.GetArrayValue().GetValues()[0].GetStringValue() == "stop",
		"event at":  sp.Events[0].TimeUnixNano == uint64(start.Add(time.Second).UnixNano()),
		"no drops":  sp.DroppedAttributesCount == 0 && sp.DroppedEventsCount == 0,
		"no state":  sp.TraceState == "",
		"no links":  len(sp.Links) == 0,
		"same span": proto.Equal(sp, rs.ScopeSpans[0].Spans[1]),
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("%s wrong in decoded span %v", what, sp)
		}
	}
}
