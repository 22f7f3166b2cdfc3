package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/storage/sqlite"
)

// testEnv builds an env with the given variables and no TTY.
func testEnv(vars map[string]string, args ...string) (env, *syncBuffer, *syncBuffer) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	return env{args: args, stdin: strings.NewReader(""), stdout: out, stderr: errb,
		getenv: func(k string) string { return withTestUsers(vars)[k] }, environ: func() []string {
			var kv []string
			for k, v := range vars {
				kv = append(kv, k+"="+v)
			}
			return kv
		}}, out, errb
}

// withTestUsers lifts the per-user limits (agent.max_concurrent_turns_per_user, agent.user_rate)
// for the tests' synthetic users, each of whom runs many conversations at once, unless the test
// sets them itself. peruser_config_test.go and the pipeline's tests cover the limits.
func withTestUsers(vars map[string]string) map[string]string {
	out := map[string]string{"ECHOGATE_AGENT_MAX_CONCURRENT_TURNS_PER_USER": "-1", "ECHOGATE_AGENT_USER_RATE_PER_MINUTE": "-1"}
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a running gateway.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tt := range map[string]struct {
		file string
		vars map[string]string
		want string
	}{
		"unknown key":        {write("a.yaml", "agent:\n  max_iteration: 3\n"), nil, `agent.max_iteration: unknown key "max_iteration"`},
		"bad duration":       {write("b.yaml", "agent:\n  turn_timeout: soon\n"), nil, `"soon" is not a duration`},
		"bad on_busy":        {write("c.yaml", "agent:\n  on_busy: panic\n"), nil, "agent.on_busy"},
		"bad env value":      {"", map[string]string{"ECHOGATE_AGENT_MAX_ITERATIONS": "many"}, "ECHOGATE_AGENT_MAX_ITERATIONS"},
		"bad slack token":    {"", map[string]string{"SLACK_BOT_TOKEN": "xoxp-123"}, "slack.bot_token"},
		"approver format":    {"", map[string]string{"ECHOGATE_APPROVERS": "U123"}, "approval.approvers"},
		"public addr no tok": {"", map[string]string{"ECHOGATE_HTTP_ADDR": "0.0.0.0:8080"}, "http.auth_token"},
		"bad database url":   {"", map[string]string{"DATABASE_URL": "mysql://x"}, "database.url"},
		"bad pooler":         {"", map[string]string{"DATABASE_URL": "postgres://h/db", "ECHOGATE_DATABASE_POOLER": "statement"}, "database.pooler"},
		"pooler sans url":    {"", map[string]string{"ECHOGATE_DATABASE_POOLER": "transaction"}, "database.pooler"},
		"short lease ttl":    {"", map[string]string{"DATABASE_URL": "postgres://h/db", "ECHOGATE_DATABASE_LEASE_TTL": "10ms"}, "database.lease_ttl"},
		"missing file":       {filepath.Join(dir, "nope.yaml"), nil, "nope.yaml"},
		"bad tool approval":  {write("d.yaml", "tools:\n  http_fetch: {approval: maybe}\n"), nil, "tools.http_fetch.approval"},
	} {
		t.Run(name, func(t *testing.T) {
			vars := map[string]string{"ECHOGATE_DATA_DIR": dir}
			for k, v := range tt.vars {
				vars[k] = v
			}
			args := []string{"migrate"}
			if tt.file != "" {
				args = []string{"--config", tt.file, "migrate"}
			}
			e, _, errb := testEnv(vars, args...)
			if code := run(context.Background(), e); code != 2 {
				t.Fatalf("exit = %d, want 2 (stderr %q)", code, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr = %q, want it to name %q", errb.String(), tt.want)
			}
		})
	}
}

func TestConfigEnvAndExpansion(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "models:\n  default: ${MODEL_NAME:-fallback-model}\n  providers: [{name: local, base_url: '${BASE}', api_key: '${KEY}'}]\nagent:\n  max_iterations: 4\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"BASE": "http://127.0.0.1:1/v1", "KEY": "k1", "ECHOGATE_AGENT_MAX_ITERATIONS": "6", "ECHOGATE_APPROVERS": "slack:U1, discord:42"}
	cfg, err := loadConfig(p, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Models.Default != "fallback-model" || cfg.Models.Providers[0].BaseURL != "http://127.0.0.1:1/v1" || cfg.Models.Providers[0].APIKey != "k1" {
		t.Errorf("expansion: %+v", cfg.Models)
	}
	if cfg.Agent.MaxIterations != 6 {
		t.Errorf("env override: max_iterations = %d, want 6", cfg.Agent.MaxIterations)
	}
	if got := strings.Join(cfg.Approval.Approvers, "|"); got != "slack:U1|discord:42" {
		t.Errorf("approvers = %q", got)
	}
	// No YAML at all: the SPEC variables alone.
	cfg, err = loadConfig("", func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-x", "ECHOGATE_MODEL": "m1", "ECHOGATE_LOG_FORMAT": "json"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.demoMode() || cfg.Models.Providers[0].BaseURL != defaultBase || cfg.Models.Default != "m1" || cfg.Log.Format != "json" {
		t.Errorf("env-only config = %+v", cfg)
	}
}

func TestVersion(t *testing.T) {
	e, out, _ := testEnv(nil, "version")
	if code := run(context.Background(), e); code != 0 || !strings.HasPrefix(out.String(), "echogate ") {
		t.Fatalf("version: exit %d, out %q", code, out.String())
	}
}

// TestChatOneShotWithTool is `echogate chat -m "what time is it"` against an OpenAI-compatible fake
// that calls current_time and then answers.
func TestChatOneShotWithTool(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-test"})
	defer fake.Close()
	fake.Enqueue(agenttest.ToolAnswer(echogate.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`}))
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.TextAnswer("It is noon, Monday."), true
	})
	dir := t.TempDir()
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-test", "ECHOGATE_DATA_DIR": dir}
	e, out, errb := testEnv(vars, "chat", "-m", "what time is it", "--session", "t1")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "It is noon, Monday." {
		t.Errorf("stdout = %q, want the answer only", got)
	}
	if strings.Contains(errb.String(), "sk-test") {
		t.Error("the API key appeared in the log")
	}
	st, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "echogate.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hist, err := st.History(context.Background(), "console:t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, m := range hist {
		switch {
		case len(m.Message.ToolCalls) > 0:
			steps = append(steps, "call:"+m.Message.ToolCalls[0].Name)
		case m.Message.Role == echogate.RoleTool:
			steps = append(steps, "result:"+m.Message.Name)
		default:
			steps = append(steps, string(m.Message.Role))
		}
	}
	if got, want := strings.Join(steps, " → "), "user → call:current_time → result:current_time → assistant"; got != want {
		t.Errorf("transcript = %s, want %s", got, want)
	}
	if !strings.Contains(hist[2].Message.Content, `"timezone":"UTC"`) {
		t.Errorf("tool result = %q, want the current_time output", hist[2].Message.Content)
	}
}

func TestChatModelDownGivesFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("models:\n  providers: [{name: down, base_url: 'http://%s/v1', api_key: k, max_retries: -1}]\n", addr)), 0o600)
	e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": dir, "ECHOGATE_LOG_LEVEL": "info"}, "--config", cfgPath, "chat", "-m", "hi")
	code := run(context.Background(), e)
	if code == 0 {
		t.Fatalf("exit 0 for a failed turn; stdout %q", out.String())
	}
	text := out.String() + errb.String()
	// The terminal is the operator's: it shows the cause (and the turn's ref), not the users' fallback.
	if !strings.Contains(text, "error: router: every model failed") || !strings.Contains(text, "check OPENAI_BASE_URL and the network (ref t_") {
		t.Errorf("output %q lacks the error's cause and the turn's ref", text)
	}
	if !strings.Contains(errb.String(), "turn failed") || !strings.Contains(errb.String(), "turn=t_") {
		t.Errorf("log %q lacks the error with the turn id", errb.String())
	}
}

// startServe runs `echogate serve` in-process and returns its base URL.
func startServe(t *testing.T, vars map[string]string, args ...string) (string, *syncBuffer, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	vars["ECHOGATE_HTTP_ADDR"] = addr
	if vars["ECHOGATE_DATA_DIR"] == "" {
		vars["ECHOGATE_DATA_DIR"] = t.TempDir()
	}
	e, _, errb := testEnv(vars, append(args, "serve")...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, e) }()
	base := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Ready, not just alive: the channels run and accept messages.
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop := func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d after SIGTERM-equivalent, want 0: %s", code, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	}
	return base, errb, stop
}

type sseEvent struct {
	ID, Event string
	Data      map[string]any
}

func postChat(t *testing.T, base, session, text string) []sseEvent {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"session": session, "user": "u1", "text": text})
	resp, err := http.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/chat = %d %s", resp.StatusCode, b)
	}
	return readSSE(t, resp.Body)
}

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(line[6:]), &cur.Data)
		}
	}
	return out
}

func TestServeWebChatStreamsAndShutsDown(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{})
	defer fake.Close()
	hold := make(chan struct{})
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		return agenttest.Answer{Text: "Hello from the fake model, streamed in pieces.", Hold: hold}, true
	})
	base, logs, stop := startServe(t, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "k"})
	defer stop()

	// Two sessions: both requests reach the model while it holds every answer, so they run in
	// parallel (total time one model latency, not two).
	results := make(chan []sseEvent, 2)
	for _, s := range []string{"a", "b"} {
		go func() { results <- postChat(t, base, s, "hello") }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(fake.ChatRequests()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d model requests in flight; sessions did not run in parallel", len(fake.ChatRequests()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(hold)
	for i := 0; i < 2; i++ {
		evs := <-results
		var deltas int
		var text string
		for _, ev := range evs {
			if ev.Event == "delta" {
				deltas++
				text += ev.Data["text"].(string)
			}
		}
		last := evs[len(evs)-1]
		if last.Event != "done" || last.Data["status"] != "done" || deltas < 2 || text != "Hello from the fake model, streamed in pieces." {
			t.Errorf("stream: %d deltas %q, last %s %v; want deltas then done", deltas, text, last.Event, last.Data)
		}
	}

	resp, err := http.Get(base + "/api/ready")
	if err != nil {
		t.Fatal(err)
	}
	var ready map[string]string
	json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(ready["storage"], "ok") {
		t.Errorf("/api/ready = %d %v", resp.StatusCode, ready)
	}

	// Bad input gets 400 naming the problem.
	for body, want := range map[string]string{
		`{"session":"a","text":`:                                      "malformed JSON",
		`{"session":"a","text":"   "}`:                                "text is empty",
		`{"session":"a","text":"` + strings.Repeat("x", 40000) + `"}`: "text",
	} {
		resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 && resp.StatusCode != 413 || !strings.Contains(string(b), want) {
			t.Errorf("POST %.40s… = %d %s, want 400 naming %q", body, resp.StatusCode, b, want)
		}
	}

	waitMetrics(t, base, `echogate_turns_total{channel="web",status="done"} 2`, "echogate_turn_duration_seconds_bucket", "echogate_model_calls_total",
		`echogate_stage_runs_total{agent="default",channel="web",outcome="ok",stage="inference"} 2`, "echogate_stage_duration_seconds_bucket")
	_ = logs
}

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := loadConfig("../../echogate.example.yaml", func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-x"}[k]
	})
	if err != nil {
		t.Fatalf("echogate.example.yaml does not load: %v", err)
	}
	if cfg.Agent.MaxIterations != 8 || cfg.Approval.OnTimeout != "deny" || cfg.Models.Prices["gpt-4o-mini"].OutputPerMTok != 0.60 {
		t.Errorf("example values not read: %+v", cfg.Agent)
	}
}

func TestHealthcheck(t *testing.T) {
	base, _, stop := startServe(t, map[string]string{})
	defer stop()
	addr := strings.TrimPrefix(base, "http://")
	e, _, errb := testEnv(map[string]string{"ECHOGATE_HTTP_ADDR": addr, "ECHOGATE_DATA_DIR": t.TempDir()}, "healthcheck")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("healthcheck = %d (%s), want 0", code, errb.String())
	}
}
