package main

// Shared machinery of the end-to-end tests: `echogate serve` run in-process (through run, as
// startServe does) or as the real binary (for kill -9 tests), a scripted OpenAI-wire model behind
// a small proxy that notices cancelled model calls, and one "platform" abstraction over the Slack
// and Discord fakes so approval scenarios are written once and run through both real adapters.

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
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
	"github.com/echogate/echogate/pipeline"
)

// waitTimeout bounds every wait for the gateway to do something. It is generous because the
// race detector on a 2-core machine is slow; passing tests never wait that long.
const waitTimeout = 15 * time.Second

// e2eBinary is the echogate binary built once per test process (by the first test that needs
// it) into a temporary directory that TestMain removes.
var e2eBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if n := pipeline.RefusedTransitions(); n != 0 && code == 0 {
		// A refused turn transition is a pipeline bug, even when the turn's failure went unseen.
		fmt.Fprintf(os.Stderr, "FAIL: %d refused turn transitions in the in-process tests (see the log lines \"pipeline: refused turn transition\")\n", n)
		code = 1
	}
	if e2eBinary.dir != "" {
		_ = os.RemoveAll(e2eBinary.dir)
	}
	os.Exit(code)
}

// binaryPath builds ./cmd/echogate with `go build` once and returns the binary's path.
func binaryPath(t *testing.T) string {
	t.Helper()
	e2eBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "echogate-e2e-")
		if err != nil {
			e2eBinary.err = err
			return
		}
		e2eBinary.dir = dir
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out := filepath.Join(dir, "echogate")
		cmd := exec.Command(goBin, "build", "-o", out, ".")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			e2eBinary.err = fmt.Errorf("go build: %v: %s", err, stderr.String())
			return
		}
		e2eBinary.path = out
	})
	if e2eBinary.err != nil {
		t.Fatalf("build the echogate binary: %v", e2eBinary.err)
	}
	return e2eBinary.path
}

// logBuffer collects a gateway's log and lets a test wait for a line.
type logBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return n, err
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLine waits until a log line contains every one of parts.
func (l *logBuffer) waitLine(t *testing.T, parts ...string) string {
	t.Helper()
	return l.waitMatch(t, fmt.Sprintf("a log line with %q", parts), func(line string) bool { return containsAll(line, parts...) })
}

// waitMatch waits until a log line satisfies match.
func (l *logBuffer) waitMatch(t *testing.T, what string, match func(line string) bool) string {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch := l.changed
		text := l.b.String()
		l.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			if match(line) {
				return line
			}
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %s within %s", what, waitTimeout)
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// e2eGateway is a running `echogate serve`.
type e2eGateway struct {
	base string
	logs *logBuffer
	// kill ends the process with SIGKILL (binary only); stop ends it gracefully; signal sends
	// the process a signal (binary only).
	kill   func()
	stop   func()
	signal func(os.Signal)
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// writeConfig writes a YAML config file into a temp dir and returns its path ("" for none).
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	if yaml == "" {
		return ""
	}
	p := filepath.Join(t.TempDir(), "echogate.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startGateway runs `echogate [--config FILE] serve` in-process with the given environment,
// waits for /healthz, and stops it (expecting exit 0) when the test ends.
func startGateway(t *testing.T, vars map[string]string, yaml string) *e2eGateway {
	t.Helper()
	return startGatewayFile(t, vars, writeConfig(t, yaml))
}

// startGatewayFile is startGateway with the configuration file at path ("" for none).
func startGatewayFile(t *testing.T, vars map[string]string, path string) *e2eGateway {
	t.Helper()
	return startGatewayCtx(t, context.Background(), vars, path)
}

// startGatewayCtx is startGatewayFile with serve's context made from parent (a test's
// scheduler clock, withScheduleClock).
func startGatewayCtx(t *testing.T, parent context.Context, vars map[string]string, path string) *e2eGateway {
	t.Helper()
	vars = cloneVars(vars)
	addr := freeAddr(t)
	vars["ECHOGATE_HTTP_ADDR"] = addr
	if vars["ECHOGATE_DATA_DIR"] == "" {
		vars["ECHOGATE_DATA_DIR"] = t.TempDir()
	}
	var args []string
	if path != "" {
		args = append(args, "--config", path)
	}
	e, _, _ := testEnv(vars, append(args, "serve")...)
	logs := newLogBuffer()
	e.stderr = logs
	ctx, cancel := context.WithCancel(parent)
	done := make(chan int, 1)
	go func() { done <- run(ctx, e) }()
	g := &e2eGateway{base: "http://" + addr, logs: logs}
	waitHealthy(t, g.base, logs, func() (int, bool) {
		select {
		case code := <-done:
			return code, true
		default:
			return 0, false
		}
	})
	var once sync.Once
	g.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("serve exited %d after shutdown, want 0", code)
				}
			case <-time.After(40 * time.Second):
				t.Error("serve did not stop within 40s")
			}
		})
	}
	g.kill = func() { t.Fatal("kill needs the binary gateway (startBinaryGateway)") }
	g.signal = func(os.Signal) { t.Fatal("signal needs the binary gateway (startBinaryGateway)") }
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return g
}

// startBinaryGateway runs the built binary as `echogate [--config FILE] serve` with exactly the
// given environment (plus PATH and HOME), waits for /healthz, and ends it when the test ends.
func startBinaryGateway(t *testing.T, vars map[string]string, cfgPath string) *e2eGateway {
	t.Helper()
	bin := binaryPath(t)
	vars = cloneVars(vars)
	addr := freeAddr(t)
	vars["ECHOGATE_HTTP_ADDR"] = addr
	args := []string{}
	if cfgPath != "" {
		args = append(args, "--config", cfgPath)
	}
	cmd := exec.Command(bin, append(args, "serve")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range withTestUsers(vars) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := newLogBuffer()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var exitErr error
	exited := false
	g := &e2eGateway{base: "http://" + addr, logs: logs}
	waitHealthy(t, g.base, logs, func() (int, bool) {
		select {
		case err := <-done:
			exited, exitErr = true, err
			return cmd.ProcessState.ExitCode(), true
		default:
			return 0, false
		}
	})
	var once sync.Once
	end := func(sig os.Signal) {
		once.Do(func() {
			if exited {
				return
			}
			_ = cmd.Process.Signal(sig)
			select {
			case exitErr = <-done:
			case <-time.After(40 * time.Second):
				_ = cmd.Process.Kill()
				exitErr = <-done
				t.Errorf("echogate (pid %d) did not exit within 40s of %v", cmd.Process.Pid, sig)
			}
			exited = true
			if sig == syscall.SIGTERM && exitErr != nil {
				t.Errorf("echogate exited with %v after SIGTERM, want 0", exitErr)
			}
		})
	}
	g.kill = func() { end(syscall.SIGKILL) }
	g.signal = func(sig os.Signal) { _ = cmd.Process.Signal(sig) }
	g.stop = func() { end(syscall.SIGTERM) }
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gateway (binary) log:\n%s", logs.String())
		}
	})
	return g
}

func cloneVars(vars map[string]string) map[string]string {
	out := make(map[string]string, len(vars)+2)
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// waitHealthy polls /healthz (the process starts listening asynchronously) until it answers or
// the gateway exits.
func waitHealthy(t *testing.T, base string, logs *logBuffer, exited func() (int, bool)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if code, ok := exited(); ok {
			t.Fatalf("serve exited %d before it was healthy:\n%s", code, logs.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not healthy within 30s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling an HTTP port: nothing to wait on
	}
}

// readyz returns the readiness status and its details: GET /api/ready (from this machine, so
// without a token), which answers /readyz's status with each part's state.
func readyz(t *testing.T, base string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get(base + "/api/ready")
	if err != nil {
		t.Fatalf("GET /api/ready: %v", err)
	}
	defer resp.Body.Close()
	body := map[string]string{}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /api/ready: body is not a JSON object: %v", err)
	}
	return resp.StatusCode, body
}

// waitReadyz polls the readiness (readyz) until its status is want and the named entry satisfies ok.
func waitReadyz(t *testing.T, base string, want int, entry string, ok func(string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		code, body := readyz(t, base)
		if code == want && ok(body[entry]) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %v, want %d with a matching %q entry", code, body, want, entry)
		}
		time.Sleep(10 * time.Millisecond) // polling an HTTP endpoint: nothing to wait on
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s = %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// pendingApprovals lists /api/approvals.
func pendingApprovals(t *testing.T, base string) []map[string]any {
	t.Helper()
	var out []map[string]any
	getJSON(t, base+"/api/approvals", &out)
	return out
}

// --- the scripted model ---

// Texts the scripted model answers with.
const (
	storyText     = "Once upon a time there was a gateway that streamed every answer piece by piece, and then it stopped."
	afterToolText = "Answer after tool: "
	echoText      = "You said: "
	askQuestion   = "Which city do you mean?"
)

// scriptedModel is an OpenAI-wire fake. It answers from the last message of each request: after
// a tool result it answers naming the result; "what time" calls current_time, "ask me" calls
// ask_user, "long story" streams a story that never finishes (it holds until the client goes
// away); anything else is echoed.
type scriptedModel struct {
	fake *agenttest.FakeOpenAI
	hold chan struct{}
	// streamGate holds an answer to "stream a longer answer" after its first fragments until
	// openStream: the test decides when the turn may finish, so the reply is seen mid-stream
	// whatever the machine's load (a reply finished before the first stream update is posted
	// at once instead, which is right for users but not what a streaming test checks).
	streamGate     chan struct{}
	openStreamOnce sync.Once
}

// openStream lets a held "stream a longer answer" reply finish.
func (m *scriptedModel) openStream() { m.openStreamOnce.Do(func() { close(m.streamGate) }) }

func newScriptedModel(t *testing.T) *scriptedModel {
	t.Helper()
	m := &scriptedModel{fake: agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"}), hold: make(chan struct{}), streamGate: make(chan struct{})}
	m.fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		last := req.Last()
		if last.Role == "tool" {
			if strings.Contains(req.LastUser(), "[quiet-after-tool]") { // e2e_schedule_prompt_test.go: quiet_if after an approval
				return agenttest.TextAnswer("NOTHING"), true
			}
			return agenttest.TextAnswer(afterToolText + oneLine(last.Content, 120)), true
		}
		text := strings.ToLower(req.LastUser())
		switch {
		case strings.Contains(text, "what time"):
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`}), true
		case strings.Contains(text, "remind me in 10 minutes to"):
			// The schedule tool: a one-shot reminder of the rest of the message (e2e_schedule_test.go).
			_, what, _ := strings.Cut(req.LastUser(), "remind me in 10 minutes to ")
			args, _ := json.Marshal(map[string]string{"action": "create", "prompt": what, "at": "in 10m"})
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "schedule", Arguments: string(args)}), true
		case strings.Contains(text, "run the cleanup"):
			// A sensitive call in a scheduled run (e2e_schedule_test.go): run_command is destructive.
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "run_command", Arguments: `{"command":"true"}`}), true
		case strings.Contains(text, "ask me"):
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "ask_user", Arguments: `{"question":"` + askQuestion + `"}`}), true
		case strings.Contains(text, "stream a longer answer"):
			return agenttest.Answer{Text: echoText + req.LastUser(), FragmentSize: 8, Hold: m.streamGate, HoldAfter: 2}, true
		case strings.Contains(text, "long story"):
			return agenttest.Answer{Text: storyText, FragmentSize: 6, Hold: m.hold, HoldAfter: 4}, true
		}
		return agenttest.TextAnswer(echoText + req.LastUser()), true
	})
	t.Cleanup(func() {
		m.openStream()
		close(m.hold)
		m.fake.Close()
	})
	return m
}

// vars are the environment that points the gateway at the model.
func (m *scriptedModel) vars() map[string]string {
	return map[string]string{"OPENAI_BASE_URL": m.fake.URL(), "OPENAI_API_KEY": "sk-e2e"}
}

// toolResults returns the distinct tool results (call id → content) the model received in the
// requests of the conversation whose user messages contain tag.
func (m *scriptedModel) toolResults(tag, tool string) map[string]string {
	out := map[string]string{}
	for _, req := range m.fake.ChatRequests() {
		mine := false
		for _, msg := range req.Messages {
			if msg.Role == "user" && strings.Contains(msg.Content, tag) {
				mine = true
			}
		}
		if !mine {
			continue
		}
		names := map[string]string{}
		for _, msg := range req.Messages {
			for _, c := range msg.ToolCalls {
				names[c.ID] = c.Function.Name
			}
			if msg.Role == "tool" && names[msg.ToolCallID] == tool {
				out[msg.ToolCallID] = msg.Content
			}
		}
	}
	return out
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// --- platforms ---

// botMsg is a message the bot posted, as the fake holds it.
type botMsg struct {
	ID        string
	Text      string
	Reactions []string // canonical emoji the bot added
}

// conv is one conversation (one session) on a platform.
type conv struct {
	p      *platform
	tag    string // unique marker in the conversation's first message
	ch     string // Slack or Discord channel id
	thread string // Slack thread ts (the first message's ts)
}

// platform drives one fake chat service through the real adapter of the gateway.
type platform struct {
	name                string
	vars                map[string]string // environment that enables the platform
	requester, stranger string            // platform user ids
	readyEntry          string            // /readyz entry
	// newConv allocates a fresh channel; open posts the first message (addressed to the bot),
	// say a follow-up in the same session.
	newConv func(t *testing.T, tag string) *conv
	open    func(t *testing.T, c *conv, user, text string)
	say     func(t *testing.T, c *conv, user, text string)
	bot     func(c *conv) []botMsg
	react   func(t *testing.T, c *conv, msgID, user, emoji string)
	// waitFor blocks until cond holds (re-checked on every change of the fake) or fails the test.
	waitFor func(t *testing.T, what string, cond func() bool)
	// private lists the texts shown to user alone in c (Slack's ephemeral messages); nil where
	// the platform has none, and such answers are posted in the conversation.
	private func(c *conv, user string) []string
	// reconnected waits until the platform sees exactly one live connection from the gateway
	// after n connections in total.
	reconnected func(t *testing.T, n int)
}

func (p *platform) qualified(user string) string { return p.name + ":" + user }

var convSeq atomic.Int64

// slackReactionNames maps Slack reaction names to canonical emoji and back.
var slackReactionNames = map[string]string{
	"white_check_mark": echogate.ReactionApprove,
	"repeat":           echogate.ReactionApproveSession,
	"x":                echogate.ReactionDeny,
	"octagonal_sign":   echogate.ReactionStop,
	"eyes":             echogate.ReactionWorking,
}

func slackName(emoji string) string {
	for n, e := range slackReactionNames {
		if e == emoji {
			return n
		}
	}
	return emoji
}

// newSlackPlatform starts a fake Slack (Socket Mode + Web API) for the gateway: mentions in
// channels, answered in the mention's thread (the thread is the session).
func newSlackPlatform(t *testing.T) (*platform, *slacktest.Server) {
	t.Helper()
	srv := slacktest.New(slacktest.Options{PingInterval: 500 * time.Millisecond})
	t.Cleanup(srv.Close)
	nextTS := func() string { return fmt.Sprintf("%d.%06d", 1600000000+convSeq.Add(1), 100) }
	push := func(t *testing.T, inner map[string]any) {
		t.Helper()
		if _, err := srv.Push(inner, slacktest.Delivery{}); err != nil {
			t.Fatalf("slack push: %v", err)
		}
	}
	p := &platform{
		name:       echogate.PlatformSlack,
		vars:       map[string]string{"SLACK_BOT_TOKEN": srv.BotToken(), "SLACK_APP_TOKEN": srv.AppToken(), "SLACK_API_URL": srv.APIURL()},
		requester:  "U0REQUEST",
		stranger:   "U0STRANGE",
		readyEntry: "slack",
	}
	p.newConv = func(t *testing.T, tag string) *conv {
		return &conv{p: p, tag: tag, ch: fmt.Sprintf("C%07d", convSeq.Add(1))}
	}
	p.open = func(t *testing.T, c *conv, user, text string) {
		t.Helper()
		c.thread = nextTS()
		push(t, slacktest.Mention(c.ch, user, c.thread, "", "<@"+srv.BotUserID()+"> "+text))
	}
	p.say = func(t *testing.T, c *conv, user, text string) {
		t.Helper()
		push(t, slacktest.Mention(c.ch, user, nextTS(), c.thread, "<@"+srv.BotUserID()+"> "+text))
	}
	p.bot = func(c *conv) []botMsg {
		var out []botMsg
		for _, m := range srv.BotMessages(c.ch) {
			if m.ThreadTS != c.thread {
				continue
			}
			b := botMsg{ID: m.TS, Text: m.Text}
			for _, r := range m.Reactions {
				if e, ok := slackReactionNames[r]; ok {
					b.Reactions = append(b.Reactions, e)
				} else {
					b.Reactions = append(b.Reactions, r)
				}
			}
			out = append(out, b)
		}
		return out
	}
	p.react = func(t *testing.T, c *conv, msgID, user, emoji string) {
		t.Helper()
		push(t, slacktest.Reaction(user, slackName(emoji), c.ch, msgID, srv.BotUserID()))
	}
	p.waitFor = func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		slackWait(t, srv, what, cond)
	}
	p.private = func(c *conv, user string) []string {
		var out []string
		for _, e := range srv.Ephemerals() {
			if e.Channel == c.ch && e.User == user {
				out = append(out, e.Text)
			}
		}
		return out
	}
	p.reconnected = func(t *testing.T, n int) {
		t.Helper()
		p.waitFor(t, fmt.Sprintf("socket mode connection %d", n), func() bool { return srv.Connects() >= n && srv.OpenConnections() == 1 })
	}
	return p, srv
}

// slackWait blocks until cond holds (re-checked on every change of the fake) or fails the test.
func slackWait(t *testing.T, srv *slacktest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := srv.WaitFor(ctx, cond); err != nil {
		t.Fatalf("slack: waiting for %s: %v", what, err)
	}
}

// newDiscordPlatform starts a fake Discord (REST + gateway) for the gateway: messages in a guild
// channel that mention the bot (the channel is the session).
func newDiscordPlatform(t *testing.T) (*platform, *discordtest.Server) {
	t.Helper()
	srv := discordtest.NewServer(discordtest.Options{HeartbeatInterval: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	const guild = "400000000000000001"
	users := map[string]discordtest.User{
		"500000000000000001": {ID: "500000000000000001", Username: "ann"},
		"500000000000000002": {ID: "500000000000000002", Username: "bob"},
	}
	p := &platform{
		name:       echogate.PlatformDiscord,
		vars:       map[string]string{"DISCORD_BOT_TOKEN": srv.Token(), "DISCORD_API_URL": srv.APIURL},
		requester:  "500000000000000001",
		stranger:   "500000000000000002",
		readyEntry: "discord",
	}
	p.newConv = func(t *testing.T, tag string) *conv {
		return &conv{p: p, tag: tag, ch: fmt.Sprintf("6%017d", convSeq.Add(1))}
	}
	p.open = func(t *testing.T, c *conv, user, text string) {
		srv.SendGuildMessage(guild, c.ch, users[user], text, true)
	}
	p.say = p.open
	p.bot = func(c *conv) []botMsg {
		var out []botMsg
		for _, m := range srv.BotMessages(c.ch) {
			b := botMsg{ID: m.ID, Text: m.Content}
			for _, r := range m.Reactions {
				b.Reactions = append(b.Reactions, strings.ReplaceAll(r, "\uFE0F", ""))
			}
			out = append(out, b)
		}
		return out
	}
	p.react = func(t *testing.T, c *conv, msgID, user, emoji string) {
		t.Helper()
		if err := srv.AddReaction(msgID, users[user], emoji); err != nil {
			t.Fatal(err)
		}
	}
	p.waitFor = func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		if err := srv.WaitFor(waitTimeout, what, cond); err != nil {
			t.Fatal(err)
		}
	}
	p.reconnected = func(t *testing.T, n int) {
		t.Helper()
		p.waitFor(t, fmt.Sprintf("gateway connection %d", n), func() bool { return srv.Connections() >= n && srv.Connected() })
	}
	return p, srv
}

// --- conversation helpers ---

// find returns the bot's messages of c whose text contains every part.
func (c *conv) find(parts ...string) []botMsg {
	var out []botMsg
	for _, m := range c.p.bot(c) {
		if containsAll(m.Text, parts...) {
			out = append(out, m)
		}
	}
	return out
}

// waitMsg waits until the bot has posted n messages containing every part in c, and returns
// them.
func (c *conv) waitMsgs(t *testing.T, n int, parts ...string) []botMsg {
	t.Helper()
	var got []botMsg
	c.p.waitFor(t, fmt.Sprintf("%d bot message(s) with %q in %s", n, parts, c.ch), func() bool {
		got = c.find(parts...)
		return len(got) >= n
	})
	return got
}

func (c *conv) waitMsg(t *testing.T, parts ...string) botMsg {
	t.Helper()
	return c.waitMsgs(t, 1, parts...)[0]
}

// waitPrompt waits for the approval prompt with the bot's three reactions and returns it.
func (c *conv) waitPrompt(t *testing.T, tool string) botMsg {
	t.Helper()
	var prompt botMsg
	c.p.waitFor(t, "the approval prompt with ✅ 🔁 ❌ in "+c.ch, func() bool {
		for _, m := range c.find("Approval needed", tool) {
			if strings.Join(m.Reactions, " ") == "✅ 🔁 ❌" {
				prompt = m
				return true
			}
		}
		return false
	})
	return prompt
}

// transcript renders the bot's messages of c for failure messages.
func (c *conv) transcript() string {
	var b strings.Builder
	for _, m := range c.p.bot(c) {
		fmt.Fprintf(&b, "  [%s] %q %v\n", m.ID, m.Text, m.Reactions)
	}
	return b.String()
}

// scanLines returns the lines of s containing every part.
func scanLines(s string, parts ...string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if containsAll(sc.Text(), parts...) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// waitMetrics scrapes base's /metrics until it holds every line of want (a turn is counted once
// its end is written, which may be just after its answer or done event reached the client),
// within a deadline, and fails the test naming what is missing.
func waitMetrics(t *testing.T, base string, want ...string) {
	t.Helper()
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		missing = missing[:0]
		for _, m := range want {
			if !strings.Contains(string(body), m) {
				missing = append(missing, m)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missing {
		t.Errorf("/metrics lacks %s", m)
	}
}
