package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

func TestScriptedModelPlaysScript(t *testing.T) {
	m := NewScriptedModel(
		Step{Text: "Let me look.", ToolCalls: []echogate.ToolCall{{Name: "current_time", Arguments: "{}"}}, FragmentSize: 5},
		Reply("It is noon."),
	)
	var deltas []string
	onDelta := func(d agent.Delta) error { deltas = append(deltas, d.Text); return nil }
	req := agent.Request{Model: "m1", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "time?"}}}
	r1, err := m.Generate(context.Background(), req, onDelta)
	if err != nil {
		t.Fatalf("Generate 1 = %v", err)
	}
	if want := []string{"Let m", "e loo", "k."}; !slices.Equal(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if r1.FinishReason != "tool_calls" || len(r1.Message.ToolCalls) != 1 || r1.Message.ToolCalls[0].ID != "call_1_0" {
		t.Errorf("response 1 = %+v, want one call with id call_1_0", r1)
	}
	if r1.Usage.Kind != echogate.UsageModel || r1.Usage.Model != "m1" || r1.Usage.InputTokens == 0 || r1.Usage.OutputTokens == 0 {
		t.Errorf("usage 1 = %+v, want estimated model usage", r1.Usage)
	}
	req.Messages = append(req.Messages, r1.Message)
	req.Messages[0].Content = "mutated after the call"
	r2, err := m.Generate(context.Background(), req, nil)
	if err != nil || r2.Message.Content != "It is noon." || r2.FinishReason != "stop" {
		t.Errorf("Generate 2 = %+v, %v, want It is noon.", r2, err)
	}
	_, err = m.Generate(context.Background(), req, nil)
	if !errors.Is(err, ErrScriptExhausted) || !strings.Contains(err.Error(), "call 3") {
		t.Errorf("Generate 3 = %v, want ErrScriptExhausted naming call 3", err)
	}
	reqs := m.Requests()
	if len(reqs) != 3 || m.Calls() != 3 || m.Remaining() != 0 {
		t.Fatalf("requests, calls, remaining = %d, %d, %d, want 3, 3, 0", len(reqs), m.Calls(), m.Remaining())
	}
	if reqs[0].Messages[0].Content != "time?" || len(reqs[0].Messages) != 1 {
		t.Errorf("recorded request 1 = %+v, want the original copy", reqs[0].Messages)
	}
}

func TestScriptedModelErrors(t *testing.T) {
	boom := errors.New("boom")
	errCheck := errors.New("bad request")
	m := NewScriptedModel(
		Step{Text: "partial answer", Err: boom, Usage: echogate.Usage{InputTokens: 10, OutputTokens: 2}},
		Step{Expect: func(agent.Request) error { return errCheck }},
		Reply("never delivered"),
	)
	resp, err := m.Generate(context.Background(), agent.Request{Model: "m"}, nil)
	if !errors.Is(err, boom) || resp.Message.Content != "partial answer" || !resp.Usage.Failed || resp.Usage.InputTokens != 10 || resp.Usage.Model != "m" {
		t.Errorf("Generate 1 = %+v, %v, want partial text, failed usage, boom", resp, err)
	}
	if _, err := m.Generate(context.Background(), agent.Request{}, nil); !errors.Is(err, errCheck) {
		t.Errorf("Generate 2 = %v, want the Expect error", err)
	}
	errStop := errors.New("stop")
	if _, err := m.Generate(context.Background(), agent.Request{}, func(agent.Delta) error { return errStop }); !errors.Is(err, errStop) {
		t.Errorf("Generate 3 = %v, want the callback error", err)
	}
}

func TestScriptedModelGate(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{})
	m := NewScriptedModel(Step{Text: "abcdefgh", FragmentSize: 2, Gate: gate, GateAfter: 2, Entered: entered})
	got := make(chan []string, 1)
	var mu sync.Mutex
	var deltas []string
	go func() {
		_, _ = m.Generate(context.Background(), agent.Request{}, func(d agent.Delta) error {
			mu.Lock()
			deltas = append(deltas, d.Text)
			mu.Unlock()
			return nil
		})
		mu.Lock()
		got <- slices.Clone(deltas)
		mu.Unlock()
	}()
	<-entered
	close(gate)
	if d := <-got; !slices.Equal(d, []string{"ab", "cd", "ef", "gh"}) {
		t.Errorf("deltas = %q, want all four fragments after the gate opened", d)
	}

	// A closed ctx ends a gate wait.
	m = NewScriptedModel(Step{Text: "x", Gate: make(chan struct{})})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, agent.Request{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate(cancelled, gated) = %v, want context.Canceled", err)
	}
}

func TestScriptedModelConcurrentDefault(t *testing.T) {
	m := NewScriptedModel()
	m.SetDefault(Reply("same"))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if resp, err := m.Generate(context.Background(), agent.Request{Tools: []tools.Spec{{Name: "t"}}}, nil); err != nil || resp.Message.Content != "same" {
				t.Errorf("Generate = %q, %v, want same", resp.Message.Content, err)
			}
		})
	}
	wg.Wait()
	if m.Calls() != 20 {
		t.Errorf("calls = %d, want 20", m.Calls())
	}
}

// postChat sends a raw chat request and returns the response.
func postChat(t *testing.T, f *FakeOpenAI, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(f.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readEvents returns the data payloads of an SSE body.
func readEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE line %q is not a data line", line)
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading SSE: %v", err)
	}
	return out
}

func TestFakeOpenAIStreamWireFormat(t *testing.T) {
	f := NewFakeOpenAI(FakeOpenAIOptions{})
	defer f.Close()
	f.Enqueue(Answer{
		Text: "Hi!", FragmentSize: 2, ArgFragmentSize: 4, PromptTokens: 9, CompletionTokens: 3, CachedTokens: 2,
		ToolCalls: []echogate.ToolCall{{ID: "a", Name: "one", Arguments: `{"x":12345}`}, {ID: "b", Name: "two", Arguments: `{"y":1}`}},
	})
	resp := postChat(t, f, `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status, content type = %d, %q, want 200, text/event-stream", resp.StatusCode, ct)
	}
	events := readEvents(t, resp.Body)
	if events[len(events)-1] != "[DONE]" {
		t.Errorf("last event = %q, want [DONE]", events[len(events)-1])
	}
	type delta struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []WireToolCall `json:"tool_calls"`
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta        delta   `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	var content strings.Builder
	var order []string // tool-call fragment order as "index:args"
	args := map[int]string{}
	var finish string
	var usageSeen bool
	for i, ev := range events[:len(events)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d %q: %v", i, ev, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("event %d object = %q", i, c.Object)
		}
		if c.Usage != nil {
			usageSeen = true
			if len(c.Choices) != 0 || c.Usage.PromptTokens != 9 || c.Usage.CompletionTokens != 3 || c.Usage.PromptTokensDetails.CachedTokens != 2 {
				t.Errorf("usage chunk = %s", ev)
			}
			continue
		}
		if i == 0 && c.Choices[0].Delta.Role != "assistant" {
			t.Errorf("first chunk = %s, want the assistant role", ev)
		}
		d := c.Choices[0].Delta
		if d.Content != nil {
			content.WriteString(*d.Content)
		}
		for _, tc := range d.ToolCalls {
			if tc.Index == nil {
				t.Fatalf("tool fragment without index: %s", ev)
			}
			if tc.ID != "" && (tc.Function.Name == "" || tc.Function.Arguments != "") {
				t.Errorf("first fragment %s: want id, name and empty arguments", ev)
			}
			args[*tc.Index] += tc.Function.Arguments
			order = append(order, fmt.Sprintf("%d:%s", *tc.Index, tc.Function.Arguments))
		}
		if fr := c.Choices[0].FinishReason; fr != nil {
			finish = *fr
		}
	}
	if content.String() != "Hi!" || finish != "tool_calls" || !usageSeen {
		t.Errorf("content, finish, usage = %q, %q, %v", content.String(), finish, usageSeen)
	}
	if args[0] != `{"x":12345}` || args[1] != `{"y":1}` {
		t.Errorf("assembled args = %v", args)
	}
	wantOrder := []string{"0:", "1:", `0:{"x"`, `1:{"y"`, `0::123`, `1::1}`, `0:45}`}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("fragment order = %q, want interleaved %q", order, wantOrder)
	}
}

func TestFakeOpenAINonStreamAndValidation(t *testing.T) {
	f := NewFakeOpenAI(FakeOpenAIOptions{Models: []string{"gpt-4o-mini"}})
	defer f.Close()
	f.Respond(func(r ChatRequest) (Answer, bool) {
		if r.Last().Role == "tool" {
			return TextAnswer("done with " + r.Last().Content), true
		}
		return Answer{}, false
	})
	for name, tt := range map[string]struct {
		body    string
		status  int
		mention string
	}{
		"tool result answered": {`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}]}`, 200, `"content":"done with 42"`},
		"orphan tool message":  {`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"42"}]}`, 400, "must be a response to a preceeding message"},
		"unanswered call":      {`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"user","content":"y"}]}`, 400, "did not have response messages: c1"},
		"no model":             {`{"messages":[{"role":"user","content":"x"}]}`, 400, "must provide a model"},
		"unknown model":        {`{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found"},
		"bad tool schema":      {`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"t","parameters":{"type":"string"}}}]}`, 400, "Invalid schema"},
		"nothing scripted":     {`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`, 400, "no answer scripted"},
		"stream_options alone": {`{"model":"gpt-4o-mini","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, 400, "only allowed when 'stream' is enabled"},
	} {
		resp := postChat(t, f, tt.body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.status || !bytes.Contains(b, []byte(tt.mention)) {
			t.Errorf("%s: POST = %d %s, want %d mentioning %q", name, resp.StatusCode, b, tt.status, tt.mention)
		}
	}
}

func TestFakeOpenAIAuthAndErrors(t *testing.T) {
	f := NewFakeOpenAI(FakeOpenAIOptions{APIKey: "k"})
	defer f.Close()
	resp := postChat(t, f, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 401 {
		t.Errorf("POST without key = %d, want 401", resp.StatusCode)
	}
	f.Enqueue(RateLimited(1500 * time.Millisecond))
	req, _ := http.NewRequest(http.MethodPost, f.URL()+"/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || resp.Header.Get("Retry-After-Ms") != "1500" {
		t.Errorf("429 = %d, Retry-After %q, -Ms %q, want 429, 2, 1500", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"))
	}
	if n := len(f.ChatRequests()); n != 1 {
		t.Errorf("recorded = %d, want 1 (the unauthorised request is not decoded)", n)
	}
}

func TestFakeOpenAIDrop(t *testing.T) {
	f := NewFakeOpenAI(FakeOpenAIOptions{})
	defer f.Close()
	f.Enqueue(Answer{Text: "abcdefgh", FragmentSize: 1, Drop: true, DropAfter: 3})
	resp := postChat(t, f, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a dropped stream = %v, want io.ErrUnexpectedEOF", err)
	}
	if n := strings.Count(string(b), "data: "); n != 3 {
		t.Errorf("events before the drop = %d, want 3", n)
	}
}

func TestFakeOpenAIEmbeddings(t *testing.T) {
	f := NewFakeOpenAI(FakeOpenAIOptions{EmbeddingDims: 16})
	defer f.Close()
	post := func(body string) (int, []byte) {
		resp, err := http.Post(f.URL()+"/embeddings", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	status, b := post(`{"model":"e","input":["a cat","a dog"],"dimensions":8}`)
	var list struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &list); status != 200 || err != nil {
		t.Fatalf("embeddings = %d %s (%v)", status, b, err)
	}
	if len(list.Data) != 2 || !slices.Equal(list.Data[1].Embedding, HashEmbedding("a dog", 8)) || list.Usage.PromptTokens != 4 {
		t.Errorf("embeddings = %+v", list)
	}
	if status, b := post(`{"model":"e","input":"one"}`); status != 200 || strings.Count(string(b), ",")+1 < 16 {
		t.Errorf("single input, default dims = %d %s", status, b)
	}
	if status, b := post(`{"model":"e","input":["ok",""]}`); status != 400 || !bytes.Contains(b, []byte("input[1]")) {
		t.Errorf("empty input = %d %s, want 400 naming input[1]", status, b)
	}
	if got := f.EmbeddingRequests(); len(got) != 3 || got[0].Dimensions != 8 || !slices.Equal(got[0].Input, []string{"a cat", "a dog"}) {
		t.Errorf("recorded = %+v", got)
	}
}

func TestFragments(t *testing.T) {
	for _, tt := range []struct {
		s    string
		size int
		want []string
	}{
		{"", 4, nil},
		{"abcdef", 4, []string{"abcd", "ef"}},
		{"ünï", 2, []string{"ün", "ï"}},
		{"abc", 0, []string{"abc"}},
	} {
		if got := Fragments(tt.s, tt.size); !slices.Equal(got, tt.want) {
			t.Errorf("Fragments(%q, %d) = %q, want %q", tt.s, tt.size, got, tt.want)
		}
	}
}
