package openai

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestChatRequestGolden pins the wire JSON of a representative request: system prompt, image
// parts, parallel tool calls and their results, tools with and without a schema.
func TestChatRequestGolden(t *testing.T) {
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	temp := float32(0.2)
	req := agent.Request{
		Model:       "gpt-4o-mini",
		MaxTokens:   512,
		Temperature: &temp,
		Messages: []echogate.Message{
			{Role: echogate.RoleSystem, Content: "You are echogate."},
			{Role: echogate.RoleUser, Content: "What is in this picture, and what time is it?", Images: []echogate.ImagePart{{URL: "https://files.example/cat.png"}}},
			{Role: echogate.RoleAssistant, Content: "Checking.", ToolCalls: []echogate.ToolCall{
				{ID: "call_1", Name: "current_time", Arguments: `{"zone":"UTC"}`},
				{ID: "call_2", Name: "http_fetch", Arguments: `{"url":"https://files.example/cat.txt"}`},
			}},
			{Role: echogate.RoleTool, ToolCallID: "call_1", Name: "current_time", Content: "2025-01-01T12:00:00Z"},
			{Role: echogate.RoleTool, ToolCallID: "call_2", Name: "http_fetch", Content: "404 not found", IsError: true},
		},
		Tools: []tools.Spec{
			{Name: "current_time", Description: "Current time in an IANA zone."},
			{Name: "http_fetch", Description: "GET a URL.", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
		},
	}
	creq, err := p.chatRequest(req)
	if err != nil {
		t.Fatalf("chatRequest = %v", err)
	}
	got, err := json.MarshalIndent(creq, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "chat_request.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("chat request JSON differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}
