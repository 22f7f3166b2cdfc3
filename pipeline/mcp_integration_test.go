package pipeline_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/mcp"
)

// weatherServer is a streamable-HTTP MCP server with one tool, weather(city); it counts calls.
func weatherServer(t *testing.T) (url string, calls *atomic.Int32) {
	t.Helper()
	calls = new(atomic.Int32)
	srv := sdk.NewServer(&sdk.Implementation{Name: "wx", Version: "1"}, nil)
	type args struct {
		City string `json:"city"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "weather", Description: "Current weather for a city."},
		func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			calls.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Sunny in " + in.City + ", 21°C"}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL, calls
}

// runMCP runs an MCP manager on reg until the test ends and waits for tool to be registered.
func runMCP(t *testing.T, reg *tools.Registry, sc mcp.ServerConfig, tool string) {
	t.Helper()
	m, err := mcp.New(mcp.Config{Servers: []mcp.ServerConfig{sc}}, reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.After(10 * time.Second)
	for {
		ch := m.Updated()
		if _, ok := reg.Get(tool); ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("MCP tool %s not registered within 10s; status %+v", tool, m.Status())
		}
	}
}

// toolResultModel asks for wx__weather, then answers with what the tool returned: the answer can
// only hold the forecast if the MCP result reached the model.
type toolResultModel struct{ calls atomic.Int32 }

func (m *toolResultModel) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	n := m.calls.Add(1)
	usage := echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, InputTokens: 10, OutputTokens: 5}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != echogate.RoleTool {
		offered := false
		for _, s := range req.Tools {
			offered = offered || s.Name == "wx__weather"
		}
		if !offered {
			text := "no weather tool offered"
			_ = onDelta(agent.Delta{Text: text})
			return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: text}, Usage: usage, FinishReason: "stop"}, nil
		}
		call := echogate.ToolCall{ID: "call_" + string(rune('0'+n)), Name: "wx__weather", Arguments: `{"city":"Oslo"}`}
		return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{call}}, Usage: usage, FinishReason: "tool_calls"}, nil
	}
	forecast := "nothing"
	for _, line := range strings.Split(last.Content, "\n") {
		if strings.HasPrefix(line, "Sunny in") || strings.HasPrefix(line, "not approved") {
			forecast = line
		}
	}
	text := "Forecast: " + forecast
	if err := onDelta(agent.Delta{Text: text}); err != nil {
		return agent.Response{}, err
	}
	return agent.Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: text}, Usage: usage, FinishReason: "stop"}, nil
}

func TestMCPToolAnswerUsesResult(t *testing.T) {
	url, calls := weatherServer(t)
	var reg *tools.Registry
	model := &toolResultModel{}
	h := start(t, opts{deps: func(d *pipeline.Deps) { reg, d.Model = d.Tools, model }})
	runMCP(t, reg, mcp.ServerConfig{Name: "wx", URL: url, Safety: "safe"}, "wx__weather")

	h.submit(msg("s1", "ann", "weather in Oslo?"))
	d := h.waitDone()
	if d.Status != "done" || d.Text != "Forecast: Sunny in Oslo, 21°C" {
		t.Fatalf("done = %+v, want an answer built from the MCP tool's result", d)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("MCP server saw %d calls, want 1", n)
	}
	tr := h.transcript("s1")
	if len(tr) != 4 || !strings.Contains(tr[2], "<<<tool output from wx (untrusted)>>>") || !strings.Contains(tr[2], "Sunny in Oslo") {
		t.Errorf("transcript = %q, want the fenced MCP result as the tool message", tr)
	}
	for _, p := range h.rep.Posts() {
		if p.Out.Kind == echogate.OutApprovalPrompt {
			t.Errorf("a safe MCP tool asked for approval: %q", p.Text)
		}
	}
}

func TestSensitiveMCPToolAsksForApproval(t *testing.T) {
	url, calls := weatherServer(t)
	var reg *tools.Registry
	model := &toolResultModel{}
	h := start(t, opts{deps: func(d *pipeline.Deps) { reg, d.Model = d.Tools, model }})
	// No safety configured: MCP tools are sensitive by default.
	runMCP(t, reg, mcp.ServerConfig{Name: "wx", URL: url}, "wx__weather")

	h.submit(msg("s1", "ann", "weather in Oslo?"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("status = %s, want paused for approval", d.Status)
	}
	p := promptOf(t, h)
	if !strings.Contains(p.Text, "wx__weather") || !strings.Contains(p.Text, "Oslo") {
		t.Errorf("approval prompt = %q, want the MCP tool and its arguments", p.Text)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("MCP tool ran %d times before approval, want 0", n)
	}

	h.submit(reaction("s1", "ann", echogate.ReactionApprove, p.Ref))
	d := h.waitDone()
	if d.Status != "done" || d.Text != "Forecast: Sunny in Oslo, 21°C" {
		t.Fatalf("after approval: %+v, want the answer from the tool's result", d)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("MCP tool ran %d times after one approval, want 1", n)
	}
}
