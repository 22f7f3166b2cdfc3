package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/tooltest"
)

// bound is how long a test waits for something a real process or socket must do. It bounds a
// failure; nothing waits for it to pass.
const bound = 20 * time.Second

func testLog() *slog.Logger {
	if os.Getenv("MCPTEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// stdioServer configures the test binary as a stdio MCP server.
func stdioServer(name string, env map[string]string) ServerConfig {
	// A race-enabled binary sleeps 1s at exit unless told otherwise; the server restarts often.
	e := map[string]string{envServe: "1", "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Name: name, Command: os.Args[0], Env: e}
}

// fastConfig reconnects quickly so that restart tests take milliseconds.
func fastConfig(servers ...ServerConfig) Config {
	return Config{Servers: servers, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
		ConnectTimeout: bound, Breaker: tools.BreakerConfig{CoolDown: 50 * time.Millisecond}}
}

// start runs a Manager until the test ends; the cleanup checks that Run returns.
func start(t *testing.T, cfg Config) (*Manager, *tools.Registry) {
	t.Helper()
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, reg, testLog(), nil)
	if err != nil {
		t.Fatalf("New = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil after cancel", err)
			}
		case <-time.After(bound):
			t.Errorf("Run did not return within %s of cancel", bound)
		}
		if specs := reg.Specs(); len(specs) != 0 {
			t.Errorf("after Run returned the registry still holds %d tools, want 0", len(specs))
		}
	})
	return m, reg
}

// waitFor waits until cond holds, re-checking at every change the Manager reports.
func waitFor(t *testing.T, m *Manager, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(bound)
	for {
		ch := m.Updated()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; status: %+v", what, m.Status())
		}
	}
}

func has(reg *tools.Registry, name string) func() bool {
	return func() bool { _, ok := reg.Get(name); return ok }
}

func lacks(reg *tools.Registry, name string) func() bool {
	return func() bool { _, ok := reg.Get(name); return !ok }
}

func call(t *testing.T, reg *tools.Registry, name, args string) tools.Result {
	t.Helper()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("registry has no %s; has %v", name, names(reg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := tool.Call(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s) error = %v, want nil", name, args, err)
	}
	return res
}

func names(reg *tools.Registry) []string {
	var out []string
	for _, s := range reg.Specs() {
		out = append(out, s.Name)
	}
	return out
}

func specOf(t *testing.T, reg *tools.Registry, name string) tools.Spec {
	t.Helper()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("registry has no %s; has %v", name, names(reg))
	}
	return tool.Spec()
}

func TestStdioServerTools(t *testing.T) {
	t.Setenv("ECHOGATE_TEST_SECRET", "sk-do-not-leak")
	sc := stdioServer("wx", map[string]string{"WX_REGION": "north"})
	sc.ToolSafety = map[string]string{"weather": "safe", "env": "safe"}
	sc.MaxOutput = 1024
	m, reg := start(t, fastConfig(sc))
	waitFor(t, m, "wx tools", has(reg, "wx__weather"))
	waitFor(t, m, "all wx tools", has(reg, "wx__remove_fail"))

	want := []string{"wx__add_tool", "wx__big", "wx__crash", "wx__env", "wx__fail", "wx__image", "wx__remove_fail", "wx__structured", "wx__weather"}
	if got := names(reg); !slices.Equal(got, want) {
		t.Errorf("registry = %v, want %v (all pages listed)", got, want)
	}

	weather := specOf(t, reg, "wx__weather")
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(weather.Parameters, &schema); err != nil || schema.Type != "object" || schema.Properties["city"] == nil {
		t.Errorf("wx__weather parameters = %s, want an object schema with city", weather.Parameters)
	}
	if weather.Description != "[wx] Current weather for a city." {
		t.Errorf("wx__weather description = %q, want %q", weather.Description, "[wx] Current weather for a city.")
	}
	for name, want := range map[string]tools.Safety{"wx__weather": tools.Safe, "wx__fail": tools.Sensitive, "wx__crash": tools.Sensitive} {
		if got := specOf(t, reg, name).Safety; got != want {
			t.Errorf("%s safety = %s, want %s", name, got, want)
		}
	}

	for _, tc := range []struct {
		tool, args string
		isError    bool
		contains   []string
		excludes   []string
	}{
		{"wx__weather", `{"city":"Oslo"}`, false, []string{"<<<tool output from wx (untrusted)>>>\nSunny in Oslo, 21°C\n<<<end>>>"}, nil},
		{"wx__fail", `{}`, true, []string{"weather station offline", "(untrusted)"}, nil},
		{"wx__big", `{"n":5000}`, false, []string{"[output truncated: 1024 of 5000 bytes shown]"}, []string{strings.Repeat("x", 1025)}},
		{"wx__image", `{}`, false, []string{"radar:\n[image: image/png, 12 KiB]"}, nil},
		{"wx__structured", `{"city":"Bergen"}`, false, []string{`"temp_c":21`}, []string{"structured content:"}},
		{"wx__env", `{"name":"WX_REGION"}`, false, []string{"WX_REGION=north"}, nil},
		{"wx__env", `{"name":"ECHOGATE_TEST_SECRET"}`, false, []string{"ECHOGATE_TEST_SECRET=(unset)"}, []string{"sk-do-not-leak"}},
		{"wx__weather", `{"city":`, true, []string{"invalid arguments for wx__weather"}, nil},
		{"wx__weather", `{"city":42}`, true, []string{"city", "string"}, nil}, // the server's own validation
	} {
		res := call(t, reg, tc.tool, tc.args)
		if res.IsError != tc.isError {
			t.Errorf("%s(%s).IsError = %v, want %v (content %q)", tc.tool, tc.args, res.IsError, tc.isError, res.Content)
		}
		for _, s := range tc.contains {
			if !strings.Contains(res.Content, s) {
				t.Errorf("%s(%s) = %q, want it to contain %q", tc.tool, tc.args, res.Content, s)
			}
		}
		for _, s := range tc.excludes {
			if strings.Contains(res.Content, s) {
				t.Errorf("%s(%s) = %q, want it not to contain %q", tc.tool, tc.args, res.Content, s)
			}
		}
	}

	tool, _ := reg.Get("wx__weather")
	tooltest.RunConformance(t, tool, []tooltest.Case{
		{Name: "oslo", Args: json.RawMessage(`{"city":"Oslo"}`), WantContains: "Sunny in Oslo"},
		{Name: "empty city", Args: json.RawMessage(`{"city":""}`), WantContains: "Sunny in"},
	})

	st := m.Status()
	if len(st) != 1 || !st[0].Connected || st[0].Transport != "stdio" || len(st[0].Tools) != len(want) || st[0].LastError != "" {
		t.Errorf("Status = %+v, want wx connected over stdio with %d tools", st, len(want))
	}
}

func TestStdioServerCrashDisappearsAndComesBack(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m, reg := start(t, fastConfig(stdioServer("wx", map[string]string{envGate: gate, envTools: "weather,crash"})))
	waitFor(t, m, "wx__weather", has(reg, "wx__weather"))
	weather, _ := reg.Get("wx__weather")

	// The server goes down and stays down until the gate reopens.
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	crash, _ := reg.Get("wx__crash")
	res, err := crash.Call(ctx, json.RawMessage(`{}`))
	if err != nil || !res.IsError {
		t.Errorf("crash() = %+v, %v; want an IsError result (the breaker turns the lost connection into one)", res, err)
	}
	waitFor(t, m, "wx tools to disappear", func() bool { return len(reg.Specs()) == 0 })
	waitFor(t, m, "a failed reconnect", func() bool {
		st := m.Status()[0]
		return !st.Connected && st.Attempts >= 2 && strings.Contains(st.LastError, "gate closed")
	})

	// A call through a tool the model still holds answers at once with an IsError result.
	began := time.Now()
	res, err = weather.Call(ctx, json.RawMessage(`{"city":"Oslo"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "MCP server wx is not connected") {
		t.Errorf("weather on a down server = %+v, %v; want an IsError result naming the server", res, err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("weather on a down server took %s, want an immediate answer", took)
	}

	// The server is restartable again: the supervisor reconnects and the tools come back.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "wx__weather to come back", has(reg, "wx__weather"))
	if res := call(t, reg, "wx__weather", `{"city":"Oslo"}`); res.IsError || !strings.Contains(res.Content, "Sunny in Oslo") {
		t.Errorf("weather after restart = %+v, want the server's answer", res)
	}
	if st := m.Status()[0]; !st.Connected || st.Attempts != 0 || st.LastError != "" {
		t.Errorf("status after restart = %+v, want connected with no error", st)
	}
}

func TestListChangedAddsAndRemovesTools(t *testing.T) {
	m, reg := start(t, fastConfig(stdioServer("wx", map[string]string{envTools: "weather,fail,add_tool,remove_fail"})))
	waitFor(t, m, "wx tools", has(reg, "wx__add_tool"))
	if _, ok := reg.Get("wx__forecast"); ok {
		t.Fatal("wx__forecast registered before the server added it")
	}
	if res := call(t, reg, "wx__add_tool", `{}`); res.IsError {
		t.Fatalf("add_tool = %+v", res)
	}
	waitFor(t, m, "wx__forecast after tools/list_changed", has(reg, "wx__forecast"))
	if res := call(t, reg, "wx__forecast", `{"city":"Oslo"}`); !strings.Contains(res.Content, "Rain in Oslo tomorrow") {
		t.Errorf("forecast = %q, want the new tool's answer", res.Content)
	}
	if res := call(t, reg, "wx__remove_fail", `{}`); res.IsError {
		t.Fatalf("remove_fail = %+v", res)
	}
	waitFor(t, m, "wx__fail to be removed", lacks(reg, "wx__fail"))
	if !has(reg, "wx__weather")() {
		t.Error("wx__weather vanished with wx__fail")
	}
}

func TestStreamableHTTPServer(t *testing.T) {
	hs := newHTTPServer(t, "weather,fail")
	sc := ServerConfig{Name: "docs", URL: hs.URL + "/mcp?token=url-secret", Headers: map[string]string{"Authorization": "Bearer hdr-secret", "X-Tenant": "acme"}, Safety: "safe"}
	m, reg := start(t, fastConfig(sc))
	waitFor(t, m, "docs__weather", has(reg, "docs__weather"))

	if got := specOf(t, reg, "docs__weather").Safety; got != tools.Safe {
		t.Errorf("docs__weather safety = %s, want safe (the server's class)", got)
	}
	if res := call(t, reg, "docs__weather", `{"city":"Lima"}`); res.IsError || !strings.Contains(res.Content, "Sunny in Lima") {
		t.Errorf("docs__weather = %+v, want the server's answer", res)
	}
	if res := call(t, reg, "docs__fail", `{}`); !res.IsError || !strings.Contains(res.Content, "weather station offline") {
		t.Errorf("docs__fail = %+v, want an IsError result with the server's text", res)
	}
	auth := hs.seen("Authorization")
	if len(auth) == 0 || slices.ContainsFunc(auth, func(v string) bool { return v != "Bearer hdr-secret" }) {
		t.Errorf("Authorization headers received = %q, want Bearer hdr-secret on every request", auth)
	}
	if tenant := hs.seen("X-Tenant"); len(tenant) == 0 {
		t.Error("X-Tenant header never arrived")
	}
	st := m.Status()[0]
	if st.Transport != "http" || !st.Connected || strings.Contains(st.Target, "url-secret") {
		t.Errorf("Status = %+v, want connected over http with the URL's query redacted", st)
	}
}

func TestDownServersDoNotBlock(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there any more

	hs := newHTTPServer(t, "weather")
	m, reg := start(t, fastConfig(
		ServerConfig{Name: "gone", Command: filepath.Join(t.TempDir(), "no-such-server")},
		ServerConfig{Name: "refused", URL: closedURL},
		ServerConfig{Name: "up", URL: hs.URL},
	))
	waitFor(t, m, "up__weather", has(reg, "up__weather"))
	if res := call(t, reg, "up__weather", `{"city":"Rome"}`); res.IsError {
		t.Errorf("up__weather with two servers down = %+v, want the answer", res)
	}
	waitFor(t, m, "both down servers to report errors", func() bool {
		st := m.Status()
		return st[0].Attempts > 0 && st[0].LastError != "" && st[1].Attempts > 0 && st[1].LastError != ""
	})
	st := m.Status()
	if !strings.Contains(st[0].LastError, "no-such-server") {
		t.Errorf("gone's last error = %q, want it to name the command", st[0].LastError)
	}
	if st[0].Connected || st[1].Connected || !st[2].Connected {
		t.Errorf("connected = %v %v %v, want false false true", st[0].Connected, st[1].Connected, st[2].Connected)
	}
	for _, n := range names(reg) {
		if strings.HasPrefix(n, "gone__") || strings.HasPrefix(n, "refused__") {
			t.Errorf("registry holds %s of a server that is down", n)
		}
	}
}

func TestRunTwice(t *testing.T) {
	reg, _ := tools.NewRegistry()
	m, err := New(fastConfig(), reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run with an ended ctx = %v, want nil", err)
	}
	if err := m.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run = %v, want ErrRunning", err)
	}
}

func TestNotConnectedCallIsImmediateError(t *testing.T) {
	reg, _ := tools.NewRegistry()
	m, err := New(fastConfig(stdioServer("wx", nil)), reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := &remoteTool{srv: m.servers[0], remote: "weather", spec: tools.Spec{Name: "wx__weather"}}
	res, err := rt.Call(context.Background(), json.RawMessage(`{"city":"Oslo"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "not connected (connecting)") {
		t.Errorf("Call before Run = %+v, %v; want an IsError result", res, err)
	}
}

func TestHTTPServerKilledAndRestarted(t *testing.T) {
	srv := newTestServer("weather", func() {})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	serve := func(addr string) *http.Server {
		t.Helper()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		hs := &http.Server{Handler: handler}
		go func() { _ = hs.Serve(ln) }()
		t.Cleanup(func() { _ = hs.Close() })
		return hs
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	first := serve(addr)

	cfg := fastConfig(ServerConfig{Name: "docs", URL: "http://" + addr + "/mcp"})
	cfg.PingInterval = 20 * time.Millisecond // how a dead HTTP server is noticed between calls
	m, reg := start(t, cfg)
	waitFor(t, m, "docs__weather", has(reg, "docs__weather"))

	_ = first.Close() // the server dies: listener and every connection closed
	waitFor(t, m, "docs__weather to disappear", lacks(reg, "docs__weather"))
	if st := m.Status()[0]; st.Connected || st.LastError == "" {
		t.Errorf("status after the server died = %+v, want disconnected with an error", st)
	}

	serve(addr)
	waitFor(t, m, "docs__weather to come back", has(reg, "docs__weather"))
	if res := call(t, reg, "docs__weather", `{"city":"Quito"}`); res.IsError || !strings.Contains(res.Content, "Sunny in Quito") {
		t.Errorf("docs__weather after restart = %+v, want the answer", res)
	}
}

func TestBreakerOpensOnTransportFailures(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(stdioServer("wx", map[string]string{envTools: "weather,crash", envGate: gate}))
	cfg.Breaker = tools.BreakerConfig{Failures: 1, CoolDown: time.Hour}
	m, reg := start(t, cfg)
	waitFor(t, m, "wx__crash", has(reg, "wx__crash"))
	crash, _ := reg.Get("wx__crash")
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if res, err := crash.Call(ctx, json.RawMessage(`{}`)); err != nil || !res.IsError {
		t.Fatalf("crash() = %+v, %v; want an IsError result", res, err)
	}
	if b, ok := crash.(*tools.Breaker); !ok || b.State() != "open" {
		t.Errorf("breaker of wx__crash after a lost connection = %v, want open", crash)
	}
	// The reconnected server registers the same tool again; its breaker (and state) is kept.
	waitFor(t, m, "wx__crash to disappear", lacks(reg, "wx__crash"))
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "wx__crash back", has(reg, "wx__crash"))
	again, _ := reg.Get("wx__crash")
	if again != crash {
		t.Error("reconnect replaced the tool; want the same breaker-wrapped tool kept across sessions")
	}
	res, err := again.Call(ctx, json.RawMessage(`{}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "circuit open") {
		t.Errorf("crash() with the circuit open = %+v, %v; want a refusal without running the tool", res, err)
	}
}

// TestToolInRegistryMeansConnected: whoever finds a server's tool in the registry reads the
// server as connected in Status. The first listing used to register the tools and only then,
// under a second lock, mark the server connected; a reader between the two saw its tools
// (callable) on a server Status called down (TestDownServersDoNotBlock failed so, 1 in ~300
// runs under load). The reader here spins so it lands in that window whenever it exists.
func TestToolInRegistryMeansConnected(t *testing.T) {
	for i := range 20 {
		hs := newHTTPServer(t, "weather")
		m, reg := start(t, fastConfig(ServerConfig{Name: "up", URL: hs.URL}))
		deadline := time.Now().Add(bound)
		for !has(reg, "up__weather")() {
			if time.Now().After(deadline) {
				t.Fatalf("up__weather never registered; status: %+v", m.Status())
			}
			runtime.Gosched()
		}
		if st := m.Status()[0]; !st.Connected || len(st.Tools) == 0 {
			t.Fatalf("run %d: Status once up__weather is in the registry = %+v, want connected with its tools", i, st)
		}
	}
}
