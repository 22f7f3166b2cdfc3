package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 36, finding 7: behind a reverse proxy (loopback bind, http.allowed_hosts, no token) the
// admin API answered everyone; /metrics ignored the token; /readyz ignored the token and the Host
// guard and told anyone the storage errors and the MCP servers' stderr.

// consoleEndpoints is every console, chat and admin endpoint with a request that reaches it.
var consoleEndpoints = []struct{ method, path, body string }{
	{"GET", "/", ""},
	{"GET", "/assets/app.js", ""},
	{"POST", "/api/chat", `{"session":"rb","text":"what time is it?"}`},
	{"POST", "/api/chat/stop", `{"session":"rb"}`},
	{"POST", "/api/chat/approve", `{"session":"rb","call_id":"c","decision":"approve"}`},
	{"GET", "/api/chat/stream?session=rb", ""},
	{"GET", "/api/chat/history?session=rb", ""},
	{"GET", "/api/info", ""},
	{"GET", "/api/ready", ""},
	{"GET", "/api/sessions", ""},
	{"GET", "/api/sessions/transcript?session=web:rb", ""},
	{"GET", "/api/turns", ""},
	{"GET", "/api/turns/detail?id=t_x", ""},
	{"GET", "/api/agents", ""},
	{"GET", "/api/refusals", ""},
	{"GET", "/api/names?ids=web:u", ""},
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

// authRequest sends one request with the given Host, bearer token (none when empty) and extra
// headers (name, value pairs), and returns the status and at most 64 KiB of the body.
func authRequest(t *testing.T, method, url, host, token, body string, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// A server that answers a name other than its loopback ones (a non-loopback bind, or a name in
// http.allowed_hosts) needs http.auth_token: validation refuses it, naming the key and the fix.
func TestConfigAllowedHostsNeedToken(t *testing.T) {
	for name, tt := range map[string]struct {
		vars map[string]string
		want string // "" valid, else the error names this
	}{
		"loopback":                {map[string]string{}, ""},
		"proxied name, no token":  {map[string]string{"ECHOGATE_HTTP_ALLOWED_HOSTS": "chat.example.com"}, "http.auth_token"},
		"wildcard name, no token": {map[string]string{"ECHOGATE_HTTP_ALLOWED_HOSTS": "*.corp.example"}, "http.auth_token"},
		"loopback names only":     {map[string]string{"ECHOGATE_HTTP_ALLOWED_HOSTS": "localhost, 127.0.0.1"}, ""},
		"proxied name with token": {map[string]string{"ECHOGATE_HTTP_ALLOWED_HOSTS": "chat.example.com", "ECHOGATE_HTTP_AUTH_TOKEN": "s3cret-token"}, ""},
		"public bind, no token":   {map[string]string{"ECHOGATE_HTTP_ADDR": "0.0.0.0:8080"}, "http.auth_token"},
		"public bind, with token": {map[string]string{"ECHOGATE_HTTP_ADDR": "0.0.0.0:8080", "ECHOGATE_HTTP_AUTH_TOKEN": "s3cret-token"}, ""},
		"metrics token alone":     {map[string]string{"ECHOGATE_HTTP_ALLOWED_HOSTS": "chat.example.com", "ECHOGATE_HTTP_METRICS_TOKEN": "m3trics"}, "http.auth_token"},
	} {
		vars := map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()}
		for k, v := range tt.vars {
			vars[k] = v
		}
		_, err := loadConfig("", func(k string) string { return vars[k] })
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: loadConfig = %v, want valid", name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: loadConfig = %v, want an error naming %s", name, err, tt.want)
		case tt.want == "http.auth_token" && !strings.Contains(err.Error(), "ECHOGATE_HTTP_AUTH_TOKEN"):
			t.Errorf("%s: loadConfig = %v, want the fix (ECHOGATE_HTTP_AUTH_TOKEN) named", name, err)
		}
	}
}

// Through the proxied name every console, chat and admin endpoint and /metrics need the token;
// with it they answer. The probes answer without it, and /readyz says only ready or not.
func TestE2EProxiedAdminAPINeedsToken(t *testing.T) {
	const token, scrape = "proxy-test-token", "scrape-only-token"
	model := newScriptedModel(t)
	vars := model.vars()
	vars["ECHOGATE_HTTP_AUTH_TOKEN"] = token
	vars["ECHOGATE_HTTP_METRICS_TOKEN"] = scrape
	g := startGateway(t, vars, "http:\n  allowed_hosts: [chat.example.test]\nbudgets: {per_day_usd: 50}\n")
	for _, host := range []string{"chat.example.test", "127.0.0.1", "localhost"} {
		for _, ep := range consoleEndpoints {
			status, body := authRequest(t, ep.method, g.base+ep.path, host, "", ep.body)
			if status != http.StatusUnauthorized || !strings.Contains(body, "http.auth_token") {
				t.Errorf("%s %s by Host %s without the token = %d %q, want 401 naming http.auth_token", ep.method, ep.path, host, status, oneLine(body, 200))
			}
			if status, _ := authRequest(t, ep.method, g.base+ep.path, host, "wrong-"+token, ep.body); status != http.StatusUnauthorized {
				t.Errorf("%s %s by Host %s with a wrong token = %d, want 401", ep.method, ep.path, host, status)
			}
		}
	}
	// The POSTs are made with the token only where they change nothing (a stop, bad ids).
	for _, ep := range consoleEndpoints {
		if ep.method != "GET" {
			continue
		}
		if status, body := authRequest(t, ep.method, g.base+ep.path, "chat.example.test", token, ""); status == http.StatusUnauthorized || status == http.StatusForbidden {
			t.Errorf("GET %s with the token = %d %q, want it answered", ep.path, status, oneLine(body, 200))
		}
	}
	if status, body := authRequest(t, "GET", g.base+"/metrics", "chat.example.test", token, ""); status != http.StatusOK || !strings.Contains(body, "echogate_") {
		t.Errorf("GET /metrics with the token = %d %q, want the metrics", status, oneLine(body, 200))
	}
	// The metrics token opens /metrics and nothing else.
	if status, body := authRequest(t, "GET", g.base+"/metrics", "chat.example.test", scrape, ""); status != http.StatusOK || !strings.Contains(body, "echogate_") {
		t.Errorf("GET /metrics with http.metrics_token = %d %q, want the metrics", status, oneLine(body, 200))
	}
	if status, _ := authRequest(t, "GET", g.base+"/api/info", "chat.example.test", scrape, ""); status != http.StatusUnauthorized {
		t.Errorf("GET /api/info with http.metrics_token = %d, want 401", status)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, _ := authRequest(t, "GET", g.base+path, "chat.example.test", "", ""); status != http.StatusOK {
			t.Errorf("GET %s without the token = %d, want 200", path, status)
		}
	}
	status, body := authRequest(t, "GET", g.base+"/readyz", "chat.example.test", "", "")
	var ready map[string]any
	if err := json.Unmarshal([]byte(body), &ready); err != nil || status != http.StatusOK || len(ready) != 1 || ready["status"] != "ready" {
		t.Errorf("GET /readyz = %d %q, want 200 {\"status\":\"ready\"} and nothing else", status, body)
	}
	status, body = authRequest(t, "GET", g.base+"/api/ready", "chat.example.test", token, "")
	if status != http.StatusOK || !strings.Contains(body, `"storage"`) || !strings.Contains(body, `"web"`) {
		t.Errorf("GET /api/ready with the token = %d %q, want 200 with the storage and channel details", status, body)
	}
	// A request made with the token changed nothing it should not have: the budgets are as set.
	if status, body := authRequest(t, "GET", g.base+"/api/budgets", "", token, ""); status != http.StatusOK || strings.Contains(body, "100000") {
		t.Errorf("GET /api/budgets = %d %q, want the configured limits unchanged", status, body)
	}
}

// Without a token the server answers only loopback names, and only requests made on this
// machine: a request a local proxy forwarded (it says so in its headers) is refused, whatever
// Host it names, so a proxy in front of a token-less gateway does not open it.
func TestE2EForwardedRequestNeedsToken(t *testing.T) {
	model := newScriptedModel(t)
	g := startGateway(t, model.vars(), "")
	for _, h := range [][2]string{{"X-Forwarded-For", "203.0.113.9"}, {"Forwarded", "for=203.0.113.9;host=chat.example.com"},
		{"X-Real-Ip", "203.0.113.9"}, {"X-Forwarded-Host", "chat.example.com"}, {"Via", "1.1 proxy"}} {
		for _, ep := range consoleEndpoints {
			status, body := authRequest(t, ep.method, g.base+ep.path, "", "", ep.body, h[0], h[1])
			if status != http.StatusForbidden || !strings.Contains(body, "http.auth_token") {
				t.Errorf("%s %s forwarded (%s) = %d %q, want 403 naming http.auth_token", ep.method, ep.path, h[0], status, oneLine(body, 200))
			}
		}
	}
	for _, ep := range []string{"/api/info", "/metrics", "/api/ready"} {
		if status, body := authRequest(t, "GET", g.base+ep, "", "", ""); status != http.StatusOK {
			t.Errorf("GET %s on this machine = %d %q, want 200", ep, status, oneLine(body, 200))
		}
	}
}

// Finding 10: a client that sends its headers, then one body byte now and then, held
// /slack/events (unauthenticated) and every POST open for as long as it liked: only the
// headers had a deadline. With http.body_timeout the body must arrive within it: the server
// answers 408 (or closes) and the connection ends, long before the trickle would.
func TestSlowBodyIsCutOff(t *testing.T) {
	p, _ := newSlackPlatform(t)
	vars := cloneVars(p.vars)
	model := newScriptedModel(t)
	for k, v := range model.vars() {
		vars[k] = v
	}
	vars["SLACK_SIGNING_SECRET"] = "slow-body-secret"
	g := startGateway(t, vars, "http: {body_timeout: 300ms}\n")
	addr := strings.TrimPrefix(g.base, "http://")
	for _, tt := range []struct {
		path, ctype string
		want        int // 0: the connection is closed, whatever the answer
	}{
		{"/slack/events", "application/json", 0},
		{"/api/chat", "application/json", http.StatusRequestTimeout},
		{"/api/approvals/decide", "application/json", http.StatusRequestTimeout},
		{"/api/memory/edit", "application/json", 0}, // memory is off: answered 404 before the body, then closed
	} {
		status, body, trickled := trickle(t, addr, tt.path, tt.ctype)
		switch {
		case trickled >= trickleBytes:
			t.Errorf("POST %s: the server read all %d trickled bytes (%d %q), want it cut off within http.body_timeout", tt.path, trickled, status, body)
		case tt.want != 0 && (status != tt.want || !strings.Contains(body, "http.body_timeout")):
			t.Errorf("POST %s trickled = %d %q, want %d naming http.body_timeout", tt.path, status, oneLine(body, 200), tt.want)
		}
	}
	// A body sent at once is read as before, and its answer streams for longer than the body
	// deadline: the deadline ends with the body.
	go func() {
		for end := time.Now().Add(waitTimeout); len(model.fake.ChatRequests()) == 0 && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond) // polling the fake model: nothing to wait on
		}
		<-time.After(3 * 300 * time.Millisecond) // three body deadlines pass mid-stream
		model.openStream()
	}()
	evs := postChat(t, g.base, "slow-stream", "stream a longer answer please")
	if last := evs[len(evs)-1]; last.Event != "done" || last.Data["status"] != "done" {
		t.Errorf("chat streamed past http.body_timeout ended with %s %v, want done", last.Event, last.Data)
	}
}

// trickleBytes is the Content-Length of a trickled body; trickle sends one byte every
// trickleEvery, so the whole body would take trickleBytes×trickleEvery (5 s).
const (
	trickleBytes = 100
	trickleEvery = 50 * time.Millisecond
)

// trickle posts a body to path one byte at a time and returns the server's answer (status 0
// when there was none), how many bytes it sent before the answer, and whether the server
// closed the connection after it.
func trickle(t *testing.T, addr, path, ctype string) (status int, body string, sent int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, addr, ctype, trickleBytes); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   string
		closed bool
	}
	got := make(chan answer, 1)
	go func() {
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			got <- answer{body: err.Error(), closed: errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = br.ReadByte()
		got <- answer{resp.StatusCode, string(b), errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)}
	}()
	tick := time.NewTicker(trickleEvery)
	defer tick.Stop()
	for sent < trickleBytes {
		select {
		case a := <-got:
			if !a.closed {
				t.Errorf("POST %s: the connection stayed open after the answer %d %q", path, a.status, a.body)
			}
			return a.status, a.body, sent
		case <-tick.C:
			if _, err := conn.Write([]byte{'{'}); err != nil {
				a := <-got
				return a.status, a.body, sent
			}
			sent++
		}
	}
	a := <-got
	return a.status, a.body, sent
}

// The server holds at most http.max_connections connections; the next one waits for a free
// slot (in the listen backlog) instead of taking a descriptor and a goroutine.
func TestConnectionsAreCapped(t *testing.T) {
	model := newScriptedModel(t)
	g := startGateway(t, model.vars(), "http: {max_connections: 2}\n")
	http.DefaultClient.CloseIdleConnections() // the start's probe would hold a slot
	addr := strings.TrimPrefix(g.base, "http://")
	hold := func() net.Conn { // a keep-alive connection that was served, and stays
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("holding a connection: %v", err)
		}
		resp.Body.Close()
		return c
	}
	a, b := hold(), hold()
	defer b.Close()
	quick := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{}}
	if resp, err := quick.Get(g.base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET /healthz with 2 of 2 connections held = %d, want it to wait for a free slot", resp.StatusCode)
	}
	a.Close()
	patient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	resp, err := patient.Get(g.base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz after a held connection closed: %v", err)
	}
	resp.Body.Close()
}
