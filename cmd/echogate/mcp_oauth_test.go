package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

const testSecretKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" // 32 zero bytes

// TestMCPOAuthConfig: the auth keys of mcp.servers are read and checked, and an OAuth server
// without ECHOGATE_SECRET_KEY is refused naming the variable and how to make a key.
func TestMCPOAuthConfig(t *testing.T) {
	const remote = "mcp:\n  servers: [{name: tracker, url: 'https://mcp.example.com/mcp', auth: oauth%s}]\n"
	for name, tt := range map[string]struct {
		yaml string
		key  string
		want []string // substrings of the error; nil: valid
	}{
		"valid":               {yaml: "mcp:\n  elicit_timeout: 2m\n  servers: [{name: tracker, url: 'https://mcp.example.com/mcp', auth: oauth, client_id: abc, scopes: [read]}]\nhttp:\n  public_url: https://gw.example.com\n", key: testSecretKey},
		"per user":            {yaml: strings.Replace(remote, "auth: oauth", "auth: oauth_per_user", 1), key: testSecretKey},
		"no key":              {yaml: remote, want: []string{"mcp.servers[0].auth", "ECHOGATE_SECRET_KEY", "head -c 32 /dev/urandom | base64"}},
		"short key":           {yaml: remote, key: "c2hvcnQ=", want: []string{"ECHOGATE_SECRET_KEY", "want 32"}},
		"stdio":               {yaml: "mcp:\n  servers: [{name: local, command: wx, auth: oauth}]\n", key: testSecretKey, want: []string{"mcp.servers[0].auth", "url servers", "stdio"}},
		"unknown auth":        {yaml: strings.Replace(remote, "auth: oauth", "auth: basic", 1), key: testSecretKey, want: []string{"mcp.servers[0].auth", `"basic"`, "oauth_per_user"}},
		"client without auth": {yaml: "mcp:\n  servers: [{name: t, url: 'https://mcp.example.com/mcp', client_id: abc}]\n", want: []string{"mcp.servers[0].auth", "client_id"}},
		"secret without id":   {yaml: strings.Replace(remote, "%s", ", client_secret: s", 1), key: testSecretKey, want: []string{"mcp.servers[0].client_secret", "client_id"}},
		"bad public url":      {yaml: "http:\n  public_url: gw.example.com\n", want: []string{"http.public_url", "https://gateway.example.com"}},
		"negative elicit":     {yaml: "mcp:\n  elicit_timeout: -1s\n", want: []string{"mcp.elicit_timeout"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			body := strings.Replace(tt.yaml, "%s", "", 1)
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"ECHOGATE_SECRET_KEY": tt.key}
			_, err := loadConfig(p, func(k string) string { return env[k] })
			if tt.want == nil {
				if err != nil {
					t.Fatalf("loadConfig = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loadConfig = nil, want an error naming %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("loadConfig = %v, want it to name %q", err, w)
				}
			}
		})
	}
}

// TestMCPOAuthLoginThroughGateway: a server with auth: oauth shows needs login in /api/ready and
// its tools are withheld; a login begun through POST /api/mcp/login comes back to the gateway's
// /oauth/callback, after which a chat turn's call carries the token; a forged state and a
// replayed one are refused. On SQLite, and on PostgreSQL when DATABASE_URL is set.
func TestMCPOAuthLoginThroughGateway(t *testing.T) {
	for name, db := range backends(t) {
		t.Run(name, func(t *testing.T) { testMCPOAuthLogin(t, db(t)) })
	}
}

func testMCPOAuthLogin(t *testing.T, dbURL string) {
	o := newProtectedMCP(t)
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	t.Cleanup(fake.Close)
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		if last := req.Last(); last.Role == "tool" {
			return agenttest.TextAnswer("tool said " + last.Content), true
		}
		if strings.Contains(req.LastUser(), "who am i") {
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "tracker__whoami", Arguments: `{}`}), true
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		return agenttest.TextAnswer("tools: " + strings.Join(names, ",")), true
	})
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "mcp:\n  servers: [{name: tracker, url: '" + o.URL + "/mcp', auth: oauth, safety: safe}]\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e", "ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey, "DATABASE_URL": dbURL}
	base, logs, stop := startServe(t, vars, "--config", p)
	defer stop()

	waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return strings.HasPrefix(s, "needs login") })
	if got := sseText(postChat(t, base, "s1", "hello")); strings.Contains(got, "tracker__") {
		t.Errorf("before login the turn offered %q, want no tracker__ tools", got)
	}

	// A forged state is refused before any login.
	if code, page := getPage(t, base+"/oauth/callback?state=forged&code=x"); code != http.StatusBadRequest || !strings.Contains(page, "unknown, already used or expired") {
		t.Errorf("GET /oauth/callback with a forged state = %d %q, want 400 saying the link is unknown", code, page)
	}

	// Open, but Host-guarded like every endpoint (DNS rebinding).
	req, _ := http.NewRequest(http.MethodGet, base+"/oauth/callback?state=forged&code=x", nil)
	req.Host = "evil.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET /oauth/callback with Host evil.example = %v %v, want 421", resp, err)
	} else {
		resp.Body.Close()
	}

	resp, err := http.Post(base+"/api/mcp/login", "application/json", bytes.NewReader([]byte(`{"server":"tracker"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var start mcpLoginView
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &start) != nil || start.URL == "" {
		t.Fatalf("POST /api/mcp/login = %d %s, want 200 with the authorization URL; log:\n%s", resp.StatusCode, b, logs.String())
	}
	back := authRedirect(t, start.URL)
	if !strings.HasPrefix(back, base+"/oauth/callback?") {
		t.Fatalf("the authorization server sent the browser to %q, want %s/oauth/callback", back, base)
	}
	if code, page := getPage(t, back); code != http.StatusOK || !strings.Contains(page, "Logged in to MCP server tracker") {
		t.Fatalf("GET %s = %d %q, want 200 logged in; log:\n%s", back, code, page, logs.String())
	}
	if code, _ := getPage(t, back); code != http.StatusBadRequest {
		t.Errorf("replayed callback = %d, want 400", code)
	}
	waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return s == "ok (1 tools)" })

	got := sseText(postChat(t, base, "s2", "who am i"))
	toks := o.tokens()
	if len(toks) != 1 || !strings.Contains(got, "token="+toks[0]) {
		t.Errorf("turn answer = %q, want the call to carry the issued token %v", got, toks)
	}
}

// sseText joins the data of a turn's events.
func sseText(evs []sseEvent) string {
	var sb strings.Builder
	for _, e := range evs {
		enc := json.NewEncoder(&sb) // links keep their & (no HTML escaping)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(e.Data)
	}
	return sb.String()
}

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An MCP server's OAuth client_secret is masked like every configured secret.
func TestMCPClientSecretIsRedacted(t *testing.T) {
	cfg := &Config{MCP: MCPConfig{Servers: []MCPServer{{Name: "tracker", URL: "https://mcp.example.com/mcp", Auth: "oauth", ClientID: "abc", ClientSecret: "mcp-client-secret-777"}}}}
	if got := newRedactor(cfg, nil).Redact("value: mcp-client-secret-777\n"); strings.Contains(got, "mcp-client-secret-777") {
		t.Errorf("Redact = %q, want the client secret masked", got)
	}
}
