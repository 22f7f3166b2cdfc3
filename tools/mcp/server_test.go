package mcp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: with MCPTEST_SERVE=1 in its environment,
// TestMain serves the test server on stdin/stdout and exits.
const (
	envServe = "MCPTEST_SERVE"
	envGate  = "MCPTEST_GATE"  // a file that must exist, else the server exits at once ("down")
	envTools = "MCPTEST_TOOLS" // comma list of tools to offer; empty: all
)

func TestMain(m *testing.M) {
	if os.Getenv(envServe) == "1" {
		os.Exit(serveStdio())
	}
	os.Exit(m.Run())
}

func serveStdio() int {
	if gate := os.Getenv(envGate); gate != "" {
		if _, err := os.Stat(gate); err != nil {
			fmt.Fprintln(os.Stderr, "test server: gate closed, refusing to start")
			return 2
		}
	}
	srv := newTestServer(os.Getenv(envTools), func() {
		fmt.Fprintln(os.Stderr, "test server: crashing on purpose")
		os.Exit(3)
	})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	return 0
}

type cityArgs struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

type sizeArgs struct {
	N int `json:"n" jsonschema:"bytes of output"`
}

type envArgs struct {
	Name string `json:"name"`
}

type report struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

// newTestServer builds the test MCP server. only lists the tools to offer (empty: all); crash is
// what the crash tool does.
func newTestServer(only string, crash func()) *sdk.Server {
	offer := func(name string) bool {
		if only == "" {
			return true
		}
		for _, n := range strings.Split(only, ",") {
			if n == name {
				return true
			}
		}
		return false
	}
	// A small page size exercises the client's pagination.
	s := sdk.NewServer(&sdk.Implementation{Name: "testwx", Version: "1"}, &sdk.ServerOptions{PageSize: 2})
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	if offer("weather") {
		sdk.AddTool(s, &sdk.Tool{Name: "weather", Description: "Current weather for a city."},
			func(_ context.Context, _ *sdk.CallToolRequest, in cityArgs) (*sdk.CallToolResult, any, error) {
				return text("Sunny in " + in.City + ", 21°C"), nil, nil
			})
	}
	if offer("fail") {
		sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				r := text("weather station offline")
				r.IsError = true
				return r, nil, nil
			})
	}
	if offer("crash") {
		sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Kills the server process."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				crash()
				return text("crashed"), nil, nil
			})
	}
	if offer("big") {
		sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Returns n bytes."},
			func(_ context.Context, _ *sdk.CallToolRequest, in sizeArgs) (*sdk.CallToolResult, any, error) {
				return text(strings.Repeat("x", in.N)), nil, nil
			})
	}
	if offer("image") {
		sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Returns a radar image."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{
					&sdk.TextContent{Text: "radar:"},
					&sdk.ImageContent{MIMEType: "image/png", Data: bytes.Repeat([]byte{1}, 12*1024)},
				}}, nil, nil
			})
	}
	if offer("structured") {
		sdk.AddTool(s, &sdk.Tool{Name: "structured", Description: "Weather as data."},
			func(_ context.Context, _ *sdk.CallToolRequest, in cityArgs) (*sdk.CallToolResult, report, error) {
				return nil, report{City: in.City, TempC: 21}, nil
			})
	}
	if offer("env") {
		sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Reads an environment variable of the server."},
			func(_ context.Context, _ *sdk.CallToolRequest, in envArgs) (*sdk.CallToolResult, any, error) {
				v, ok := os.LookupEnv(in.Name)
				if !ok {
					v = "(unset)"
				}
				return text(in.Name + "=" + v), nil, nil
			})
	}
	if offer("add_tool") {
		sdk.AddTool(s, &sdk.Tool{Name: "add_tool", Description: "Adds the forecast tool."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				sdk.AddTool(s, &sdk.Tool{Name: "forecast", Description: "Tomorrow's weather."},
					func(_ context.Context, _ *sdk.CallToolRequest, in cityArgs) (*sdk.CallToolResult, any, error) {
						return text("Rain in " + in.City + " tomorrow"), nil, nil
					})
				return text("added"), nil, nil
			})
	}
	if offer("remove_fail") {
		sdk.AddTool(s, &sdk.Tool{Name: "remove_fail", Description: "Removes the fail tool."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				s.RemoveTools("fail")
				return text("removed"), nil, nil
			})
	}
	return s
}

// httpServer is a streamable-HTTP MCP test server that records the headers it received.
type httpServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newHTTPServer(t *testing.T, only string) *httpServer {
	t.Helper()
	srv := newTestServer(only, func() {})
	h := &httpServer{}
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.headers = append(h.headers, r.Header.Clone())
		h.mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

// seen returns every value of header k the server received.
func (h *httpServer) seen(k string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, hd := range h.headers {
		out = append(out, hd.Values(k)...)
	}
	return out
}
