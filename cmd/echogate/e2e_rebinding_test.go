package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rebindHost is what a page on another site sends after rebinding its name to 127.0.0.1.
const rebindHost = "rebind.attacker.example"

// hostRequest sends one request to the gateway with the given Host header.
func hostRequest(t *testing.T, method, url, host, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// DNS rebinding: with the default loopback bind and no token, a page whose name resolves to
// 127.0.0.1 drove /api/chat, read every transcript, changed budgets and approved tool calls.
// Every admin and chat endpoint now answers 421 to a foreign Host, and no turn runs.
func TestE2EDNSRebindingRefused(t *testing.T) {
	model := newScriptedModel(t)
	g := startGateway(t, model.vars(), "budgets: {per_day_usd: 50}\n")
	endpoints := []struct{ method, path, body string }{
		{"GET", "/", ""},
		{"GET", "/assets/app.js", ""},
		{"POST", "/api/chat", `{"session":"rb","text":"what time is it?"}`},
		{"POST", "/api/chat/stop", `{"session":"rb"}`},
		{"POST", "/api/chat/approve", `{"session":"rb","call_id":"c","decision":"approve"}`},
		{"GET", "/api/chat/stream?session=rb", ""},
		{"GET", "/api/chat/history?session=rb", ""},
		{"GET", "/api/info", ""},
		{"GET", "/api/sessions", ""},
		{"GET", "/api/sessions/transcript?session=web:rb", ""},
		{"GET", "/api/turns", ""},
		{"GET", "/api/turns/detail?id=t_x", ""},
		{"GET", "/api/approvals", ""},
		{"POST", "/api/approvals/decide", `{"session":"slack:C1:1.0","call_id":"c","decision":"approve"}`},
		{"GET", "/api/usage", ""},
		{"GET", "/api/usage/series", ""},
		{"GET", "/api/budgets", ""},
		{"PUT", "/api/budgets", `{"per_day_usd": 100000}`},
		{"GET", "/api/breakers", ""},
		{"GET", "/api/memory?user=web:u", ""},
		{"GET", "/api/knowledge", ""},
		{"GET", "/api/knowledge/search?q=x", ""},
		{"POST", "/api/knowledge/delete", `{"id":"d_1"}`},
		{"POST", "/api/knowledge/upload", `{"name":"a.md","content":"aGk="}`},
		{"POST", "/api/memory/forget", `{"id":"m_1"}`},
		{"POST", "/api/memory/edit", `{"id":"m_1","text":"x"}`},
		{"GET", "/metrics", ""},
	}
	for _, host := range []string{rebindHost, rebindHost + ":80", "localhost.attacker.example", "127.0.0.1.nip.example"} {
		for _, ep := range endpoints {
			status, body := hostRequest(t, ep.method, g.base+ep.path, host, ep.body)
			if status != http.StatusMisdirectedRequest || !strings.Contains(body, "http.allowed_hosts") {
				t.Errorf("%s %s with Host %s = %d %q, want 421 naming http.allowed_hosts", ep.method, ep.path, host, status, oneLine(body, 200))
			}
		}
	}
	// The probes and the Slack endpoint keep answering any name.
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, _ := hostRequest(t, "GET", g.base+path, rebindHost, ""); status != http.StatusOK {
			t.Errorf("GET %s with Host %s = %d, want 200", path, rebindHost, status)
		}
	}
	// Nothing happened: no model call, no turn, budgets unchanged.
	if n := len(model.fake.ChatRequests()); n != 0 {
		t.Errorf("model requests after the rebinding attempts = %d, want 0", n)
	}
	var turns []map[string]any
	getJSON(t, g.base+"/api/turns", &turns)
	if len(turns) != 0 {
		t.Errorf("turns after the rebinding attempts = %v, want none", turns)
	}
	var budgets map[string]any
	getJSON(t, g.base+"/api/budgets", &budgets)
	if b, _ := json.Marshal(budgets); bytes.Contains(b, []byte("100000")) {
		t.Errorf("budgets = %s, changed by a rebinding request", b)
	}
	// The console's own names work.
	for _, host := range []string{strings.TrimPrefix(g.base, "http://"), "localhost", "[::1]:8080"} {
		if status, _ := hostRequest(t, "GET", g.base+"/api/info", host, ""); status != http.StatusOK {
			t.Errorf("GET /api/info with Host %s = %d, want 200", host, status)
		}
	}
}

// http.allowed_hosts admits the names a proxy or users reach the gateway by (with the token,
// which such a configuration requires); without the token a request by such a name cannot
// decide as the console.
func TestE2EAllowedHostsAndConsoleDecide(t *testing.T) {
	const token = "allowed-hosts-token"
	model := newScriptedModel(t)
	vars := model.vars()
	vars["ECHOGATE_HTTP_AUTH_TOKEN"] = token
	g := startGateway(t, vars, "http:\n  allowed_hosts: [chat.example.test, \"*.corp.example\"]\n")
	for host, want := range map[string]int{"chat.example.test": 200, "a.corp.example:8443": 200, "corp.example": 421, rebindHost: 421} {
		if status, _ := authRequest(t, "GET", g.base+"/api/info", host, token, ""); status != want {
			t.Errorf("GET /api/info with Host %s = %d, want %d", host, status, want)
		}
	}
	decide := `{"session":"web:none","call_id":"c","decision":"approve"}`
	if status, body := hostRequest(t, "POST", g.base+"/api/approvals/decide", "chat.example.test", decide); status != http.StatusUnauthorized || !strings.Contains(body, "authentication") {
		t.Errorf("decide by an allowed name without the token = %d %q, want 401 asking for authentication", status, body)
	}
	// With the token the console decides, by any name it answers (here: nothing pending → 404).
	if status, body := authRequest(t, "POST", g.base+"/api/approvals/decide", "chat.example.test", token, decide); status != http.StatusNotFound {
		t.Errorf("decide with the token = %d %q, want 404 (no pending approval)", status, body)
	}
}

func TestConfigAllowedHostsInvalid(t *testing.T) {
	path := writeConfig(t, "http:\n  allowed_hosts: [\"https://chat.example.com/\"]\n")
	_, err := loadConfig(path, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "http.allowed_hosts") {
		t.Errorf("config with a URL in http.allowed_hosts = %v, want an error naming http.allowed_hosts", err)
	}
}

func TestConfigAllowedHostsFromEnv(t *testing.T) {
	cfg, err := loadConfig("", func(k string) string {
		return map[string]string{"ECHOGATE_HTTP_ALLOWED_HOSTS": "chat.example.com, *.corp.example", "ECHOGATE_DATA_DIR": t.TempDir(),
			"ECHOGATE_HTTP_AUTH_TOKEN": "from-env-token"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.HTTP.AllowedHosts, "|"); got != "chat.example.com|*.corp.example" {
		t.Errorf("http.allowed_hosts from ECHOGATE_HTTP_ALLOWED_HOSTS = %q, want both names", got)
	}
}
