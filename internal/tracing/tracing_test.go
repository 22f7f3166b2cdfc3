package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// env returns a Getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func newMemTracer(t *testing.T, cfg Config) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	if cfg.Getenv == nil {
		cfg.Getenv = env(nil)
	}
	tr, err := New(context.Background(), cfg, nil, WithSyncExporter(exp))
	if err != nil {
		t.Fatalf("New = %v, want a tracer", err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func TestStartRecordsParentedTypedSpans(t *testing.T) {
	tr, exp := newMemTracer(t, Config{})
	ctx, endTurn := tr.Start(context.Background(), "echogate.turn", map[string]string{"echogate.turn": "t_1", "echogate.resumed": "false", "empty": ""})
	_, endTool := tr.Start(ctx, "execute_tool current_time", map[string]string{"gen_ai.tool.name": "current_time"})
	endTool(errors.New("bad zone"), map[string]string{"gen_ai.usage.input_tokens": "12"})
	endTool(nil, nil) // a second end does nothing
	endTurn(nil, map[string]string{"gen_ai.response.finish_reasons": "stop, length", "echogate.history_messages": "7"})

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("spans = %d, want 2 (tool, turn)", len(spans))
	}
	tool, turn := spans[0], spans[1]
	if tool.Name != "execute_tool current_time" || turn.Name != "echogate.turn" {
		t.Fatalf("span names = %q, %q; want the tool span then the turn span", tool.Name, turn.Name)
	}
	if tool.Parent.SpanID() != turn.SpanContext.SpanID() || tool.SpanContext.TraceID() != turn.SpanContext.TraceID() {
		t.Errorf("tool parent = %s, want the turn span %s in the same trace", tool.Parent.SpanID(), turn.SpanContext.SpanID())
	}
	if turn.Parent.IsValid() {
		t.Errorf("turn parent = %s, want none (a root span)", turn.Parent.SpanID())
	}
	if tool.Status.Code != codes.Error || tool.Status.Description != "bad zone" {
		t.Errorf("tool status = %v %q, want Error %q", tool.Status.Code, tool.Status.Description, "bad zone")
	}
	if turn.Status.Code != codes.Unset {
		t.Errorf("turn status = %v, want Unset", turn.Status.Code)
	}
	if turn.SpanKind != trace.SpanKindConsumer || tool.SpanKind != trace.SpanKindInternal {
		t.Errorf("kinds = %v, %v; want consumer turn, internal tool", turn.SpanKind, tool.SpanKind)
	}
	ta := attrMap(tool.Attributes)
	if got := ta["gen_ai.usage.input_tokens"]; got.Type() != attribute.INT64 || got.AsInt64() != 12 {
		t.Errorf("gen_ai.usage.input_tokens = %v, want int 12", got.Emit())
	}
	if got := ta["error.type"].AsString(); got != "_OTHER" {
		t.Errorf("error.type = %q, want _OTHER", got)
	}
	ua := attrMap(turn.Attributes)
	if got := ua["gen_ai.response.finish_reasons"].AsStringSlice(); !reflect.DeepEqual(got, []string{"stop", "length"}) {
		t.Errorf("finish_reasons = %v, want [stop length]", got)
	}
	if got := ua["echogate.history_messages"]; got.Type() != attribute.INT64 || got.AsInt64() != 7 {
		t.Errorf("echogate.history_messages = %v, want int 7", got.Emit())
	}
	if got := ua["echogate.resumed"]; got.Type() != attribute.BOOL || got.AsBool() {
		t.Errorf("echogate.resumed = %v, want bool false", got.Emit())
	}
	if _, ok := ua["empty"]; ok {
		t.Error("an empty attribute was recorded, want it left out")
	}
	if got := turn.Resource.Set(); !hasAttr(got, "service.name", "echogate") {
		t.Errorf("resource = %v, want service.name echogate", got.Encoded(attribute.DefaultEncoder()))
	}
}

func hasAttr(set *attribute.Set, k, v string) bool {
	got, ok := set.Value(attribute.Key(k))
	return ok && got.AsString() == v
}

func TestKindOf(t *testing.T) {
	for name, want := range map[string]trace.SpanKind{
		"echogate.turn":             trace.SpanKindConsumer,
		"chat gpt-4o-mini":          trace.SpanKindClient,
		"echogate.post slack":       trace.SpanKindClient,
		"execute_tool current_time": trace.SpanKindInternal,
		"echogate.context":          trace.SpanKindInternal,
	} {
		if got := KindOf(name); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestErrorType(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{context.Canceled, "canceled"},
		{fmt.Errorf("model: %w", context.DeadlineExceeded), "timeout"},
		{errors.New("boom"), "_OTHER"},
	} {
		if got := ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestServiceNameSources(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg  Config
		want string
	}{
		"default":          {Config{Getenv: env(nil)}, "echogate"},
		"environment":      {Config{Getenv: env(map[string]string{EnvServiceName: "gw-env"})}, "gw-env"},
		"config wins":      {Config{ServiceName: "gw-cfg", Getenv: env(map[string]string{EnvServiceName: "gw-env"})}, "gw-cfg"},
		"version included": {Config{ServiceName: "gw", ServiceVersion: "1.2.3", Getenv: env(nil)}, "gw"},
	} {
		t.Run(name, func(t *testing.T) {
			tr, exp := newMemTracer(t, tt.cfg)
			_, end := tr.Start(context.Background(), "x", nil)
			end(nil, nil)
			set := exp.GetSpans()[0].Resource.Set()
			if !hasAttr(set, "service.name", tt.want) {
				t.Errorf("service.name in %v, want %q", set.Encoded(attribute.DefaultEncoder()), tt.want)
			}
			if tt.cfg.ServiceVersion != "" && !hasAttr(set, "service.version", tt.cfg.ServiceVersion) {
				t.Errorf("service.version missing in %v", set.Encoded(attribute.DefaultEncoder()))
			}
		})
	}
}

func TestSampleRatio(t *testing.T) {
	// A ratio this small records (practically) no turn; children follow their root's decision.
	tr, exp := newMemTracer(t, Config{SampleRatio: 1e-12})
	for i := 0; i < 50; i++ {
		ctx, end := tr.Start(context.Background(), "echogate.turn", nil)
		_, endChild := tr.Start(ctx, "echogate.context", nil)
		endChild(nil, nil)
		end(nil, nil)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("recorded spans at ratio 1e-12 = %d, want 0", n)
	}
	tr1, exp1 := newMemTracer(t, Config{SampleRatio: 1})
	ctx, end := tr1.Start(context.Background(), "echogate.turn", nil)
	_, endChild := tr1.Start(ctx, "echogate.context", nil)
	endChild(nil, nil)
	end(nil, nil)
	if n := len(exp1.GetSpans()); n != 2 {
		t.Errorf("recorded spans at ratio 1 = %d, want 2", n)
	}
}

func TestEndpointResolution(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg  Config
		vars map[string]string
		want string
	}{
		"base url":              {Config{Endpoint: "http://collector:4318"}, nil, "http://collector:4318/v1/traces"},
		"base url slash":        {Config{Endpoint: "http://collector:4318/"}, nil, "http://collector:4318/v1/traces"},
		"path prefix":           {Config{Endpoint: "https://otlp.example.com/otlp"}, nil, "https://otlp.example.com/otlp/v1/traces"},
		"full url kept":         {Config{Endpoint: "https://otlp.example.com/v1/traces"}, nil, "https://otlp.example.com/v1/traces"},
		"no scheme is https":    {Config{Endpoint: "collector:4318"}, nil, "https://collector:4318/v1/traces"},
		"no scheme insecure":    {Config{Endpoint: "collector:4318", Insecure: true}, nil, "http://collector:4318/v1/traces"},
		"env base":              {Config{}, map[string]string{EnvEndpoint: "http://c:4318"}, "http://c:4318/v1/traces"},
		"env traces as is":      {Config{}, map[string]string{EnvTracesEndpoint: "http://c:4318/custom", EnvEndpoint: "http://other:4318"}, "http://c:4318/custom"},
		"env traces root":       {Config{}, map[string]string{EnvTracesEndpoint: "http://c:4318"}, "http://c:4318/"},
		"config wins over env":  {Config{Endpoint: "http://cfg:4318"}, map[string]string{EnvEndpoint: "http://env:4318"}, "http://cfg:4318/v1/traces"},
		"env insecure not used": {Config{Insecure: true}, map[string]string{EnvEndpoint: "https://c:4318"}, "https://c:4318/v1/traces"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Getenv = env(tt.vars)
			got, err := cfg.withDefaults().endpointURL()
			if err != nil || got != tt.want {
				t.Errorf("endpointURL() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	fields := map[string]string{ // ConfigError.Field of the failing cases
		"ratio too big": "sample_ratio", "ratio negative": "sample_ratio", "grpc scheme": "endpoint",
		"https and insecure": "endpoint", "no host": "endpoint", "query": "endpoint", "user info": "endpoint",
		"bad env header": EnvHeaders, "bad env header name": EnvTracesHeaders, "bad env escape": EnvHeaders,
		"bad header name": "headers", "bad env endpoint": EnvEndpoint,
	}
	for name, tt := range map[string]struct {
		cfg  Config
		vars map[string]string
		want string // substring of the error; "" for valid
	}{
		"off":                 {Config{}, nil, ""},
		"off ignores headers": {Config{}, map[string]string{EnvHeaders: "garbage"}, ""},
		"valid":               {Config{Endpoint: "http://c:4318", Headers: map[string]string{"api-key": "s"}, SampleRatio: 0.5}, nil, ""},
		"ratio too big":       {Config{SampleRatio: 1.5}, nil, "sample_ratio: 1.5"},
		"ratio negative":      {Config{SampleRatio: -0.1}, nil, "sample_ratio: -0.1"},
		"grpc scheme":         {Config{Endpoint: "grpc://c:4317"}, nil, "http:// or https://"},
		"https and insecure":  {Config{Endpoint: "https://c:4318", Insecure: true}, nil, "endpoint: \"https://c:4318\" uses https but insecure"},
		"no host":             {Config{Endpoint: "http://"}, nil, "no host"},
		"query":               {Config{Endpoint: "http://c:4318/?k=v"}, nil, "query"},
		"user info":           {Config{Endpoint: "http://u:p@c:4318"}, nil, "credentials"},
		"bad env header":      {Config{Endpoint: "http://c:4318"}, map[string]string{EnvHeaders: "api-key"}, EnvHeaders + ": entry 1"},
		"bad env header name": {Config{Endpoint: "http://c:4318"}, map[string]string{EnvTracesHeaders: "a=TOPSECRET,bad key=2"}, EnvTracesHeaders + ": entry 2"},
		"bad env escape":      {Config{Endpoint: "http://c:4318"}, map[string]string{EnvHeaders: "k=%zzTOPSECRET"}, `value of "k"`},
		"bad header name":     {Config{Endpoint: "http://c:4318", Headers: map[string]string{"x y": "1"}}, nil, `headers: "x y"`},
		"bad env endpoint":    {Config{}, map[string]string{EnvEndpoint: "ftp://c"}, EnvEndpoint},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Getenv = env(tt.vars)
			err := Validate(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid)):
				t.Errorf("Validate = %v, want an ErrInvalid naming %q", err, tt.want)
			}
			var ce *ConfigError
			if err != nil && (!errors.As(err, &ce) || ce.Field != fields[name]) {
				t.Errorf("Validate = %#v, want a *ConfigError with Field %q", err, fields[name])
			}
			if err != nil && strings.Contains(err.Error(), "TOPSECRET") {
				t.Errorf("Validate error %q shows a header value", err)
			}
		})
	}
}

func TestHeadersMerge(t *testing.T) {
	cfg := Config{
		Endpoint: "http://c:4318",
		Headers:  map[string]string{"a": "from-config", "c": "3"},
		Getenv:   env(map[string]string{EnvHeaders: "a=1, b = x%20y ,", EnvTracesHeaders: "b=2,d=4"}),
	}
	got, err := cfg.headers()
	want := map[string]string{"a": "from-config", "b": "2", "c": "3", "d": "4"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("headers() = %v, %v; want %v", got, err, want)
	}
	h := map[string]string{}
	if err := parseHeaders(EnvHeaders, "k=x%20y", h); err != nil || h["k"] != "x y" {
		t.Errorf("parseHeaders(k=x%%20y) = %v, %v; want x y", h, err)
	}
}

func TestEnabled(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg  Config
		vars map[string]string
		want bool
	}{
		"nothing":            {Config{}, nil, false},
		"config endpoint":    {Config{Endpoint: "http://c:4318"}, nil, true},
		"env endpoint":       {Config{}, map[string]string{EnvEndpoint: "http://c:4318"}, true},
		"env traces":         {Config{}, map[string]string{EnvTracesEndpoint: "http://c:4318/v1/traces"}, true},
		"sdk disabled":       {Config{Endpoint: "http://c:4318"}, map[string]string{EnvSDKDisabled: "true"}, false},
		"sdk disabled=no":    {Config{Endpoint: "http://c:4318"}, map[string]string{EnvSDKDisabled: "false"}, true},
		"blank endpoint":     {Config{Endpoint: "  "}, nil, false},
		"headers are not on": {Config{Headers: map[string]string{"a": "b"}}, nil, false},
	} {
		cfg := tt.cfg
		cfg.Getenv = env(tt.vars)
		if got := Enabled(cfg); got != tt.want {
			t.Errorf("%s: Enabled = %v, want %v", name, got, tt.want)
		}
	}
}

func TestNewWithoutEndpoint(t *testing.T) {
	tr, err := New(context.Background(), Config{Getenv: env(nil)}, nil)
	if !errors.Is(err, ErrNoEndpoint) || tr != nil {
		t.Errorf("New(no endpoint) = %v, %v; want nil, ErrNoEndpoint", tr, err)
	}
	_, err = New(context.Background(), Config{Endpoint: "grpc://c:4317", Getenv: env(nil)}, nil)
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("New(grpc endpoint) = %v, want ErrInvalid", err)
	}
}

// collector is a fake OTLP/HTTP receiver: it decodes every export request.
type collector struct {
	mu       sync.Mutex
	requests []*collectortrace.ExportTraceServiceRequest
	headers  []http.Header
	paths    []string
	errs     []error
	got      chan struct{}
}

func newCollector(t *testing.T) (*collector, *httptest.Server) {
	c := &collector{got: make(chan struct{}, 64)}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	return c, srv
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	err := func() error {
		if r.Method != http.MethodPost {
			return fmt.Errorf("method %s, want POST", r.Method)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			return fmt.Errorf("content type %q, want application/x-protobuf", ct)
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				return err
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		req := &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(raw, req); err != nil {
			return fmt.Errorf("decode ExportTraceServiceRequest: %w", err)
		}
		c.mu.Lock()
		c.requests = append(c.requests, req)
		c.headers = append(c.headers, r.Header.Clone())
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
		return nil
	}()
	if err != nil {
		c.mu.Lock()
		c.errs = append(c.errs, err)
		c.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
	c.got <- struct{}{}
}

func TestOTLPHTTPExportReachesCollector(t *testing.T) {
	c, srv := newCollector(t)
	var logs bytes.Buffer
	tr, err := New(context.Background(), Config{
		Endpoint:       srv.URL,
		Headers:        map[string]string{"x-api-key": "k-123"},
		ServiceVersion: "9.9.9",
		BatchTimeout:   time.Hour, // only Shutdown flushes
		Getenv:         env(map[string]string{EnvHeaders: "x-team=ops"}),
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, endTurn := tr.Start(context.Background(), "echogate.turn", map[string]string{"echogate.turn": "t_42"})
	_, endCtx := tr.Start(ctx, "echogate.context", nil)
	endCtx(nil, nil)
	endTurn(nil, map[string]string{"gen_ai.usage.output_tokens": "5"})
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown = %v, want the queued spans flushed", err)
	}
	if err := tr.Shutdown(sctx); err != nil {
		t.Errorf("second Shutdown = %v, want nil", err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) > 0 {
		t.Fatalf("collector rejected exports: %v", c.errs)
	}
	if len(c.requests) == 0 {
		t.Fatalf("the collector received no export (log: %s)", logs.String())
	}
	if c.paths[0] != "/v1/traces" {
		t.Errorf("export path = %q, want /v1/traces", c.paths[0])
	}
	if got := c.headers[0].Get("X-Api-Key"); got != "k-123" {
		t.Errorf("x-api-key header = %q, want the configured value", got)
	}
	if got := c.headers[0].Get("X-Team"); got != "ops" {
		t.Errorf("x-team header = %q, want the OTEL_EXPORTER_OTLP_HEADERS value", got)
	}
	byName := map[string]string{} // span name → parent span id (hex)
	ids := map[string]string{}
	var service, version string
	var outTokens int64 = -1
	for _, req := range c.requests {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				switch kv.Key {
				case "service.name":
					service = kv.GetValue().GetStringValue()
				case "service.version":
					version = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					byName[sp.Name] = fmt.Sprintf("%x", sp.ParentSpanId)
					ids[sp.Name] = fmt.Sprintf("%x", sp.SpanId)
					for _, kv := range sp.Attributes {
						if kv.Key == "gen_ai.usage.output_tokens" {
							outTokens = kv.GetValue().GetIntValue()
						}
					}
				}
			}
		}
	}
	if _, ok := byName["echogate.turn"]; !ok {
		t.Fatalf("spans received = %v, want echogate.turn among them", byName)
	}
	if byName["echogate.turn"] != "" {
		t.Errorf("echogate.turn parent = %q, want none", byName["echogate.turn"])
	}
	if byName["echogate.context"] != ids["echogate.turn"] {
		t.Errorf("echogate.context parent = %q, want the turn %q", byName["echogate.context"], ids["echogate.turn"])
	}
	if outTokens != 5 {
		t.Errorf("gen_ai.usage.output_tokens = %d, want int 5 on the wire", outTokens)
	}
	if service != "echogate" || version != "9.9.9" {
		t.Errorf("resource service = %q %q, want echogate 9.9.9", service, version)
	}
	if strings.Contains(logs.String(), "k-123") {
		t.Error("the log shows a header value")
	}
}

func TestShutdownReturnsWhenCollectorIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connection refused from now on
	tr, err := New(context.Background(), Config{Endpoint: "http://" + addr, BatchTimeout: time.Hour, Getenv: env(nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, end := tr.Start(context.Background(), "echogate.turn", nil)
	end(nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The export retries until the context ends; Shutdown must give up with it, not hang.
	if err := tr.Shutdown(ctx); err == nil {
		t.Log("Shutdown returned nil; the failed export was dropped")
	}
}

func TestErrorLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newErrorLog(slog.New(slog.NewTextHandler(&buf, nil)), time.Minute, func() time.Time { return now })
	l.Handle(errors.New("export 1"))
	l.Handle(errors.New("export 2"))
	l.Handle(errors.New("export 3"))
	now = now.Add(time.Minute)
	l.Handle(errors.New("export 4"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log lines = %d, want 2 (one per minute):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "export 1") || !strings.Contains(lines[1], "export 4") || !strings.Contains(lines[1], "suppressed_since_last=2") {
		t.Errorf("log = %q, want export 1, then export 4 with 2 suppressed", lines)
	}
}

func TestAttributesConversion(t *testing.T) {
	for _, tt := range []struct {
		k, v string
		want attribute.Value
	}{
		{"gen_ai.usage.input_tokens", "42", attribute.Int64Value(42)},
		{"gen_ai.usage.input_tokens", "many", attribute.StringValue("many")},
		{"gen_ai.request.temperature", "0.5", attribute.Float64Value(0.5)},
		{"gen_ai.response.finish_reasons", "stop", attribute.StringSliceValue([]string{"stop"})},
		{"echogate.stream_appends_count", "3", attribute.Int64Value(3)},
		{"echogate.resumed", "true", attribute.BoolValue(true)},
		{"gen_ai.tool.name", "current_time", attribute.StringValue("current_time")},
	} {
		got := Attributes(map[string]string{tt.k: tt.v})
		if len(got) != 1 || got[0].Value != tt.want {
			t.Errorf("Attributes(%s=%s) = %v, want %v", tt.k, tt.v, got, tt.want.Emit())
		}
	}
}

// BenchmarkStartEnd reports the cost of one recorded span with a few attributes.
func BenchmarkStartEnd(b *testing.B) {
	exp := tracetest.NewNoopExporter()
	tr, err := New(context.Background(), Config{Getenv: env(nil)}, nil, WithExporter(exp))
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	ctx := context.Background()
	attrs := map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "current_time"}
	b.ReportAllocs()
	for b.Loop() {
		_, end := tr.Start(ctx, "execute_tool current_time", attrs)
		end(nil, nil)
	}
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)
