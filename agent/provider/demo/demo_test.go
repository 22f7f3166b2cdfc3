package demo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

var catalogue = []tools.Spec{
	{Name: "current_time", Description: "time", Parameters: json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string"}}}`), Safety: tools.Safe},
	{Name: "http_fetch", Description: "fetch", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`), Safety: tools.Safe},
	{Name: "schedule", Description: "schedule", Parameters: json.RawMessage(`{"type":"object","properties":{"action":{"type":"string"}}}`), Safety: tools.Sensitive},
}

func newModel(t *testing.T) *Model {
	t.Helper()
	m, err := New(Config{FragmentDelay: -1}, nil)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return m
}

func generate(t *testing.T, m *Model, req agent.Request) (agent.Response, string) {
	t.Helper()
	var deltas strings.Builder
	n := 0
	resp, err := m.Generate(context.Background(), req, func(d agent.Delta) error {
		deltas.WriteString(d.Text)
		n++
		return nil
	})
	if err != nil {
		t.Fatalf("Generate = %v, want nil", err)
	}
	if deltas.String() != resp.Message.Content {
		t.Errorf("deltas %q != content %q", deltas.String(), resp.Message.Content)
	}
	if resp.Message.Content != "" && n < 2 {
		t.Errorf("streamed %d fragments, want several", n)
	}
	if ms := req.Messages; len(ms) < 2 || ms[len(ms)-1].Role != echogate.RoleTool || !strings.Contains(ms[len(ms)-2].Content, Label) {
		if !strings.HasPrefix(resp.Message.Content, Label) {
			t.Errorf("reply %q does not start with the label", resp.Message.Content)
		}
	}
	if resp.Model != ModelName || resp.Usage.Model != ModelName || resp.Usage.Kind != echogate.UsageModel || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
		t.Errorf("model, usage = %q, %+v, want demo with tokens", resp.Model, resp.Usage)
	}
	return resp, deltas.String()
}

func TestToolCallThenAnswer(t *testing.T) {
	for name, tt := range map[string]struct {
		text, tool, args, result, answer string
	}{
		"time":      {"What time is it in Europe/Berlin?", "current_time", `{"timezone":"Europe/Berlin"}`, "2025-03-01T10:00:00+01:00", "it is 2025-03-01T10:00:00+01:00"},
		"time, utc": {"what's the time?", "current_time", `{}`, "12:00 UTC", "it is 12:00 UTC"},
		"fetch":     {"fetch https://example.com/page", "http_fetch", `{"url":"https://example.com/page"}`, "Example Domain\nThis domain is for use in examples.", "> Example Domain This domain"},
		// The README's way to see an approval in demo mode: a recurring job needs one.
		"daily reminder": {ApprovalPhrase + " check the deploys.", "schedule", `{"action":"create","cron":"0 9 * * *","prompt":"Remind me to check the deploys.","timezone":"UTC"}`,
			"Created job j1 (every day at 09:00 UTC).", "The schedule tool answered: Created job j1"},
		"daily reminder denied": {"Remind me every day to stretch", "schedule", `{"action":"create","cron":"0 9 * * *","prompt":"Remind me to stretch.","timezone":"UTC"}`,
			"not approved: ann denied it", "I did not run the schedule tool: ann denied it."},
	} {
		t.Run(name, func(t *testing.T) {
			m := newModel(t)
			msgs := []echogate.Message{{Role: echogate.RoleSystem, Content: "sys"}, {Role: echogate.RoleUser, Content: tt.text}}
			resp, _ := generate(t, m, agent.Request{Model: "gpt-4o-mini", Messages: msgs, Tools: catalogue})
			if len(resp.Message.ToolCalls) != 1 || resp.FinishReason != "tool_calls" {
				t.Fatalf("first reply = %+v (%s), want one tool call", resp.Message, resp.FinishReason)
			}
			call := resp.Message.ToolCalls[0]
			if call.Name != tt.tool || call.Arguments != tt.args || call.ID == "" {
				t.Errorf("call = %+v, want %s %s", call, tt.tool, tt.args)
			}
			msgs = append(msgs, resp.Message, echogate.Message{Role: echogate.RoleTool, ToolCallID: call.ID, Content: tt.result})
			resp, _ = generate(t, m, agent.Request{Model: "gpt-4o-mini", Messages: msgs, Tools: catalogue})
			if len(resp.Message.ToolCalls) != 0 || resp.FinishReason != "stop" {
				t.Errorf("second reply calls %+v (%s), want a plain answer", resp.Message.ToolCalls, resp.FinishReason)
			}
			if !strings.Contains(resp.Message.Content, tt.answer) {
				t.Errorf("answer = %q, want it to contain %q", resp.Message.Content, tt.answer)
			}
		})
	}
}

func TestToolErrorAnswer(t *testing.T) {
	m := newModel(t)
	msgs := []echogate.Message{
		{Role: echogate.RoleUser, Content: "fetch http://10.0.0.1/"},
		{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "c1", Name: "http_fetch", Arguments: `{}`}}},
		{Role: echogate.RoleTool, ToolCallID: "c1", Content: "private address refused", IsError: true},
	}
	resp, _ := generate(t, m, agent.Request{Messages: msgs, Tools: catalogue})
	if !strings.Contains(resp.Message.Content, "The http_fetch tool failed: private address refused") {
		t.Errorf("answer = %q, want the failure reported", resp.Message.Content)
	}
}

func TestEcho(t *testing.T) {
	for name, tt := range map[string]struct {
		req  agent.Request
		want []string
	}{
		"plain": {
			agent.Request{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hello there"}}, Tools: catalogue},
			[]string{"You said: “hello there”", "1 message (1 from you)", "3 tools: current_time, http_fetch, schedule", "“remind me every day to check the deploys” to see an approval prompt"},
		},
		"time without the tool": {
			agent.Request{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "what time is it?"}}},
			[]string{"You said: “what time is it?”", "no tools"},
		},
		"history and image": {
			agent.Request{Messages: []echogate.Message{
				{Role: echogate.RoleSystem, Content: "be nice"},
				{Role: echogate.RoleUser, Content: "one"},
				{Role: echogate.RoleAssistant, Content: "ok"},
				{Role: echogate.RoleUser, Content: "two", Images: []echogate.ImagePart{{URL: "https://x/y.png"}}},
			}},
			[]string{"“two”", "4 messages (2 from you, 1 image)", "system prompt of 7 characters"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			resp, _ := generate(t, newModel(t), tt.req)
			if len(resp.Message.ToolCalls) != 0 {
				t.Errorf("calls = %+v, want none", resp.Message.ToolCalls)
			}
			for _, w := range tt.want {
				if !strings.Contains(resp.Message.Content, w) {
					t.Errorf("reply = %q, want it to contain %q", resp.Message.Content, w)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	m := newModel(t)
	req := agent.Request{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "what time is it"}}, Tools: catalogue}
	a, _ := generate(t, m, req)
	b, _ := generate(t, m, req)
	if a.Message.Content != b.Message.Content || a.Message.ToolCalls[0] != b.Message.ToolCalls[0] {
		t.Errorf("replies differ: %+v vs %+v", a.Message, b.Message)
	}
}

func TestDeltaErrorAndCancel(t *testing.T) {
	m := newModel(t)
	req := agent.Request{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hi"}}}
	errStop := errors.New("stop")
	resp, err := m.Generate(context.Background(), req, func(agent.Delta) error { return errStop })
	if !errors.Is(err, errStop) || !resp.Usage.Failed {
		t.Errorf("Generate = %v (failed %v), want errStop, failed usage", err, resp.Usage.Failed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, req, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate(cancelled) = %v, want context.Canceled", err)
	}
}

func TestFragmentDelayUsesTimer(t *testing.T) {
	m, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	m.wait = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return nil
	}
	resp, err := m.Generate(context.Background(), agent.Request{Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	frags := len(fragments(resp.Message.Content, 6))
	if len(waits) != frags-1 || waits[0] != 15*time.Millisecond {
		t.Errorf("waits = %d of %v, want %d of 15ms", len(waits), waits[0], frags-1)
	}
}

func TestEmbed(t *testing.T) {
	m := newModel(t)
	vecs, usage, err := m.Embed(context.Background(), "x", 32, []string{"cats purr", "cats purr loudly", "tax law"})
	if err != nil || len(vecs) != 3 || len(vecs[0]) != 32 {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if near, far := dot(vecs[0], vecs[1]), dot(vecs[0], vecs[2]); near <= far {
		t.Errorf("similarity(cats, cats loudly) = %v, similarity(cats, tax) = %v, want the first larger", near, far)
	}
	if usage.Kind != echogate.UsageEmbedding || usage.InputTokens == 0 {
		t.Errorf("usage = %+v", usage)
	}
	if _, _, err := m.Embed(context.Background(), "x", -1, []string{"a"}); err == nil {
		t.Error("Embed(dims -1) = nil, want an error")
	}
}

// TestToolTurnReadsAsOneReply: the two calls of a tool turn stream into one reply, which carries
// the label once and renders the tool's JSON as text.
func TestToolTurnReadsAsOneReply(t *testing.T) {
	m := newModel(t)
	msgs := []echogate.Message{{Role: echogate.RoleUser, Content: "what time is it?"}}
	first, _ := generate(t, m, agent.Request{Messages: msgs, Tools: catalogue})
	if len(first.Message.ToolCalls) != 1 {
		t.Fatalf("first reply = %+v, want one tool call", first.Message)
	}
	result := `{"time":"2026-12-01T23:18:17Z","weekday":"Tuesday","timezone":"UTC","abbreviation":"UTC","utc_offset":"+00:00","unix":1796167097}`
	msgs = append(msgs, first.Message, echogate.Message{Role: echogate.RoleTool, ToolCallID: first.Message.ToolCalls[0].ID, Content: result})
	second, _ := generate(t, m, agent.Request{Messages: msgs, Tools: catalogue})
	reply := first.Message.Content + second.Message.Content
	if n := strings.Count(reply, Label); n != 1 {
		t.Errorf("reply carries the label %d times, want once:\n%s", n, reply)
	}
	if want := "it is Tuesday, 1 December 2026, 23:18 UTC."; !strings.Contains(second.Message.Content, want) {
		t.Errorf("answer = %q, want it to contain %q", second.Message.Content, want)
	}
	if strings.Contains(second.Message.Content, "{") {
		t.Errorf("answer = %q, want no raw JSON", second.Message.Content)
	}
}

func TestReadableJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":2,"a":"x"}`: "a: x; b: 2",
		`not json`:        "not json",
		`[1,2]`:           "[1,2]",
		`{}`:              "{}",
	} {
		if got := readableJSON(in); got != want {
			t.Errorf("readableJSON(%s) = %q, want %q", in, got, want)
		}
	}
}
