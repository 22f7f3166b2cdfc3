package main

import (
	"context"
	"github.com/echogate/echogate/admin"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// consoleMCPConfig starts two MCP servers for the console's MCP tab, one connected with a tool
// (wx) and one behind OAuth without a grant (tracker: needs login), and appends them to the
// configuration at path. The environment needs ECHOGATE_SECRET_KEY.
func consoleMCPConfig(t *testing.T, path string) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "wx", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "forecast", Description: "the forecast"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny"}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	o := newProtectedMCP(t)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("mcp:\n  servers:\n    - {name: wx, url: '" + hs.URL + "', safety: safe}\n    - {name: tracker, url: '" + o.URL + "/mcp', auth: oauth, safety: safe}\n"); err != nil {
		t.Fatal(err)
	}
}

// TestMCPServersAPI: GET /api/mcp/servers lists each server's state, tools and the login a
// server needs; it is behind the console's one authentication rule like every /api/ route.
func TestMCPServersAPI(t *testing.T) {
	dir := t.TempDir()
	p := consoleConfig(t, dir, "allow")
	consoleMCPConfig(t, p)
	const token = "mcp-console-token"
	vars := map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey, "ECHOGATE_HTTP_AUTH_TOKEN": token}
	base, _, stop := startServe(t, vars, "--config", p)
	defer stop()
	if code := apiGet(t, base+"/api/mcp/servers", "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/mcp/servers without the token = %d, want 401", code)
	}
	got := map[string]admin.MCPServerView{}
	for deadline := time.Now().Add(waitTimeout); got["wx"].State != "connected" || got["tracker"].State == "connecting"; time.Sleep(20 * time.Millisecond) {
		var servers []admin.MCPServerView
		if code := apiGet(t, base+"/api/mcp/servers", token, &servers); code != http.StatusOK {
			t.Fatalf("GET /api/mcp/servers = %d, want 200", code)
		}
		for _, s := range servers {
			got[s.Name] = s
		}
		if time.Now().After(deadline) {
			break
		}
	}
	if wx := got["wx"]; wx.State != "connected" || wx.ToolCount != 1 || strings.Join(wx.Tools, ",") != "wx__forecast" || wx.NeedsLogin {
		t.Errorf("wx = %+v, want connected with wx__forecast", wx)
	}
	if tr := got["tracker"]; tr.State != "needs login" || !tr.NeedsLogin || tr.ToolCount != 0 || tr.Login != "echogate mcp login tracker" || tr.Auth != "oauth" {
		t.Errorf("tracker = %+v, want needs login, no tools, the login command", tr)
	}
}
