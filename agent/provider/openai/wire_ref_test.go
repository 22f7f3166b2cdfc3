package openai

import (
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// marshalChat is the reflective encoding encodeChat must equal: json.Marshal of the wire structs,
// the tools spliced in.
func (p *Provider) marshalChat(creq goopenai.ChatCompletionRequest, cacheKey string) ([]byte, error) {
	w := wireRequest{Model: creq.Model, MaxTokens: creq.MaxTokens, MaxCompletionTokens: creq.MaxCompletionTokens,
		Temperature: creq.Temperature, Stream: true, PromptCacheKey: cacheKey, Messages: make([]wireMessage, len(creq.Messages))}
	if creq.StreamOptions != nil {
		w.StreamOptions = &wireStreamOptions{IncludeUsage: creq.StreamOptions.IncludeUsage}
	}
	for i, m := range creq.Messages {
		wm := wireMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		switch {
		case len(m.MultiContent) > 0:
			parts := make([]wirePart, len(m.MultiContent))
			for j, pt := range m.MultiContent {
				parts[j] = wirePart{Type: string(pt.Type), Text: pt.Text}
				if pt.ImageURL != nil {
					parts[j].ImageURL = &wireImageURL{URL: pt.ImageURL.URL, Detail: string(pt.ImageURL.Detail)}
				}
			}
			wm.Content = parts
		case m.Content != "":
			wm.Content = m.Content
		}
		if len(m.ToolCalls) > 0 {
			wm.ToolCalls = make([]wireToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				wm.ToolCalls[j] = wireToolCall{ID: tc.ID, Type: string(tc.Type), Function: wireFunction{Name: tc.Function.Name, Arguments: tc.Function.Arguments}}
			}
		}
		w.Messages[i] = wm
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(creq.Tools) == 0 {
		return body, nil
	}
	tools, err := p.tools.encode(creq.Tools)
	if err != nil {
		return nil, err
	}
	// body ends with '}': the tools go in as its last member.
	out := make([]byte, 0, len(body)+len(tools)+10)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"tools":`...)
	out = append(out, tools...)
	return append(out, '}'), nil
}

// chatCases are requests whose encodings must equal marshalChat's: every optional field on and
// off, the characters encoding/json escapes, and the float formats of the temperature.
func chatCases() []goopenai.ChatCompletionRequest {
	odd := "a<b>&c \"q\" \\ \n\r\t\b\f \x01 \x7f é 😀 \u2028\u2029 \xff\xfe end"
	cases := []goopenai.ChatCompletionRequest{
		{Model: "m"},
		{Model: "m", Messages: []goopenai.ChatCompletionMessage{}},
		{Model: odd, Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: odd, Name: odd}}},
		{Model: "gpt-4o-mini", MaxTokens: 512, MaxCompletionTokens: 7, Temperature: 0.2,
			StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
			Messages: []goopenai.ChatCompletionMessage{
				{Role: "system", Content: "You are echogate."},
				{Role: "user", MultiContent: []goopenai.ChatMessagePart{
					{Type: "text", Text: odd},
					{Type: "image_url", ImageURL: &goopenai.ChatMessageImageURL{URL: "https://x/cat.png?a=1&b=<2>", Detail: "low"}},
					{ImageURL: &goopenai.ChatMessageImageURL{}},
					{},
				}},
				{Role: "assistant", ToolCalls: []goopenai.ToolCall{
					{ID: "call_1", Type: "function", Function: goopenai.FunctionCall{Name: "current_time", Arguments: `{"zone":"<UTC>"}`}},
					{Type: "function", Function: goopenai.FunctionCall{Arguments: "{}"}},
					{Type: "function"},
				}},
				{Role: "tool", ToolCallID: "call_1", Name: "current_time", Content: "12:00"},
			}},
		{Model: "m", StreamOptions: &goopenai.StreamOptions{}},
	}
	for _, temp := range []float32{1, 0.7, 2, 1e-7, 1.5e-6, 1e21, 3e22, -0.5, 123456.78, float32(math.SmallestNonzeroFloat32), math.MaxFloat32} {
		cases = append(cases, goopenai.ChatCompletionRequest{Model: "m", Temperature: temp})
	}
	return cases
}

// TestEncodeChatMatchesMarshal: encodeChat(r) = marshalChat(r), byte for byte, with and without
// a cache key and tools.
func TestEncodeChatMatchesMarshal(t *testing.T) {
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	withTools, err := p.chatRequest(goldenRequest())
	if err != nil {
		t.Fatal(err)
	}
	for i, creq := range append(chatCases(), withTools) {
		for _, key := range []string{"", "eg-0123<&>"} {
			want, werr := p.marshalChat(creq, key)
			got, gerr := p.encodeChat(creq, key)
			if werr != nil || gerr != nil {
				t.Fatalf("case %d: errors %v, %v", i, gerr, werr)
			}
			if string(got) != string(want) {
				t.Errorf("case %d key %q: encodeChat =\n%s\nwant\n%s", i, key, got, want)
			}
		}
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		_, werr := p.marshalChat(goopenai.ChatCompletionRequest{Model: "m", Temperature: bad}, "")
		_, gerr := p.encodeChat(goopenai.ChatCompletionRequest{Model: "m", Temperature: bad}, "")
		if werr == nil || gerr == nil || !strings.HasSuffix(werr.Error(), gerr.Error()) {
			t.Errorf("temperature %v: encodeChat error %v, want %v", bad, gerr, werr)
		}
	}
}

func FuzzEncodeChat(f *testing.F) {
	f.Add("hello", "world", float32(0.7), "call_1", `{"a":1}`)
	f.Add("<&>\u2028", "\xff\x00", float32(1e-9), "", "")
	p, _ := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	f.Fuzz(func(t *testing.T, content, name string, temp float32, id, args string) {
		if math.IsNaN(float64(temp)) || math.IsInf(float64(temp), 0) {
			return
		}
		creq := goopenai.ChatCompletionRequest{Model: name, Temperature: temp, Messages: []goopenai.ChatCompletionMessage{
			{Role: "user", Content: content, Name: name},
			{Role: "assistant", ToolCalls: []goopenai.ToolCall{{ID: id, Type: "function", Function: goopenai.FunctionCall{Name: name, Arguments: args}}}},
			{Role: "user", MultiContent: []goopenai.ChatMessagePart{{Type: "text", Text: content}, {ImageURL: &goopenai.ChatMessageImageURL{URL: args, Detail: goopenai.ImageURLDetail(id)}}}},
		}}
		want, _ := p.marshalChat(creq, id)
		got, _ := p.encodeChat(creq, id)
		if string(got) != string(want) {
			t.Fatalf("encodeChat =\n%s\nwant\n%s", got, want)
		}
	})
}

// TestRequestBuildingAllocations guards the per-call allocations of building a plain chat
// body from a 40-message history: the body and the pooled slice's header, not the converted
// history (an eighth of a turn's bytes) nor encoding/json's buffers.
func TestRequestBuildingAllocations(t *testing.T) {
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := agent.Request{Model: "gpt-4o-mini", Messages: []echogate.Message{{Role: echogate.RoleSystem, Content: "You are echogate."}}}
	for i := range 40 {
		role := echogate.RoleUser
		if i%2 == 1 {
			role = echogate.RoleAssistant
		}
		req.Messages = append(req.Messages, echogate.Message{Role: role, Content: "message text"})
	}
	build := func() {
		creq, err := p.chatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.encodeChat(creq, "eg-1"); err != nil {
			t.Fatal(err)
		}
		putMessages(creq.Messages)
	}
	build()
	if n := testing.AllocsPerRun(50, build); n > 3 {
		t.Errorf("building a 41-message request: %v allocations, want ≤ 3", n)
	}
	// Bytes, since a slice per call would be one allocation too: about the body alone (a
	// collection in between may empty the pool once).
	if raceEnabled {
		return // the pool drops items at random under the race detector
	}
	creq, _ := p.chatRequest(req)
	body, _ := p.encodeChat(creq, "eg-1")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 200 {
		build()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 200; per > uint64(cap(body))+1024 {
		t.Errorf("building a 41-message request: %d bytes allocated per call, want about the body's %d", per, cap(body))
	}
}
