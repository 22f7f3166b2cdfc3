package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
	goopenai "github.com/sashabaranov/go-openai"
)

// goldenRequest is the representative request of TestChatRequestGolden.
func goldenRequest() agent.Request {
	temp := float32(0.2)
	return agent.Request{
		Model: "gpt-4o-mini", MaxTokens: 512, Temperature: &temp,
		Messages: []echogate.Message{
			{Role: echogate.RoleSystem, Content: "You are echogate. <b>&</b>"},
			{Role: echogate.RoleUser, Content: "What is in this picture, and what time is it?", Images: []echogate.ImagePart{{URL: "https://files.example/cat.png"}}},
			{Role: echogate.RoleAssistant, Content: "Checking.", ToolCalls: []echogate.ToolCall{
				{ID: "call_1", Name: "current_time", Arguments: `{"zone":"UTC"}`},
				{ID: "call_2", Name: "http_fetch", Arguments: `{"url":"https://files.example/cat.txt"}`},
			}},
			{Role: echogate.RoleTool, ToolCallID: "call_1", Name: "current_time", Content: "2025-01-01T12:00:00Z"},
			{Role: echogate.RoleTool, ToolCallID: "call_2", Name: "http_fetch", Content: "404 not found", IsError: true},
			{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "call_3", Name: "current_time", Arguments: `{}`}}},
		},
		Tools: []tools.Spec{
			{Name: "current_time", Description: "Current time in an IANA zone."},
			{Name: "http_fetch", Description: "GET a URL.", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
		},
	}
}

// TestWireBodyMatchesGoOpenAI: the body the provider sends means exactly what go-openai's
// encoding of the same request means, and carries prompt_cache_key when given. Encoding twice
// (the tools from the cache) gives the same bytes.
func TestWireBodyMatchesGoOpenAI(t *testing.T) {
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	creq, err := p.chatRequest(goldenRequest())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := json.Marshal(creq)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "eg-0123"} {
		got, err := p.encodeChat(creq, key)
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("encodeChat body is not JSON: %v\n%s", err, got)
		}
		if err := json.Unmarshal(ref, &b); err != nil {
			t.Fatal(err)
		}
		if key != "" {
			b["prompt_cache_key"] = key
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("encodeChat(key %q) =\n%s\nwant the meaning of go-openai's\n%s", key, got, ref)
		}
		again, _ := p.encodeChat(creq, key)
		if string(again) != string(got) {
			t.Errorf("encodeChat again (tools cached) =\n%s\nwant\n%s", again, got)
		}
	}
}

func TestSendsCacheKey(t *testing.T) {
	for _, tt := range []struct {
		mode, base string
		want       bool
	}{
		{CacheKeyAuto, "https://api.openai.com/v1", true},
		{CacheKeyAuto, "http://localhost:11434/v1", false},
		{CacheKeyOn, "http://localhost:8000/v1", true},
		{CacheKeyOff, "https://api.openai.com/v1", false},
	} {
		if got := sendsCacheKey(tt.mode, tt.base); got != tt.want {
			t.Errorf("sendsCacheKey(%q, %q) = %v, want %v", tt.mode, tt.base, got, tt.want)
		}
	}
	if _, err := New(Config{BaseURL: "http://localhost:1/v1", PromptCacheKey: "yes"}, nil); err == nil {
		t.Error(`New(PromptCacheKey "yes") = nil error, want one naming the value`)
	}
	if a, b := promptCacheKey("slack:T1:C1"), promptCacheKey("slack:T1:C2"); a == b || len(a) != 27 {
		t.Errorf("promptCacheKey = %q, %q: want distinct 27-byte digests", a, b)
	}
}

func BenchmarkEncodeChat(b *testing.B) {
	p, _ := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	creq, _ := p.chatRequest(goldenRequest())
	b.Run("go-openai", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(creq)
		}
	})
	b.Run("wire-reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.marshalChat(creq, "eg-1")
		}
	})
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.encodeChat(creq, "eg-1")
		}
	})
}

// TestToolsCacheFollowsTheCatalogue: a changed catalogue is never served from the cache.
func TestToolsCacheFollowsTheCatalogue(t *testing.T) {
	p, _ := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	req := goldenRequest()
	for i, specs := range [][]tools.Spec{
		req.Tools,
		{{Name: "current_time", Description: "Now."}},
		{{Name: "current_time", Description: "Now.", Parameters: json.RawMessage(`{"type":"object"}`)}},
		req.Tools,
	} {
		req.Tools = specs
		creq, err := p.chatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := p.encodeChat(creq, "")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Tools []struct {
				Function struct {
					Name, Description string
					Parameters        json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Tools) != len(specs) {
			t.Fatalf("catalogue %d: %d tools sent, want %d", i, len(got.Tools), len(specs))
		}
		for j, s := range specs {
			f := got.Tools[j].Function
			if f.Name != s.Name || f.Description != s.Description || (len(s.Parameters) > 0 && string(f.Parameters) != string(s.Parameters)) {
				t.Errorf("catalogue %d tool %d = %+v, want %+v", i, j, f, s)
			}
		}
	}
	if _, err := p.chatRequest(agent.Request{Model: "m", Messages: []echogate.Message{{Role: echogate.RoleUser, Content: "x"}},
		Tools: []tools.Spec{{Name: "bad name!"}}}); err == nil {
		t.Error("chatRequest with an invalid tool name = nil error, want one (validated even with a cache)")
	}
}

// encodeChat is appendChatBody into a new buffer, the form the wire tests compare.
func (p *Provider) encodeChat(creq goopenai.ChatCompletionRequest, cacheKey string) ([]byte, error) {
	return p.appendChatBody(nil, &creq, cacheKey)
}
