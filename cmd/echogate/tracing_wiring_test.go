package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/console"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/slack"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/internal/tracing"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/pipeline/traced"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

// --- a scripted turn through the real pipeline, spans in memory ---

// tracedPipeline runs the real pipeline with tracing wired by wireTracing (the in-memory
// exporter injected) and the given replier for the web platform.
func tracedPipeline(t *testing.T, rep pipeline.Replier, model agent.Model) (*pipeline.Pipeline, *tracetest.InMemoryExporter, *core, func()) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	ct, err := builtin.NewCurrentTime(builtin.CurrentTimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(ct)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Models: ModelsConfig{Providers: []ProviderConfig{{Name: "openai", BaseURL: "http://127.0.0.1:1/v1"}}}}
	c := &core{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	deps := pipeline.Deps{Store: pipelinetest.NewMemStore(), Model: model, Tools: reg,
		Repliers: map[string]pipeline.Replier{echogate.PlatformWeb: rep}}
	if err := c.wireTracing(&deps, tracing.WithSyncExporter(exp)); err != nil {
		t.Fatalf("wireTracing = %v", err)
	}
	p, err := pipeline.New(pipeline.Config{Model: "gpt-test", NoPlan: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	<-p.Started()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	// The in-memory exporter forgets its spans at shutdown: tests read them before.
	t.Cleanup(func() {
		stop()
		c.stopTracing()
	})
	return p, exp, c, stop
}

// spanTree indexes finished spans for the assertions.
type spanTree struct {
	spans []sdktrace.ReadOnlySpan
}

func (s spanTree) named(prefix string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.spans {
		if strings.HasPrefix(sp.Name(), prefix) {
			out = append(out, sp)
		}
	}
	return out
}

func (s spanTree) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := s.named(name)
	if len(got) != 1 {
		t.Fatalf("spans named %q = %d, want 1; all spans: %s", name, len(got), s)
	}
	return got[0]
}

func (s spanTree) String() string {
	var names []string
	for _, sp := range s.spans {
		names = append(names, sp.Name())
	}
	return strings.Join(names, ", ")
}

func attrsOf(sp sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range sp.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func TestTracingOneTracePerTurn(t *testing.T) {
	for name, tt := range map[string]struct {
		streaming bool
		postOp    string
		postUnder string // parent of the post span
	}{
		// A streamed reply starts during inference, on a context without the turn: the post span
		// still hangs under the turn.
		"streaming replier": {true, "stream", "echogate.turn"},
		"plain replier":     {false, "send", "echogate.response"},
	} {
		t.Run(name, func(t *testing.T) {
			inner := pipelinetest.NewReplier(echogate.PlatformWeb)
			var rep pipeline.Replier = inner
			if tt.streaming {
				rep = pipelinetest.StreamingReplier{Replier: inner}
			}
			model := agenttest.NewScriptedModel(
				agenttest.Step{ToolCalls: []echogate.ToolCall{{Name: "current_time", Arguments: `{"timezone":"UTC"}`}},
					Usage: echogate.Usage{InputTokens: 40, OutputTokens: 7}},
				agenttest.Step{Text: "It is noon in UTC.", Usage: echogate.Usage{InputTokens: 60, OutputTokens: 6}},
			)
			p, exp, c, stop := tracedPipeline(t, rep, model)
			if err := p.Submit(context.Background(), echogate.InboundEvent{ID: "ev1", Kind: echogate.KindDirect,
				Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "s1", DM: true},
				Actor:        echogate.Actor{ID: "u1"}, Text: "what time is it?"}); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-inner.Done:
				if ev.Status != "done" {
					t.Fatalf("turn status = %q, want done", ev.Status)
				}
			case <-time.After(waitTimeout):
				t.Fatalf("no turn finished within %s", waitTimeout)
			}
			stop() // every turn ended: every span is exported
			if n := c.tracing.turns.Running(); n != 0 {
				t.Errorf("turn spans still registered = %d, want 0", n)
			}
			if texts := inner.Texts(); len(texts) != 1 || texts[0] != "It is noon in UTC." {
				t.Errorf("posts = %q, want the answer once", texts)
			}

			tree := spanTree{exp.GetSpans().Snapshots()}
			turn := tree.one(t, "echogate.turn")
			for _, sp := range tree.spans {
				if sp.SpanContext().TraceID() != turn.SpanContext().TraceID() {
					t.Errorf("span %q in trace %s, want the turn's trace %s", sp.Name(), sp.SpanContext().TraceID(), turn.SpanContext().TraceID())
				}
			}
			if turn.Parent().IsValid() {
				t.Errorf("turn parent = %s, want none (root)", turn.Parent().SpanID())
			}
			parentOf := func(sp sdktrace.ReadOnlySpan, want sdktrace.ReadOnlySpan) {
				t.Helper()
				if sp.Parent().SpanID() != want.SpanContext().SpanID() {
					t.Errorf("parent of %q = %s, want %q (%s)", sp.Name(), sp.Parent().SpanID(), want.Name(), want.SpanContext().SpanID())
				}
			}
			parentOf(tree.one(t, "echogate.context"), turn)
			response := tree.one(t, "echogate.response")
			parentOf(response, turn)

			chats := tree.named("chat ")
			if len(chats) != 2 {
				t.Fatalf("chat spans = %d, want 2; all: %s", len(chats), tree)
			}
			sort.Slice(chats, func(i, j int) bool { return chats[i].StartTime().Before(chats[j].StartTime()) })
			wantChat := []struct {
				in, out int64
				finish  string
				ttft    bool
			}{{40, 7, "tool_calls", false}, {60, 6, "stop", true}}
			for i, sp := range chats {
				parentOf(sp, turn)
				a := attrsOf(sp)
				w := wantChat[i]
				if sp.Name() != "chat gpt-test" || a["gen_ai.operation.name"].AsString() != "chat" || a["gen_ai.system"].AsString() != "openai" ||
					a["gen_ai.request.model"].AsString() != "gpt-test" || a["gen_ai.response.model"].AsString() != "gpt-test" {
					t.Errorf("chat span %d = %q %v, want chat gpt-test with the GenAI request/response attributes", i, sp.Name(), a)
				}
				if a["gen_ai.usage.input_tokens"].AsInt64() != w.in || a["gen_ai.usage.output_tokens"].AsInt64() != w.out {
					t.Errorf("chat span %d tokens = %d/%d, want %d/%d", i, a["gen_ai.usage.input_tokens"].AsInt64(), a["gen_ai.usage.output_tokens"].AsInt64(), w.in, w.out)
				}
				if got := a["gen_ai.response.finish_reasons"].AsStringSlice(); !reflect.DeepEqual(got, []string{w.finish}) {
					t.Errorf("chat span %d finish_reasons = %v, want [%s]", i, got, w.finish)
				}
				if sp.SpanKind().String() != "client" {
					t.Errorf("chat span %d kind = %v, want client", i, sp.SpanKind())
				}
				hasTTFT := false
				for _, ev := range sp.Events() {
					if ev.Name == "gen_ai.first_token" {
						hasTTFT = true
					}
				}
				if hasTTFT != w.ttft {
					t.Errorf("chat span %d first-token event = %v, want %v (only a call that streamed text has one)", i, hasTTFT, w.ttft)
				}
			}

			tool := tree.one(t, "execute_tool current_time")
			parentOf(tool, turn)
			if a := attrsOf(tool); a["gen_ai.tool.name"].AsString() != "current_time" || a["gen_ai.operation.name"].AsString() != "execute_tool" {
				t.Errorf("tool span attributes = %v, want gen_ai.tool.name current_time", a)
			}
			if tool.StartTime().Before(chats[0].EndTime()) || tool.EndTime().After(chats[1].StartTime()) {
				t.Error("the tool span does not sit between the two model calls")
			}

			post := tree.one(t, "echogate.post web")
			under := turn
			if tt.postUnder == "echogate.response" {
				under = response
			}
			parentOf(post, under)
			pa := attrsOf(post)
			if pa["echogate.post.operation"].AsString() != tt.postOp || pa["echogate.post.kind"].AsString() != "reply" || pa["messaging.message.id"].AsString() == "" {
				t.Errorf("post span attributes = %v, want operation %s, kind reply and the message id", pa, tt.postOp)
			}
			if tt.streaming && pa["echogate.stream.appends_count"].AsInt64() < 1 {
				t.Errorf("stream appends = %d, want the streamed deltas counted", pa["echogate.stream.appends_count"].AsInt64())
			}
			if want := 7; len(tree.spans) != want {
				t.Errorf("spans = %d (%s), want %d", len(tree.spans), tree, want)
			}
		})
	}
}

// --- capabilities of the wrapped repliers ---

// capMask says which capabilities the pipeline finds on r: 1 Streamer, 2 Editor, 4 Typer,
// 8 TurnObserver, 16 ReplyFinder, 32 ActivityShower, 64 Downloader.
func capMask(r pipeline.Replier) int {
	c := pipeline.CapsOf(r)
	mask := 0
	for i, has := range []bool{c.Streamer != nil, c.Editor != nil, c.Typer != nil, c.Observer != nil, c.Finder != nil, c.Activity != nil, c.Downloader != nil} {
		if has {
			mask |= 1 << i
		}
	}
	return mask
}

type sendOnly struct{}

func (sendOnly) Send(context.Context, echogate.Outbound) (echogate.MessageRef, error) {
	return echogate.MessageRef{ID: "1"}, nil
}

func TestTraceReplierKeepsCapabilities(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	must := func(r pipeline.Replier, err error) pipeline.Replier {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tr, err := tracing.New(context.Background(), tracing.Config{Getenv: func(string) string { return "" }}, nil, tracing.WithSyncExporter(tracetest.NewInMemoryExporter()))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	turns := traced.NewTurns(tr)
	for name, r := range map[string]pipeline.Replier{
		"send only":           sendOnly{},
		"pipelinetest":        pipelinetest.NewReplier("web"),
		"pipelinetest stream": pipelinetest.StreamingReplier{Replier: pipelinetest.NewReplier("web")},
		"web channel":         must(web.New(web.Config{}, log)),
		"console channel":     must(console.New(console.Config{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, log)),
		"slack channel":       must(slack.New(slack.Config{BotToken: "xoxb-1", AppToken: "xapp-1"}, log)),
		"discord channel":     must(discord.New(discord.Config{Token: "t"}, log)),
	} {
		if got, want := capMask(traced.NewReplier(r, "x", turns)), capMask(r); got != want {
			t.Errorf("%s: capabilities after wrapping = %07b, want %07b", name, got, want)
		}
	}
}

// --- configuration ---

func TestTracingConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", time.Now().UnixNano()))
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := loadConfig(write("tracing:\n  endpoint: http://collector:4318\n  headers: {x-api-key: k}\n  sample_ratio: 0.25\n  service_name: gw\n"),
		func(k string) string { return map[string]string{"ECHOGATE_TRACING_INSECURE": "true"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Tracing.tracingConfig()
	if tc.Endpoint != "http://collector:4318" || tc.Headers["x-api-key"] != "k" || tc.SampleRatio != 0.25 || tc.ServiceName != "gw" || !tc.Insecure || !cfg.Tracing.enabled() {
		t.Errorf("tracing config = %+v, want the YAML values and the env override", tc)
	}
	for name, tt := range map[string]struct {
		yaml string
		vars map[string]string
		want string
	}{
		"ratio":         {"tracing:\n  sample_ratio: 2\n", nil, "tracing.sample_ratio"},
		"grpc endpoint": {"tracing:\n  endpoint: grpc://c:4317\n", nil, "tracing.endpoint"},
		"env endpoint":  {"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://c"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		"env headers":   {"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "nokey"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		"unknown key":   {"tracing:\n  endpont: http://c:4318\n", nil, `unknown key "endpont"`},
	} {
		t.Run(name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = write(tt.yaml)
			}
			_, err := loadConfig(path, func(k string) string { return tt.vars[k] })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("loadConfig = %v, want an error naming %q", err, tt.want)
			}
		})
	}
	// Off by default: nothing is wrapped.
	cfg, err = loadConfig("", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c := &core{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	model := agenttest.NewScriptedModel()
	rep := sendOnly{}
	deps := pipeline.Deps{Model: model, Repliers: map[string]pipeline.Replier{"web": rep}}
	if err := c.wireTracing(&deps); err != nil {
		t.Fatal(err)
	}
	if deps.Tracer != nil || deps.Model != agent.Model(model) || deps.Repliers["web"] != pipeline.Replier(rep) || c.tracing != nil {
		t.Errorf("tracing off: deps were changed (tracer %v)", deps.Tracer)
	}
	c.stopTracing() // no-op when off
}

// --- end to end: `echogate serve` exporting to an OTLP/HTTP collector ---

// otlpCollector is a fake OTLP/HTTP trace receiver.
type otlpCollector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []map[string]string // resource attributes per received span
	errs  []string
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				c.fail(w, "gzip: "+err.Error())
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			c.fail(w, err.Error())
			return
		}
		req := &collectortrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(raw, req) != nil {
			c.fail(w, "bad export to "+r.URL.Path)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			res := map[string]string{}
			for _, kv := range rs.GetResource().GetAttributes() {
				res[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					c.spans = append(c.spans, sp)
					c.res = append(c.res, res)
				}
			}
		}
		c.mu.Unlock()
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *otlpCollector) fail(w http.ResponseWriter, msg string) {
	c.mu.Lock()
	c.errs = append(c.errs, msg)
	c.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

// wireTrace is the received spans of one trace, by name.
type wireTrace struct {
	byName map[string][]*tracepb.Span
	all    []*tracepb.Span
}

func (c *otlpCollector) trace(t *testing.T) wireTrace {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) > 0 {
		t.Fatalf("collector rejected exports: %v", c.errs)
	}
	w := wireTrace{byName: map[string][]*tracepb.Span{}, all: c.spans}
	for _, sp := range c.spans {
		w.byName[sp.Name] = append(w.byName[sp.Name], sp)
	}
	return w
}

func wireAttr(sp *tracepb.Span, key string) string {
	for _, kv := range sp.Attributes {
		if kv.Key == key {
			v := kv.GetValue()
			switch {
			case v.GetIntValue() != 0:
				return fmt.Sprint(v.GetIntValue())
			case v.GetArrayValue() != nil:
				var parts []string
				for _, e := range v.GetArrayValue().Values {
					parts = append(parts, e.GetStringValue())
				}
				return strings.Join(parts, ",")
			}
			return v.GetStringValue()
		}
	}
	return ""
}

func (w wireTrace) one(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	if len(w.byName[name]) != 1 {
		var names []string
		for _, sp := range w.all {
			names = append(names, sp.Name)
		}
		t.Fatalf("spans named %q = %d, want 1; received: %v", name, len(w.byName[name]), names)
	}
	return w.byName[name][0]
}

func TestTracingServeExportsOneTracePerTurn(t *testing.T) {
	col := newOTLPCollector(t)
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test"})
	defer fake.Close()
	fake.Enqueue(agenttest.ToolAnswer(echogate.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`}))
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.TextAnswer("It is noon, Monday."), true
	})
	base, logs, stop := startServe(t, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-test",
		"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=otlp-secret"})
	evs := postChat(t, base, "trace-1", "what time is it")
	var text string
	types := map[string]int{}
	for _, ev := range evs {
		types[ev.Event]++
		if ev.Event == "delta" {
			text += ev.Data["text"].(string)
		}
	}
	// The web channel still observes the turn through the traced replier (SSE events).
	if last := evs[len(evs)-1]; last.Event != "done" || text != "It is noon, Monday." || types["tool_call"] != 1 || types["tool_result"] != 1 {
		t.Fatalf("SSE = %v (text %q), want deltas, tool_call, tool_result and done", types, text)
	}
	stop() // exit flushes the queued spans
	if !strings.Contains(logs.String(), "tracing on") {
		t.Errorf("log lacks the tracing-on line: %s", logs.String())
	}
	if strings.Contains(logs.String(), "otlp-secret") {
		t.Error("the log shows the OTLP header value")
	}

	tr := col.trace(t)
	turn := tr.one(t, "echogate.turn")
	if len(turn.ParentSpanId) != 0 {
		t.Errorf("turn parent = %x, want none", turn.ParentSpanId)
	}
	for _, sp := range tr.all {
		if string(sp.TraceId) != string(turn.TraceId) {
			t.Errorf("span %q in trace %x, want %x (one trace per turn)", sp.Name, sp.TraceId, turn.TraceId)
		}
	}
	child := func(sp *tracepb.Span, parent *tracepb.Span) {
		t.Helper()
		if string(sp.ParentSpanId) != string(parent.SpanId) {
			t.Errorf("parent of %q = %x, want %q %x", sp.Name, sp.ParentSpanId, parent.Name, parent.SpanId)
		}
	}
	child(tr.one(t, "echogate.context"), turn)
	resp := tr.one(t, "echogate.response")
	child(resp, turn)
	chats := tr.byName["chat gpt-4o-mini"]
	if len(chats) != 2 {
		t.Fatalf("chat spans = %d, want 2", len(chats))
	}
	for _, sp := range chats {
		child(sp, turn)
		if wireAttr(sp, "gen_ai.operation.name") != "chat" || wireAttr(sp, "gen_ai.system") != "openai" || wireAttr(sp, "gen_ai.response.model") == "" ||
			wireAttr(sp, "gen_ai.usage.input_tokens") == "" || wireAttr(sp, "gen_ai.usage.output_tokens") == "" || wireAttr(sp, "gen_ai.response.finish_reasons") == "" {
			t.Errorf("chat span attributes = %v, want the GenAI attributes with token counts", sp.Attributes)
		}
	}
	tool := tr.one(t, "execute_tool current_time")
	child(tool, turn)
	if wireAttr(tool, "gen_ai.tool.name") != "current_time" {
		t.Errorf("tool span attributes = %v", tool.Attributes)
	}
	post := tr.one(t, "echogate.post web")
	child(post, resp)
	if wireAttr(post, "echogate.post.kind") != "reply" {
		t.Errorf("post span attributes = %v", post.Attributes)
	}
	col.mu.Lock()
	if got := col.res[0]["service.name"]; got != "echogate" {
		t.Errorf("service.name = %q, want echogate", got)
	}
	col.mu.Unlock()
}

func TestTracingSlackStreamingStillWorks(t *testing.T) {
	col := newOTLPCollector(t)
	// The answer holds after a few chunks until the stream is visibly native, so the test does
	// not depend on how fast the model answers.
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	defer fake.Close()
	hold := make(chan struct{})
	var holdOnce sync.Once
	release := func() { holdOnce.Do(func() { close(hold) }) }
	defer release()
	const answer = "Streaming through the traced replier works, one fragment at a time, to the end."
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.Answer{Text: answer, FragmentSize: 6, Hold: hold, HoldAfter: 4}, true
	})
	p, srv := newSlackPlatform(t)
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e"}
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "tracing:\n  endpoint: "+col.srv.URL+"\n  service_name: gw-slack\n")
	waitReadyz(t, g.base, http.StatusOK, "slack", func(s string) bool { return strings.Contains(s, "connected") })
	c := p.newConv(t, "[trace-slack]")
	p.open(t, c, p.requester, "tell me something [trace-slack]")
	p.waitFor(t, "chat.startStream", func() bool { return len(srv.CallsTo("chat.startStream")) == 1 })
	release()
	msg := c.waitMsg(t, answer)
	p.waitFor(t, "the stream to be stopped", func() bool {
		for _, m := range srv.BotMessages(c.ch) {
			if m.TS == msg.ID {
				return !m.Streaming
			}
		}
		return false
	})
	for _, m := range srv.BotMessages(c.ch) {
		if m.TS == msg.ID && (!m.Streamed || m.Text != answer || m.ThreadTS != c.thread) {
			t.Errorf("answer = %+v, want a native stream in the thread with text %q", m, answer)
		}
	}
	if n := len(srv.CallsTo("chat.stopStream")); n != 1 {
		t.Errorf("chat.stopStream calls = %d, want 1", n)
	}
	if n := len(srv.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("chat.postMessage calls = %d, want 0 (the streamed message is the answer)", n)
	}
	g.stop() // flush

	tr := col.trace(t)
	turn := tr.one(t, "echogate.turn")
	post := tr.one(t, "echogate.post slack")
	if string(post.TraceId) != string(turn.TraceId) || string(post.ParentSpanId) != string(turn.SpanId) {
		t.Errorf("slack post span in trace %x under %x, want the turn's trace %x under the turn %x", post.TraceId, post.ParentSpanId, turn.TraceId, turn.SpanId)
	}
	if wireAttr(post, "echogate.post.operation") != "stream" || wireAttr(post, "messaging.message.id") != msg.ID {
		t.Errorf("slack post span attributes = %v, want a stream of message %s", post.Attributes, msg.ID)
	}
	col.mu.Lock()
	if got := col.res[0]["service.name"]; got != "gw-slack" {
		t.Errorf("service.name = %q, want gw-slack from tracing.service_name", got)
	}
	col.mu.Unlock()
}

// TestTracingChatOneShotFlushesAtExit is `echogate chat -m` with tracing: the process exits right
// after the answer, and the turn's spans reach the collector before it does.
func TestTracingChatOneShotFlushesAtExit(t *testing.T) {
	col := newOTLPCollector(t)
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test"})
	defer fake.Close()
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.TextAnswer("Hello."), true
	})
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-test", "ECHOGATE_DATA_DIR": t.TempDir(),
		"ECHOGATE_TRACING_ENDPOINT": col.srv.URL}
	e, out, errb := testEnv(vars, "chat", "-m", "hi")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "Hello." {
		t.Errorf("stdout = %q, want the answer", got)
	}
	tr := col.trace(t)
	turn := tr.one(t, "echogate.turn")
	post := tr.one(t, "echogate.post console")
	if string(post.TraceId) != string(turn.TraceId) {
		t.Errorf("console post in trace %x, want the turn's %x", post.TraceId, turn.TraceId)
	}
	if got := wireAttr(turn, "echogate.channel"); got != "console" {
		t.Errorf("turn echogate.channel = %q, want console", got)
	}
}
