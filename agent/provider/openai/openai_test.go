package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/tools"
)

const testKey = "sk-test-key"

// watchdog bounds the tests' waits for something that happens within milliseconds unless the
// code under test is broken: it turns a hang into a failure naming what never happened. It is
// never a condition of success, so a slow machine does not fail a test.
const watchdog = time.Minute

// within waits for a value on ch, failing the test if none comes within the watchdog.
func within[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		t.Fatalf("%s: nothing within %s", what, watchdog)
		panic("unreachable")
	}
}

// fakeTimer is an idle-timeout timer under the test's control: it never fires by itself.
// It is armed when made (like time.AfterFunc), by Reset, and disarmed by Stop.
type fakeTimer struct {
	mu    sync.Mutex
	f     func()
	armed bool
}

func (ft *fakeTimer) Reset(time.Duration) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	was := ft.armed
	ft.armed = true
	return was
}

func (ft *fakeTimer) Stop() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	was := ft.armed
	ft.armed = false
	return was
}

// fire runs out the timer's time: an armed timer calls its function, as a real one would, and
// fire reports true; a stopped one does nothing.
func (ft *fakeTimer) fire() bool {
	ft.mu.Lock()
	if !ft.armed {
		ft.mu.Unlock()
		return false
	}
	ft.armed = false
	f := ft.f
	ft.mu.Unlock()
	f()
	return true
}

// fakeTimers makes fake idle timers and announces each on made (dropping announcements nobody
// waits for once 64 are pending).
type fakeTimers struct{ made chan *fakeTimer }

func newFakeTimers() *fakeTimers { return &fakeTimers{made: make(chan *fakeTimer, 64)} }

func (ts *fakeTimers) newTimer(d time.Duration, f func()) timer {
	ft := &fakeTimer{f: f, armed: true}
	select {
	case ts.made <- ft:
	default:
	}
	return ft
}

// harness is a provider wired to a FakeOpenAI with recorded, instant backoff sleeps and idle
// timers that fire only when the test fires them: no test depends on the machine's speed.
type harness struct {
	f      *agenttest.FakeOpenAI
	p      *Provider
	timers *fakeTimers
	mu     sync.Mutex
	// sleeps are the backoff waits the provider asked for.
	sleeps []time.Duration
}

func newHarness(t testing.TB, mutate func(*Config)) *harness {
	t.Helper()
	f := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: testKey})
	t.Cleanup(f.Close)
	cfg := Config{BaseURL: f.URL(), APIKey: testKey, Organization: "org-test"}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	h := &harness{f: f, p: p, timers: newFakeTimers()}
	p.newTimer = h.timers.newTimer
	p.sleep = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		h.sleeps = append(h.sleeps, d)
		h.mu.Unlock()
		return ctx.Err()
	}
	p.jitter = func() float64 { return 0.5 }
	return h
}

// generate runs Generate, failing the test if it does not return within the watchdog.
func (h *harness) generate(t *testing.T, ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	t.Helper()
	type result struct {
		resp agent.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := h.p.Generate(ctx, req, onDelta)
		done <- result{resp, err}
	}()
	r := within(t, "Generate to return", done)
	return r.resp, r.err
}

func (h *harness) waits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sleeps)
}

func userReq(text string) agent.Request {
	return agent.Request{Model: "gpt-4o-mini", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: text}}}
}

// collect returns an onDelta that records deltas.
func collect(texts, reasoning *[]string) func(agent.Delta) error {
	return func(d agent.Delta) error {
		if d.Text != "" {
			*texts = append(*texts, d.Text)
		}
		if d.Reasoning != "" && reasoning != nil {
			*reasoning = append(*reasoning, d.Reasoning)
		}
		return nil
	}
}

func TestGenerateStreamsText(t *testing.T) {
	h := newHarness(t, nil)
	const answer = "Hello there — streaming works, ünïcode too."
	h.f.Enqueue(agenttest.Answer{
		Text: answer, Reasoning: "thinking hard", FragmentSize: 3,
		PromptTokens: 21, CompletionTokens: 13, CachedTokens: 5, Model: "gpt-4o-mini-2024-07-18",
	})
	var texts, reasoning []string
	resp, err := h.p.Generate(context.Background(), userReq("hi"), collect(&texts, &reasoning))
	if err != nil {
		t.Fatalf("Generate = %v, want nil", err)
	}
	if got, want := texts, agenttest.Fragments(answer, 3); !slices.Equal(got, want) {
		t.Errorf("text deltas = %q, want %q", got, want)
	}
	if got := strings.Join(reasoning, ""); got != "thinking hard" {
		t.Errorf("reasoning = %q, want %q", got, "thinking hard")
	}
	if resp.Message.Content != answer || resp.Message.Role != echogate.RoleAssistant {
		t.Errorf("message = %+v, want assistant %q", resp.Message, answer)
	}
	if resp.FinishReason != "stop" || resp.Model != "gpt-4o-mini" {
		t.Errorf("finish, model = %q, %q, want stop, gpt-4o-mini", resp.FinishReason, resp.Model)
	}
	want := echogate.Usage{Kind: echogate.UsageModel, Model: "gpt-4o-mini", InputTokens: 21, OutputTokens: 13, CachedInputTokens: 5}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	reqs := h.f.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("stream, stream_options = %v, %+v, want true, include_usage", r.Stream, r.StreamOptions)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want bearer key", got)
	}
	if got := r.Header.Get("OpenAI-Organization"); got != "org-test" {
		t.Errorf("OpenAI-Organization = %q, want org-test", got)
	}
	if len(h.waits()) != 0 {
		t.Errorf("sleeps = %v, want none", h.waits())
	}
}

// An answer of more chunks than maxErrorLines streams whole: the blank line ending each event
// counts against the limit of non-data lines only until the next data line.
func TestGenerateLongAnswer(t *testing.T) {
	h := newHarness(t, nil)
	answer := strings.Repeat("word ", 2*maxErrorLines) // chunks of 4 characters: 750 events
	h.f.Enqueue(agenttest.Answer{Text: answer, FragmentSize: 4})
	resp, err := h.p.Generate(context.Background(), userReq("write a lot"), func(agent.Delta) error { return nil })
	if err != nil || resp.Message.Content != answer {
		t.Fatalf("Generate = %d of %d chars, %v; want the whole answer, nil", len(resp.Message.Content), len(answer), err)
	}
}

// More non-data lines than maxErrorLines between two data lines end the stream.
func TestGenerateTooManyEmptyLines(t *testing.T) {
	chunk := `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, chunk+strings.Repeat("\n", maxErrorLines+1)+chunk)
	}))
	defer srv.Close()
	p, err := New(Config{BaseURL: srv.URL + "/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.newTimer = newFakeTimers().newTimer
	_, err = p.Generate(context.Background(), userReq("hi"), func(agent.Delta) error { return nil })
	if !errors.Is(err, ErrStreamBroken) || !strings.Contains(err.Error(), errTooManyEmpty.Error()) {
		t.Errorf("Generate = %v, want %v after the first chunk", err, errTooManyEmpty)
	}
}

func TestGenerateParallelToolCalls(t *testing.T) {
	h := newHarness(t, nil)
	calls := []echogate.ToolCall{
		{ID: "call_a", Name: "current_time", Arguments: `{"zone":"Europe/Berlin"}`},
		{ID: "call_b", Name: "http_fetch", Arguments: `{"url":"https://example.com/a/very/long/path?with=query&and=more"}`},
		{ID: "call_c", Name: "recall", Arguments: ``},
	}
	h.f.Enqueue(agenttest.Answer{Text: "Let me check.", ToolCalls: calls, ArgFragmentSize: 3})
	var texts []string
	resp, err := h.p.Generate(context.Background(), userReq("time and page?"), collect(&texts, nil))
	if err != nil {
		t.Fatalf("Generate = %v, want nil", err)
	}
	want := slices.Clone(calls)
	want[2].Arguments = "{}" // an empty argument string is normalised to an empty object
	if !slices.Equal(resp.Message.ToolCalls, want) {
		t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, want)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("finish = %q, want tool_calls", resp.FinishReason)
	}
	if got := strings.Join(texts, ""); got != "Let me check." || resp.Message.Content != got {
		t.Errorf("text = %q / %q, want %q", got, resp.Message.Content, "Let me check.")
	}
}

func TestAssembleToolCallsWithoutIndex(t *testing.T) {
	// Some servers omit the index: fragments are then matched by id or continue the last call.
	st := &streamState{id: "x"}
	idx := func(i int) *int { return &i }
	frags := []struct {
		index *int
		id    string
		name  string
		args  string
	}{
		{nil, "c1", "a", `{"x":`},
		{nil, "", "", `1}`},
		{nil, "c2", "b", `{}`},
		{idx(7), "", "c", `{"y"`},
		{idx(7), "", "", `:2}`},
	}
	for _, f := range frags {
		st.addCall(&goopenai.ToolCall{Index: f.index, ID: f.id, Function: goopenai.FunctionCall{Name: f.name, Arguments: f.args}})
	}
	st.finish = "stop"
	var resp agent.Response
	st.fill(&resp)
	want := []echogate.ToolCall{
		{ID: "c1", Name: "a", Arguments: `{"x":1}`},
		{ID: "c2", Name: "b", Arguments: `{}`},
		{ID: "call_x_7", Name: "c", Arguments: `{"y":2}`},
	}
	if !slices.Equal(resp.Message.ToolCalls, want) {
		t.Errorf("calls = %+v, want %+v", resp.Message.ToolCalls, want)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("finish = %q, want tool_calls (stop with calls is normalised)", resp.FinishReason)
	}
}

func TestGenerateMapsRequest(t *testing.T) {
	h := newHarness(t, nil)
	h.f.Enqueue(agenttest.TextAnswer("ok"))
	temp := float32(0)
	req := agent.Request{
		Model:       "gpt-4o",
		MaxTokens:   300,
		Temperature: &temp,
		Messages: []echogate.Message{
			{Role: echogate.RoleSystem, Content: "be brief"},
			{Role: echogate.RoleUser, Content: "what is this?", Images: []echogate.ImagePart{{URL: "https://img.example/cat.png"}, {URL: "data:image/png;base64,AAAA", MIME: "image/png"}}},
			{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "call_1", Name: "http_fetch", Arguments: `{"url":"https://x"}`}, {ID: "call_2", Name: "current_time"}}},
			{Role: echogate.RoleTool, ToolCallID: "call_1", Name: "http_fetch", Content: "page text"},
			{Role: echogate.RoleTool, ToolCallID: "call_2", Name: "current_time", Content: ""},
			{Role: echogate.RoleAssistant, Content: ""}, // empty: dropped
			{Role: echogate.RoleUser, Content: "thanks"},
		},
		Tools: []tools.Spec{
			{Name: "current_time", Description: "time"},
			{Name: "http_fetch", Description: "fetch", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
		},
	}
	if _, err := h.p.Generate(context.Background(), req, nil); err != nil {
		t.Fatalf("Generate = %v, want nil", err)
	}
	r := h.f.ChatRequests()[0]
	if r.Model != "gpt-4o" || r.MaxTokens != 300 || r.Temperature == nil || *r.Temperature != 0 && *r.Temperature > 1e-6 {
		t.Errorf("model, max_tokens, temperature = %q, %d, %v, want gpt-4o, 300, ~0", r.Model, r.MaxTokens, r.Temperature)
	}
	roles := []string{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "user", "assistant", "tool", "tool", "user"}; !slices.Equal(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	user := r.Messages[1]
	if len(user.Parts) != 3 || user.Parts[0].Text != "what is this?" || user.Parts[1].ImageURL == nil || user.Parts[1].ImageURL.URL != "https://img.example/cat.png" || user.Parts[2].Type != "image_url" {
		t.Errorf("user parts = %+v, want text + 2 image_url parts", user.Parts)
	}
	asst := r.Messages[2]
	if len(asst.ToolCalls) != 2 || asst.ToolCalls[0].ID != "call_1" || asst.ToolCalls[0].Type != "function" || asst.ToolCalls[0].Function.Arguments != `{"url":"https://x"}` || asst.ToolCalls[1].Function.Arguments != "{}" {
		t.Errorf("assistant tool calls = %+v", asst.ToolCalls)
	}
	if r.Messages[3].ToolCallID != "call_1" || r.Messages[3].Content != "page text" || r.Messages[4].Content != emptyToolResult {
		t.Errorf("tool results = %+v, %+v", r.Messages[3], r.Messages[4])
	}
	if len(r.Tools) != 2 || string(r.Tools[0].Function.Parameters) != string(emptyParameters) || !strings.Contains(string(r.Tools[1].Function.Parameters), `"required":["url"]`) {
		t.Errorf("tools = %+v", r.Tools)
	}
}

func TestReasoningModelParameters(t *testing.T) {
	h := newHarness(t, nil)
	temp := float32(0.3)
	req := userReq("x")
	req.Model, req.MaxTokens, req.Temperature = "o3-mini", 100, &temp
	creq, err := h.p.chatRequest(req)
	if err != nil {
		t.Fatalf("chatRequest = %v", err)
	}
	if creq.MaxTokens != 0 || creq.MaxCompletionTokens != 100 || creq.Temperature != 0 {
		t.Errorf("max_tokens, max_completion_tokens, temperature = %d, %d, %v, want 0, 100, 0", creq.MaxTokens, creq.MaxCompletionTokens, creq.Temperature)
	}
}

func TestGenerateRejectsBadRequests(t *testing.T) {
	h := newHarness(t, nil)
	for name, req := range map[string]agent.Request{
		"no model":        {Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "x"}}},
		"no messages":     {Model: "m"},
		"unknown role":    {Model: "m", Messages: []echogate.Message{{Role: "robot", Content: "x"}}},
		"empty user":      {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleUser}}},
		"tool without id": {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleTool, Content: "x"}}},
		"call without id": {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{Name: "a"}}}}},
		"image no url":    {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "x", Images: []echogate.ImagePart{{}}}}},
		"image ftp":       {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "x", Images: []echogate.ImagePart{{URL: "ftp://x"}}}}},
		"bad schema":      {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "x"}}, Tools: []tools.Spec{{Name: "t", Parameters: json.RawMessage(`{bad`)}}},
		"bad tool name":   {Model: "m", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "x"}}, Tools: []tools.Spec{{Name: "a b"}}},
	} {
		resp, err := h.p.Generate(context.Background(), req, nil)
		if !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: Generate = %v, want ErrBadRequest", name, err)
		}
		if !resp.Usage.Failed || resp.Usage.Kind != echogate.UsageModel {
			t.Errorf("%s: usage = %+v, want failed model usage", name, resp.Usage)
		}
	}
	if n := len(h.f.ChatRequests()); n != 0 {
		t.Errorf("requests sent = %d, want 0", n)
	}
}

func TestGenerateRetriesBeforeFirstToken(t *testing.T) {
	for name, tt := range map[string]struct {
		first agenttest.Answer
		wait  time.Duration
	}{
		"429 with Retry-After":        {agenttest.RateLimited(2 * time.Second), 2 * time.Second},
		"500":                         {agenttest.StatusAnswer(500), 375 * time.Millisecond},
		"503":                         {agenttest.StatusAnswer(503), 375 * time.Millisecond},
		"429 without Retry-After":     {agenttest.StatusAnswer(429), 375 * time.Millisecond},
		"drop after headers":          {agenttest.Answer{Text: "lost", Drop: true}, 375 * time.Millisecond},
		"drop after the role chunk":   {agenttest.Answer{Text: "lost", Drop: true, DropAfter: 1}, 375 * time.Millisecond},
		"drop in tool call fragments": {agenttest.Answer{ToolCalls: []echogate.ToolCall{{Name: "t", Arguments: `{"a":1}`}}, Drop: true, DropAfter: 3}, 375 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.f.Enqueue(tt.first, agenttest.TextAnswer("recovered"))
			var texts []string
			resp, err := h.p.Generate(context.Background(), userReq("hi"), collect(&texts, nil))
			if err != nil {
				t.Fatalf("Generate = %v, want nil", err)
			}
			if resp.Message.Content != "recovered" || strings.Join(texts, "") != "recovered" {
				t.Errorf("content, deltas = %q, %q, want recovered", resp.Message.Content, texts)
			}
			if len(resp.Message.ToolCalls) != 0 {
				t.Errorf("tool calls = %+v, want none from the failed attempt", resp.Message.ToolCalls)
			}
			if n := len(h.f.ChatRequests()); n != 2 {
				t.Errorf("requests = %d, want 2", n)
			}
			if got := h.waits(); !slices.Equal(got, []time.Duration{tt.wait}) {
				t.Errorf("waits = %v, want [%s]", got, tt.wait)
			}
		})
	}
}

func TestGenerateGivesUpAfterMaxRetries(t *testing.T) {
	h := newHarness(t, nil)
	for range 4 {
		h.f.Enqueue(agenttest.StatusAnswer(502))
	}
	resp, err := h.p.Generate(context.Background(), userReq("hi"), nil)
	if !errors.Is(err, agent.ErrUnavailable) {
		t.Fatalf("Generate = %v, want ErrUnavailable", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 4 || e.Status != 502 {
		t.Errorf("error = %#v, want *Error with 4 attempts, status 502", err)
	}
	if !strings.Contains(err.Error(), "after 4 attempts") {
		t.Errorf("error = %q, want it to mention the attempts", err)
	}
	if got, want := h.waits(), []time.Duration{375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if !resp.Usage.Failed || resp.Usage.Model != "gpt-4o-mini" {
		t.Errorf("usage = %+v, want failed, model named", resp.Usage)
	}
}

func TestGenerateRateLimit(t *testing.T) {
	for name, tt := range map[string]struct {
		answers  []agenttest.Answer
		requests int
		after    time.Duration
		waits    []time.Duration
	}{
		"retries spent": {
			answers:  []agenttest.Answer{agenttest.RateLimited(time.Second), agenttest.RateLimited(time.Second)},
			requests: 2, after: time.Second, waits: []time.Duration{time.Second},
		},
		"wait too long to sit out": {
			answers:  []agenttest.Answer{agenttest.RateLimited(time.Minute)},
			requests: 1, after: time.Minute,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxRetries = len(tt.answers) - 1 })
			if len(tt.answers) == 1 {
				h.p.cfg.MaxRetries = 3
			}
			h.f.Enqueue(tt.answers...)
			_, err := h.p.Generate(context.Background(), userReq("hi"), nil)
			if !errors.Is(err, agent.ErrUnavailable) {
				t.Errorf("Generate = %v, want ErrUnavailable", err)
			}
			if after, ok := echogate.RetryAfter(err); !ok || after != tt.after {
				t.Errorf("RetryAfter(err) = %s, %v, want %s, true", after, ok, tt.after)
			}
			if n := len(h.f.ChatRequests()); n != tt.requests {
				t.Errorf("requests = %d, want %d", n, tt.requests)
			}
			if got := h.waits(); !slices.Equal(got, tt.waits) {
				t.Errorf("waits = %v, want %v", got, tt.waits)
			}
		})
	}
}

func TestGenerateNoRetryAfterFirstToken(t *testing.T) {
	h := newHarness(t, nil)
	// Chunks: role, "Hell", "o wo", then the connection drops.
	h.f.Enqueue(agenttest.Answer{Text: "Hello world, a long answer", Drop: true, DropAfter: 3}, agenttest.TextAnswer("never"))
	var texts []string
	resp, err := h.p.Generate(context.Background(), userReq("hi"), collect(&texts, nil))
	if !errors.Is(err, ErrStreamBroken) || errors.Is(err, agent.ErrUnavailable) {
		t.Fatalf("Generate = %v, want ErrStreamBroken and not ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "stream broke after 8 chars") {
		t.Errorf("error = %q, want it to say the stream broke after 8 chars", err)
	}
	if resp.Message.Content != "Hello wo" || !resp.Usage.Failed {
		t.Errorf("partial = %q, failed %v, want %q, true", resp.Message.Content, resp.Usage.Failed, "Hello wo")
	}
	if n := len(h.f.ChatRequests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestGenerateClientErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		answer      agenttest.Answer
		kind        error
		unavailable bool
		mention     string
	}{
		"401":            {agenttest.StatusAnswer(401), ErrAuth, false, "check OPENAI_API_KEY"},
		"403":            {agenttest.StatusAnswer(403), ErrAuth, false, "permissions"},
		"404":            {agenttest.StatusAnswer(404), ErrModelNotFound, false, `model "gpt-4o-mini" not found at http://127.0.0.1`},
		"400":            {agenttest.Answer{Status: 400, ErrorMessage: "Invalid 'tools[0]'"}, ErrBadRequest, false, "Invalid 'tools[0]'"},
		"context window": {agenttest.Answer{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "This model's maximum context length is 128000 tokens."}, ErrContextTooLong, false, "context window"},
		"quota":          {agenttest.Answer{Status: 429, ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"}, agent.ErrUnavailable, true, "billing"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.f.Enqueue(tt.answer, agenttest.TextAnswer("never"))
			resp, err := h.p.Generate(context.Background(), userReq("hi"), nil)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("Generate = %v, want %v", err, tt.kind)
			}
			if got := errors.Is(err, agent.ErrUnavailable); got != tt.unavailable {
				t.Errorf("errors.Is(%v, ErrUnavailable) = %v, want %v", err, got, tt.unavailable)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error = %q, want it to mention %q", err, tt.mention)
			}
			if n := len(h.f.ChatRequests()); n != 1 {
				t.Errorf("requests = %d, want 1 (no retry)", n)
			}
			if !resp.Usage.Failed || resp.Usage.Model != "gpt-4o-mini" {
				t.Errorf("usage = %+v, want failed with model", resp.Usage)
			}
		})
	}
}

func TestGenerateWrongKey(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.APIKey = "sk-wrong" })
	_, err := h.p.Generate(context.Background(), userReq("hi"), nil)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "check OPENAI_API_KEY") || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Errorf("Generate = %v, want ErrAuth naming OPENAI_API_KEY and the server's message", err)
	}
	if strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("error %q leaks the key", err)
	}
}

func TestGenerateDeltaErrorAborts(t *testing.T) {
	h := newHarness(t, nil)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	// The server holds the stream after 4 chunks: Generate must return without waiting for it.
	h.f.Enqueue(agenttest.Answer{Text: "one two three four five", Hold: hold, HoldAfter: 4})
	errStop := errors.New("stop requested")
	calls := 0
	_, err := h.generate(t, context.Background(), userReq("hi"), func(agent.Delta) error {
		calls++
		if calls == 2 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Generate = %v, want errStop wrapped", err)
	}
	if calls != 2 {
		t.Errorf("onDelta calls = %d, want 2", calls)
	}
	if n := len(h.f.ChatRequests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestGenerateCancelEndsPromptly(t *testing.T) {
	h := newHarness(t, nil)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	h.f.Enqueue(agenttest.Answer{Text: "first and then nothing", Hold: hold, HoldAfter: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := h.p.Generate(ctx, userReq("hi"), func(agent.Delta) error {
			select {
			case <-first:
			default:
				close(first)
			}
			return nil
		})
		done <- err
	}()
	within(t, "the first fragment", first)
	cancel()
	// Only the idle timeout could end the held stream otherwise, and the harness's never fires.
	if err := within(t, "Generate to return after ctx was cancelled", done); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate = %v, want context.Canceled", err)
	}
}

// TestGenerateIdleTimeoutRetries: an endpoint that accepts the request and then stays silent is
// cut off by the idle timeout, and the attempt is retried.
func TestGenerateIdleTimeoutRetries(t *testing.T) {
	h := newHarness(t, nil)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	gotFirst := make(chan struct{})
	h.f.Respond(func(r agenttest.ChatRequest) (agenttest.Answer, bool) {
		if r.Seq == 1 {
			close(gotFirst)
			return agenttest.Answer{Text: "stalled", Hold: hold}, true
		}
		return agenttest.TextAnswer("fine"), true
	})
	type result struct {
		resp agent.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := h.p.Generate(context.Background(), userReq("hi"), nil)
		done <- result{resp, err}
	}()
	first := within(t, "the first attempt's idle timer", h.timers.made)
	// Fire only once the server holds the request, so the timeout is the attempt's only way out
	// (firing earlier would let the retry reach the server first and be held instead).
	within(t, "the first request at the server", gotFirst)
	if !first.fire() {
		t.Fatal("the first attempt's idle timer was stopped while it waited for the endpoint, want it running")
	}
	r := within(t, "Generate to return after the idle timeout", done)
	if r.err != nil || r.resp.Message.Content != "fine" {
		t.Fatalf("Generate = %q, %v, want fine, nil", r.resp.Message.Content, r.err)
	}
	if n := len(h.f.ChatRequests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
	if got := h.waits(); len(got) != 1 {
		t.Errorf("backoff waits = %v, want one before the retry", got)
	}
}

// TestGenerateIdleClockPausedInCallback: time spent in the caller's onDelta is not the
// endpoint's silence. The test runs out the attempt's idle clock inside every callback: had the
// clock been running there, the attempt would be cancelled.
func TestGenerateIdleClockPausedInCallback(t *testing.T) {
	h := newHarness(t, nil)
	h.f.Enqueue(agenttest.Answer{Text: "a slowly consumed answer", FragmentSize: 4})
	var timer *fakeTimer
	var fired, calls int
	resp, err := h.generate(t, context.Background(), userReq("hi"), func(agent.Delta) error {
		calls++
		if timer == nil {
			select {
			case timer = <-h.timers.made: // made before the request was sent
			default:
				return errors.New("no idle timer was made before the first fragment")
			}
		}
		if timer.fire() {
			fired++
		}
		return nil
	})
	if err != nil || resp.Message.Content != "a slowly consumed answer" {
		t.Fatalf("Generate = %q, %v, want the whole answer", resp.Message.Content, err)
	}
	if fired != 0 || calls == 0 {
		t.Errorf("idle timer fired in %d of %d callbacks, want 0 (paused while the caller works)", fired, calls)
	}
}

func TestGenerateIdleTimeoutError(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
	h.p.newTimer = func(d time.Duration, f func()) timer {
		f() // fires at once
		return &fakeTimer{}
	}
	_, err := h.generate(t, context.Background(), userReq("hi"), nil)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, agent.ErrUnavailable) {
		t.Errorf("Generate = %v, want ErrTimeout and ErrUnavailable", err)
	}
}

// TestGenerateIdleTimeoutRealClock runs the real timer against an endpoint that never answers.
// Wherever the timeout strikes (before the request reached the server or after), the outcome
// is the same, so the machine's speed does not matter: the test only needs the timer to fire.
func TestGenerateIdleTimeoutRealClock(t *testing.T) {
	f := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: testKey})
	t.Cleanup(f.Close)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f.Respond(func(agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.Answer{Text: "never sent", Hold: hold}, true
	})
	p, err := New(Config{BaseURL: f.URL(), APIKey: testKey, Timeout: 20 * time.Millisecond, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp agent.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := p.Generate(context.Background(), userReq("hi"), nil)
		done <- result{resp, err}
	}()
	r := within(t, "Generate to time out", done)
	if !errors.Is(r.err, ErrTimeout) || !errors.Is(r.err, agent.ErrUnavailable) || !strings.Contains(r.err.Error(), "no data for 20ms") {
		t.Errorf("Generate = %v, want ErrTimeout and ErrUnavailable saying no data for 20ms", r.err)
	}
	if r.resp.Message.Content != "" || !r.resp.Usage.Failed {
		t.Errorf("response = %q, failed %v, want nothing delivered, failed", r.resp.Message.Content, r.resp.Usage.Failed)
	}
}

// TestGenerateOddStreams covers servers that end a stream early or report errors inside it.
func TestGenerateOddStreams(t *testing.T) {
	for name, tt := range map[string]struct {
		body string
		kind error
		hint string
	}{
		"no finish reason": {
			body: `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}` + "\n\n",
			kind: agent.ErrUnavailable, hint: "closed before the answer was complete",
		},
		"error event": {
			body: `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n",
			kind: agent.ErrUnavailable, hint: "overloaded",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			p, err := New(Config{BaseURL: srv.URL + "/v1", MaxRetries: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.sleep = func(ctx context.Context, d time.Duration) error { return nil }
			p.newTimer = newFakeTimers().newTimer
			_, err = p.Generate(context.Background(), userReq("hi"), nil)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.hint) {
				t.Errorf("Generate = %v, want %v mentioning %q", err, tt.kind, tt.hint)
			}
			mu.Lock()
			defer mu.Unlock()
			if n != 2 {
				t.Errorf("requests = %d, want 2 (one retry)", n)
			}
		})
	}
}

// refusingDialer fails every dial the way a port with no listener does. A real closed port
// is no good in a test: while packages run in parallel, another test's server may take it.
func refusingDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func TestGenerateUnreachable(t *testing.T) {
	var dials atomic.Int32
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return refusingDialer(ctx, network, addr)
	}}}
	p, err := New(Config{BaseURL: "http://127.0.0.1:9/v1", MaxRetries: 2, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sleeps := 0
	p.sleep = func(ctx context.Context, d time.Duration) error { sleeps++; return nil }
	p.newTimer = newFakeTimers().newTimer
	_, err = p.Generate(context.Background(), userReq("hi"), nil)
	if !errors.Is(err, agent.ErrUnavailable) || !strings.Contains(err.Error(), "check OPENAI_BASE_URL") {
		t.Errorf("Generate = %v, want ErrUnavailable naming OPENAI_BASE_URL", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Generate = %v, want the connection refusal in the chain", err)
	}
	if sleeps != 2 || dials.Load() != 3 {
		t.Errorf("retries, dials = %d, %d, want 2, 3", sleeps, dials.Load())
	}
}

func TestEmbed(t *testing.T) {
	h := newHarness(t, nil)
	texts := make([]string, 600)
	for i := range texts {
		texts[i] = fmt.Sprintf("document number %d about cats", i)
	}
	h.f.EnqueueEmbedding(agenttest.StatusAnswer(503)) // the first batch is retried
	vecs, usage, err := h.p.Embed(context.Background(), "text-embedding-3-small", 64, texts)
	if err != nil {
		t.Fatalf("Embed = %v, want nil", err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("vectors = %d, want %d", len(vecs), len(texts))
	}
	for _, i := range []int{0, 255, 256, 599} {
		if want := agenttest.HashEmbedding(texts[i], 64); !slices.Equal(vecs[i], want) {
			t.Errorf("vector %d differs from the fake's embedding of its text", i)
		}
	}
	var sizes []int
	var tokens int64
	for _, r := range h.f.EmbeddingRequests() {
		sizes = append(sizes, len(r.Input))
		if r.Dimensions != 64 || r.Model != "text-embedding-3-small" {
			t.Errorf("request dims, model = %d, %q, want 64, text-embedding-3-small", r.Dimensions, r.Model)
		}
	}
	for _, s := range texts {
		tokens += agenttest.EstimateTokens(s)
	}
	if want := []int{256, 256, 256, 88}; !slices.Equal(sizes, want) {
		t.Errorf("batch sizes = %v, want %v (first batch twice: retried)", sizes, want)
	}
	if usage.Kind != echogate.UsageEmbedding || usage.Model != "text-embedding-3-small" || usage.InputTokens != tokens || usage.Failed {
		t.Errorf("usage = %+v, want embedding usage of %d tokens", usage, tokens)
	}
}

func TestEmbedErrors(t *testing.T) {
	h := newHarness(t, nil)
	for name, tt := range map[string]struct {
		model string
		dims  int
		texts []string
		kind  error
	}{
		"no model":   {"", 0, []string{"a"}, ErrBadRequest},
		"empty text": {"m", 0, []string{"a", ""}, ErrBadRequest},
		"neg dims":   {"m", -1, []string{"a"}, ErrBadRequest},
	} {
		_, usage, err := h.p.Embed(context.Background(), tt.model, tt.dims, tt.texts)
		if !errors.Is(err, tt.kind) || !usage.Failed {
			t.Errorf("%s: Embed = %v (failed %v), want %v", name, err, usage.Failed, tt.kind)
		}
	}
	h.f.EnqueueEmbedding(agenttest.StatusAnswer(404))
	if _, _, err := h.p.Embed(context.Background(), "nope", 0, []string{"a"}); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("Embed(404) = %v, want ErrModelNotFound", err)
	}
	vecs, usage, err := h.p.Embed(context.Background(), "m", 0, nil)
	if err != nil || len(vecs) != 0 || usage.Failed {
		t.Errorf("Embed(nothing) = %d, %+v, %v, want no vectors and no error", len(vecs), usage, err)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg     Config
		mention string
	}{
		"openai without key": {Config{}, "OPENAI_API_KEY is empty"},
		"bad url":            {Config{BaseURL: "localhost:11434"}, "OPENAI_BASE_URL"},
		"credentials in url": {Config{BaseURL: "https://u:p@x/v1"}, "must not carry credentials"},
		"key with newline":   {Config{APIKey: "sk-x\n"}, "whitespace"},
		"negative timeout":   {Config{APIKey: "k", Timeout: -1}, "negative"},
		"huge batch":         {Config{APIKey: "k", EmbeddingBatch: 5000}, "embedding batch"},
	} {
		if _, err := New(tt.cfg, nil); err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s: New = %v, want an error mentioning %q", name, err, tt.mention)
		}
	}
	p, err := New(Config{BaseURL: "http://127.0.0.1:11434/v1/"}, nil)
	if err != nil {
		t.Fatalf("New(local, no key) = %v, want nil", err)
	}
	if p.BaseURL() != "http://127.0.0.1:11434/v1" || p.cfg.MaxRetries != 3 || p.cfg.RetryBaseDelay != 500*time.Millisecond || p.cfg.Timeout != time.Minute {
		t.Errorf("defaults = %+v", p.cfg)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tt := range map[string]struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		"seconds":   {http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		"ms wins":   {http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond, true},
		"http date": {http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second, true},
		"past date": {http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		"garbage":   {http.Header{"Retry-After": {"soon"}}, 0, false},
		"absent":    {http.Header{}, 0, false},
	} {
		got, ok := parseRetryAfter(tt.h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: parseRetryAfter = %s, %v, want %s, %v", name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestGenerateConcurrent(t *testing.T) {
	h := newHarness(t, nil)
	h.f.Respond(func(r agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.TextAnswer("echo: " + r.LastUser()), true
	})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("message %d", i)
			resp, err := h.p.Generate(context.Background(), userReq(text), nil)
			if err == nil && resp.Message.Content != "echo: "+text {
				err = fmt.Errorf("content = %q, want %q", resp.Message.Content, "echo: "+text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkGenerate500Tokens(b *testing.B) {
	h := newHarness(b, nil)
	answer := strings.Repeat("word ", 400) // 2000 bytes ≈ 500 tokens, 500 chunks of 4
	h.f.Respond(func(agenttest.ChatRequest) (agenttest.Answer, bool) { return agenttest.TextAnswer(answer), true })
	req := userReq("write a lot")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := h.p.Generate(context.Background(), req, func(agent.Delta) error { return nil })
		if err != nil || len(resp.Message.Content) != len(answer) {
			b.Fatalf("Generate = %d chars, %v", len(resp.Message.Content), err)
		}
	}
}

// BenchmarkGenerateShortAnswer is a chat turn as the real-path benchmark makes it: a
// conversation of about 5 KB, a short answer in a dozen chunks.
func BenchmarkGenerateShortAnswer(b *testing.B) {
	h := newHarness(b, nil)
	h.f.Respond(func(agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.TextAnswer("Hello! This is the benchmark model's short answer."), true
	})
	req := userReq("the latest message")
	for i := range 40 {
		role := echogate.RoleUser
		if i%2 == 1 {
			role = echogate.RoleAssistant
		}
		req.Messages = append([]echogate.Message{{Role: role, Content: fmt.Sprintf("message %d of the conversation so far, %s", i, strings.Repeat("words ", 15))}}, req.Messages...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.p.Generate(context.Background(), req, func(agent.Delta) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
