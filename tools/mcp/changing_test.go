package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate/tools"
)

// rawToolsServer is a streamable-HTTP MCP server written by hand, so that it can list tool
// definitions the SDK's server would refuse to hold: it answers initialize, ping and
// tools/list (with toolsJSON) in plain JSON.
func rawToolsServer(t *testing.T, toolsJSON string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"` + req.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		case "tools/list":
			result = `{"tools":` + toolsJSON + `}`
		case "ping":
			result = `{}`
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"no such method"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`))
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// logLines is a slog handler's output, safe for concurrent writes.
type logLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMalformedToolDefinitionRejected: a listed tool whose definition is malformed is not
// offered, with a log line naming the server and the tool; the server's good tools are.
func TestMalformedToolDefinitionRejected(t *testing.T) {
	url := rawToolsServer(t, `[
		{"name":"good","description":"fine","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}},
		{"name":"noargs","description":"no schema: no arguments"},
		{"name":"scalar","description":"arguments are not an object","inputSchema":{"type":"string"}},
		{"name":"badprops","description":"properties is a list","inputSchema":{"type":"object","properties":["q"]}},
		{"name":"two words","description":"a space in the name","inputSchema":{"type":"object"}},
		{"name":"","description":"no name","inputSchema":{"type":"object"}}
	]`)
	var logs logLines
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(fastConfig(ServerConfig{Name: "raw", URL: url, Safety: "safe"}), reg, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, m, "raw's tools", has(reg, "raw__good"))
	if got := strings.Join(names(reg), ","); got != "raw__good,raw__noargs" {
		t.Errorf("registered = %s, want raw__good,raw__noargs (the malformed ones rejected)", got)
	}
	for _, tc := range []struct{ tool, reason string }{
		{`tool=scalar`, `type \"string\"`},
		{`tool=badprops`, "properties"},
		{`tool="two words"`, "spaces"},
		{`tool=""`, "no name"},
	} {
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "tool definition rejected") && strings.Contains(line, "mcp_server=raw") &&
				strings.Contains(line, tc.tool+" ") && strings.Contains(line, tc.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("no log line rejecting %s naming the server and %q; log:\n%s", tc.tool, tc.reason, logs.String())
		}
	}
}

// catalogue is the bytes of the tool catalogue the model is given (the prompt's prefix).
func catalogue(t *testing.T, reg *tools.Registry) string {
	t.Helper()
	b, err := json.Marshal(reg.Specs())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCatalogueChangesOnlyWhenTheToolsDo: tool list changes are followed without a restart, and
// the catalogue is rebuilt in a stable order: a tool removed and added again gives the same
// bytes as before; a new tool changes them, in its sorted place.
func TestCatalogueChangesOnlyWhenTheToolsDo(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "chg", Version: "1"}, nil)
	add := func(name string) {
		sdk.AddTool(srv, &sdk.Tool{Name: name, Description: "the " + name + " tool"},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil, nil
			})
	}
	add("zeta")
	add("alpha")
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	m, reg := start(t, fastConfig(ServerConfig{Name: "chg", URL: hs.URL, Safety: "safe"}))
	waitFor(t, m, "both tools", func() bool { return has(reg, "chg__alpha")() && has(reg, "chg__zeta")() })
	before := catalogue(t, reg)

	srv.RemoveTools("alpha")
	waitFor(t, m, "alpha removed", lacks(reg, "chg__alpha"))
	add("alpha")
	waitFor(t, m, "alpha back", has(reg, "chg__alpha"))
	if after := catalogue(t, reg); after != before {
		t.Errorf("catalogue after alpha went and came back =\n%s\nwant the same bytes as before\n%s", after, before)
	}

	add("mid")
	waitFor(t, m, "mid added", has(reg, "chg__mid"))
	if got := strings.Join(names(reg), ","); got != "chg__alpha,chg__mid,chg__zeta" {
		t.Errorf("catalogue order = %s, want sorted by name", got)
	}
	if catalogue(t, reg) == before {
		t.Error("catalogue unchanged after a tool was added")
	}
}
