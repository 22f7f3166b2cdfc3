package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowMCP is a streamable-HTTP MCP server with one tool, "lookup", that answers nothing until
// open is called: a server slower to start than the gateway.
func slowMCP(t *testing.T) (url string, open func()) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup", Description: "Look something up."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	gate := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	var once sync.Once
	return hs.URL, func() { once.Do(func() { close(gate) }) }
}

// onLine calls fn once when a line containing marker is written.
type onLine struct {
	*syncBuffer
	marker string
	once   sync.Once
	fn     func()
}

func (w *onLine) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(string(p), w.marker) {
		w.once.Do(w.fn)
	}
	return n, err
}

// TestChatWaitsForSlowMCPServer: `chat -m` with an MCP server that connects only after the
// gateway has started offers the server's tool on the first turn; with a bound shorter than the
// server's start, the answer comes without it and the warning names the late server.
func TestChatWaitsForSlowMCPServer(t *testing.T) {
	for _, tt := range []struct {
		name     string
		bound    string
		release  bool // the server answers once chat says it is waiting
		wantTool bool
	}{
		{"waits", "", true, true},
		{"bound ends first", "50ms", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, open := slowMCP(t)
			t.Cleanup(open)
			dir := t.TempDir()
			p := filepath.Join(dir, "c.yaml")
			body := "mcp:\n  servers: [{name: slow, url: '" + url + "', safety: safe}]\n"
			if tt.bound != "" {
				body += "  ready_timeout: " + tt.bound + "\n"
			}
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_LOG_LEVEL": "info"}, "--config", p, "chat", "-m", "hello")
			release := func() {}
			if tt.release {
				release = open
			}
			e.stderr = &onLine{syncBuffer: errb, marker: "waiting for MCP servers", fn: release}
			if code := run(context.Background(), e); code != 0 {
				t.Fatalf("chat exit %d, stderr %s", code, errb.String())
			}
			if got := strings.Contains(out.String(), "slow__lookup"); got != tt.wantTool {
				t.Errorf("first turn offered slow__lookup = %v, want %v; answer %q", got, tt.wantTool, out.String())
			}
			if !tt.wantTool && !strings.Contains(errb.String(), `MCP server \"slow\" did not connect within 50ms`) {
				t.Errorf("stderr = %q, want a warning naming the late server and the bound", errb.String())
			}
		})
	}
}

// TestReadyzListsMCPServers: /readyz names each MCP server and its state.
func TestReadyzListsMCPServers(t *testing.T) {
	url, open := slowMCP(t)
	open()
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "mcp:\n  servers: [{name: slow, url: '" + url + "'}, {name: gone, command: '" + filepath.Join(dir, "no-such-server") + "'}]\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, stop := startServe(t, map[string]string{"ECHOGATE_DATA_DIR": dir}, "--config", p)
	defer stop()
	code, got := readyz(t, base)
	if code != http.StatusOK {
		t.Errorf("/readyz = %d, want 200 (MCP servers never fail readiness)", code)
	}
	if got["mcp:slow"] != "ok (1 tools)" {
		t.Errorf("/readyz mcp:slow = %q, want \"ok (1 tools)\"; body %v", got["mcp:slow"], got)
	}
	if !strings.HasPrefix(got["mcp:gone"], "not connected: ") || !strings.Contains(got["mcp:gone"], "no-such-server") {
		t.Errorf("/readyz mcp:gone = %q, want not connected naming the command", got["mcp:gone"])
	}
}

// Finding 7: /readyz told anyone who asked an MCP server's stderr (and storage errors). It says
// only ready or not; the details are GET /api/ready's, behind the one authentication rule.
func TestReadyzKeepsMCPStderrForTheOperator(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "mcp:\n  servers: [{name: crashy, command: /bin/sh, args: ['-c', 'echo \"fatal: bad key sk-leaked-in-stderr\" >&2; exit 3']}]\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, stop := startServe(t, map[string]string{"ECHOGATE_DATA_DIR": dir}, "--config", p)
	defer stop()
	waitReadyz(t, base, http.StatusOK, "mcp:crashy", func(s string) bool { return strings.Contains(s, "sk-leaked-in-stderr") })
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"status":"ready"}` {
		t.Errorf("GET /readyz = %d %q, want 200 {\"status\":\"ready\"} without the MCP server's stderr", resp.StatusCode, b)
	}
}
