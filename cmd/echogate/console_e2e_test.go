package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/internal/metrics"
)

// The scripted model of the console tests: "what time is it" calls current_time and, once the
// result is in, answers consoleTimeAnswer; anything else streams consoleGreeting in small pieces. Every answer
// reports 1200 prompt and 300 completion tokens, which the prices of consoleConfig turn into a
// visible spend.
const (
	consoleGreeting   = "Hello from echogate! This answer streams in small pieces."
	consoleTimeAnswer = "It is 12:00 in UTC."
	// consoleCachedTokens of each call's 1200 prompt tokens are cache reads: 80%.
	consoleCachedTokens = 960
)

func consoleModel(t *testing.T) *agenttest.FakeOpenAI {
	t.Helper()
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-console"})
	t.Cleanup(fake.Close)
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		a := agenttest.Answer{PromptTokens: 1200, CompletionTokens: 300, CachedTokens: consoleCachedTokens}
		switch {
		case req.Last().Role == "tool":
			a.Text = consoleTimeAnswer
		case strings.Contains(strings.ToLower(req.LastUser()), "time"):
			a.ToolCalls = []echogate.ToolCall{{Name: "current_time", Arguments: `{"timezone":"UTC"}`}}
		default:
			a.Text, a.FragmentSize, a.ChunkDelay = consoleGreeting, 3, 15*time.Millisecond
		}
		return a, true
	})
	return fake
}

// consoleConfig writes the gateway config of the console tests: current_time needs approval,
// prices make spend non-zero, a daily budget draws a line on the chart.
func consoleConfig(t *testing.T, dir, approval string) string {
	t.Helper()
	body := fmt.Sprintf(`models:
  default: gpt-4o-mini
  prices:
    gpt-4o-mini: {input_per_mtok: 2.5, output_per_mtok: 10}
tools:
  current_time: {approval: %s}
budgets: {per_turn_usd: 0.5, per_day_usd: 0.05, per_month_usd: 20}
schedules:
  - {name: new-year-digest, cron: "0 3 1 1 *", prompt: "the year's digest", deliver: "web:ops"}
`, approval)
	p := filepath.Join(dir, "echogate.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// consoleArtifactsDir is where the browser test saves screenshots: $ECHOGATE_ARTIFACTS_DIR, or
// artifacts/console at the repository root (gitignored).
func consoleArtifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ECHOGATE_ARTIFACTS_DIR")
	if dir == "" {
		root, err := filepath.Abs(".")
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(root)
			if parent == root {
				t.Fatal("no go.mod above the test's directory: set ECHOGATE_ARTIFACTS_DIR")
			}
			root = parent
		}
		dir = filepath.Join(root, "artifacts")
	}
	dir = filepath.Join(dir, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("create the artifacts directory: %v", err)
	}
	return dir
}

const chromiumPath = "/usr/bin/chromium"

// needChromium skips the test without Debian's chromium, or fails it in CI, where .ci/run
// installs it.
func needChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing (%v): CI must install it (apt-get install -y chromium; .ci/run does)", chromiumPath, err)
		}
		t.Skipf("browser test skipped: %s not found; `apt-get install chromium` enables it", chromiumPath)
	}
}

// TestConsoleInBrowser drives the console in headless Chromium: chat with a streamed answer, a tool
// call that waits for approval, approving it from the Approvals tab, the turn list and detail, the
// spend chart, the breakers, the schedules, the not-yet-configured memory panel, the MCP servers,
// and a session reopened after a restart. Screenshots of each step are saved as artifacts.
func TestConsoleInBrowser(t *testing.T) {
	needChromium(t)
	fake := consoleModel(t)
	dir := t.TempDir()
	const token = "console-test-token"
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-console", "ECHOGATE_DATA_DIR": dir,
		"ECHOGATE_HTTP_AUTH_TOKEN": token, "ECHOGATE_SECRET_KEY": testSecretKey}
	cfgPath := consoleConfig(t, dir, "ask")
	consoleMCPConfig(t, cfgPath) // the MCP tab's servers (mcp_console_test.go)
	base, logs, stopServe := serveReady(t, vars, "--config", cfgPath)
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(stopServe) }
	defer stop()

	// The console is protected: without the token the page is refused, with it served.
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("GET / without credentials = %d (WWW-Authenticate %q), want 401 asking for Basic auth", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	b, closeBrowser := openConsoleBrowser(t, token, logs)
	defer closeBrowser()
	b.chatStreams(base)
	b.approveInTheConsole()
	b.turnsAndSpend()
	b.otherTabs()

	// The server agrees: nothing is pending any more, and the paused turn was resumed.
	var pending []map[string]any
	apiGet(t, base+"/api/approvals", token, &pending)
	if len(pending) != 0 {
		t.Errorf("GET /api/approvals after approving = %v, want none", pending)
	}

	// 7. A restart: reopening the session (by the id the Turns tab shows, web:…) shows its
	// earlier turns, the tool call, and the approval still waiting, naming who asked.
	session := b.askAgain()
	stop()
	base2, logs2, stop2 := serveReady(t, vars, "--config", cfgPath)
	defer stop2()
	defer func() {
		if t.Failed() {
			t.Logf("gateway log after the restart:\n%s", logs2.String())
		}
	}()
	b.reopenAfterRestart(base2, session)
}

// consoleBrowser is a headless Chromium on the console, with the test's step helpers.
type consoleBrowser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// openConsoleBrowser starts Chromium sending token as Basic credentials; closeBrowser stops it
// and fails the test on an uncaught page exception (logging the gateway's log when it failed).
func openConsoleBrowser(t *testing.T, token string, logs fmt.Stringer) (b *consoleBrowser, closeBrowser func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	stopAll := func() { cancelBrowser(); cancelAlloc(); cancel() }

	// Collect what the page writes to the console; an uncaught exception fails the test.
	var (
		consoleMu sync.Mutex
		messages  []chromedp.ConsoleMessage
	)
	if err := chromedp.Do(bctx, browserBasicAuth("console", token)); err != nil {
		stopAll()
		t.Fatalf("start chromium: %v", err)
	}
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			consoleMu.Lock()
			messages = append(messages, m)
			consoleMu.Unlock()
		}
	}()
	return &consoleBrowser{t: t, ctx: bctx, shots: consoleArtifactsDir(t)}, func() {
		cancelBrowser()
		<-consoleDone
		stopAll()
		consoleMu.Lock()
		defer consoleMu.Unlock()
		for _, m := range messages {
			if m.IsException() {
				t.Errorf("page exception: %s (%s:%d)", m.Text, m.URL, m.Line)
			} else {
				t.Logf("browser console: %s", m)
			}
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}
}

// shot saves a screenshot of the page as an artifact.
func (b *consoleBrowser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatalf("save screenshot: %v", err)
	}
	b.t.Logf("screenshot: %s", p)
}

// step runs actions, failing the test (with a screenshot) on the first that fails.
func (b *consoleBrowser) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.shot("failed")
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls js in the page until it is true (30 s at most).
func wait(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
}

// chatStreams opens the console on base and sends a message: the answer streams into the page.
func (b *consoleBrowser) chatStreams(base string) {
	// 1. Chat: the answer streams into the page.
	b.step("open the console",
		chromedp.Navigate(base+"/#chat"),
		chromedp.WaitVisible(chromedp.CSS("#text")),
		wait(`document.querySelector("#info .chip") !== null`),
		// An empty conversation says what to do first.
		wait(`(document.querySelector("#log .hint") || {}).textContent.includes("Type a message below to start")`),
	)
	b.step("watch the answer bubble", chromedp.Evaluate[chromedp.Void](`(() => {
		window.__partials = [];
		new MutationObserver(() => {
			for (const b of document.querySelectorAll("#log .msg.assistant")) {
				const s = b.textContent;
				if (window.__partials[window.__partials.length - 1] !== s) window.__partials.push(s);
			}
		}).observe(document.getElementById("log"), { subtree: true, childList: true, characterData: true });
	})()`))
	b.step("send a message",
		chromedp.SetValue(chromedp.CSS("#text"), "hello there"),
		chromedp.Click(chromedp.CSS("#send")),
		wait(fmt.Sprintf(`[...document.querySelectorAll("#log .msg.assistant")].some((e) => e.textContent === %q)`, consoleGreeting)),
	)
	b.step("wait for the turn to end", wait(`document.querySelector("#stop").disabled && document.querySelector("#status").textContent === ""`))
	partials, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`window.__partials`))
	if err != nil {
		b.t.Fatal(err)
	}
	streamed := 0
	for _, p := range partials {
		if p != "" && p != consoleGreeting && strings.HasPrefix(consoleGreeting, p) {
			streamed++
		}
	}
	if streamed < 2 {
		b.t.Errorf("the answer bubble showed %d partial texts before the whole answer (%q), want it to grow as the answer streams", streamed, partials)
	}
	b.shot("01-chat-streamed")
}

// approveInTheConsole asks for something that needs approval, then approves it from the
// Approvals tab and sees the answer in the chat.
func (b *consoleBrowser) approveInTheConsole() {
	// 2. A tool call that needs approval pauses the turn; the chat shows the request.
	b.step("ask for the time",
		chromedp.SetValue(chromedp.CSS("#text"), "what time is it?"),
		chromedp.Click(chromedp.CSS("#send")),
		wait(`document.querySelector("#log .approval") !== null && document.querySelector("#status").textContent === "Waiting for approval."`),
		// One wording with the platforms' buttons; the hint is gone once the chat has messages.
		wait(`[...document.querySelectorAll("#log .approval button")].map((b) => b.textContent).join("|") === "Approve|Approve for this conversation|Deny"`),
		wait(`document.querySelector("#log .hint") === null`),
	)
	b.shot("02-chat-approval-requested")

	// 3. The Approvals tab lists it; approving it there resumes the turn and the chat shows the
	// answer.
	b.step("open the approvals",
		chromedp.Click(chromedp.CSS("#tab-approvals")),
		wait(`document.querySelector('#approvals-list .card button[data-decision="approve"]') !== null`),
		wait(`document.querySelector("#approvals-badge").textContent === "1"`),
	)
	b.shot("03-approvals")
	b.step("approve in the console",
		chromedp.Click(chromedp.CSS(`#approvals-list .card button[data-decision="approve"]`)),
		wait(`(document.querySelector("#approvals-list .card .result.ok") || {}).textContent === "Approved — the turn resumes."`),
	)
	b.shot("04-approved")
	b.step("see the answer in the chat",
		chromedp.Click(chromedp.CSS("#tab-chat")),
		wait(fmt.Sprintf(`[...document.querySelectorAll("#log .msg.assistant")].some((e) => e.textContent === %q)`, consoleTimeAnswer)),
		wait(`[...document.querySelectorAll("#log details.tool summary")].some((e) => e.textContent.includes("current_time") && e.textContent.includes("✓"))`),
	)
	b.shot("05-chat-answered")
}

// turnsAndSpend checks the Turns tab (list, detail, a session's totals) and the spend chart.
func (b *consoleBrowser) turnsAndSpend() {
	// 4. Turns: the list shows the three turns; a click shows one with its model calls and events.
	b.step("open the turns",
		chromedp.Click(chromedp.CSS("#tab-turns")),
		wait(`document.querySelectorAll("#turns-table tbody tr").length >= 3`),
		// The paused turn was decided: it shows the final state of the turn that resumed it.
		wait(`[...document.querySelectorAll("#turns-table tbody .pill")].some((e) => e.textContent === "decided → done")`),
		// Each turn's tokens carry its cache-read share: 960 of 1200 input tokens.
		wait(`[...document.querySelectorAll("#turns-table tbody tr")].every((r) => r.textContent.includes("1,200 / 300 · 80% cached"))`),
		chromedp.Click(chromedp.CSS("#turns-table tbody tr")),
		wait(`document.querySelector("#turn-detail table") !== null && document.querySelector("#turn-detail ol.events") !== null`),
		// The session's share comes from the ledger, after the turn's own figures.
		wait(`document.querySelector("#turn-detail").textContent.includes("Session total")`),
	)
	detail, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS("#turn-detail")))
	if err != nil {
		b.t.Fatal(err)
	}
	for _, want := range []string{"gpt-4o-mini", "tool result · current_time", consoleTimeAnswer,
		"1,200 in · 300 out · 960 cached (80%)", "80% cached"} {
		if !strings.Contains(detail, want) {
			b.t.Errorf("turn detail = %q, want it to show %q", detail, want)
		}
	}
	b.shot("06-turns")
	// Filtered by one session, the list names the session's totals and cache-read share.
	b.step("filter the turns by session",
		chromedp.Evaluate[chromedp.Void](`(() => {
			document.querySelector("#turns-session").value = document.querySelector("#turns-table tbody tr").children[1].title;
			document.querySelector('#turns-filter button[type="submit"]').click();
		})()`),
		wait(`(document.querySelector("#turns-session-usage") || {}).textContent.includes("80% cached")`),
	)

	// 5. Spend: the chart draws the day's spend and the daily budget line.
	b.step("open the spend chart",
		chromedp.Click(chromedp.CSS("#tab-spend")),
		wait(`document.querySelectorAll("#spend-chart svg rect.bar").length === 30`),
		wait(`document.querySelector("#spend-chart svg line.budget") !== null`),
		// The range's and today's cache-read share, and each day's in its bar.
		wait(`[...document.querySelectorAll("#spend-cards .stat")].some((e) => e.textContent.includes("Cache reads") && e.textContent.includes("80%"))`),
		wait(`[...document.querySelectorAll("#spend-chart svg rect.bar:not(.zero) title")].some((e) => e.textContent.includes("80% cached"))`),
	)
	bars, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]map[string]any](`[...document.querySelectorAll("#spend-chart svg rect.bar:not(.zero)")].map((r) => ({day: r.dataset.day, cost: Number(r.dataset.cost), height: r.getBBox().height}))`))
	if err != nil {
		b.t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if len(bars) != 1 || bars[0]["day"] != today || bars[0]["cost"].(float64) <= 0 || bars[0]["height"].(float64) < 2 {
		b.t.Errorf("spend bars with data = %v, want one visible bar for today (%s) with a positive cost", bars, today)
	}
	b.shot("07-spend")
}

// otherTabs checks the breakers, the schedules (pause and resume), the memory panel that is not
// configured, and the MCP servers.
func (b *consoleBrowser) otherTabs() {
	// 6. Breakers and the memory panel that is not configured yet.
	b.step("open the breakers",
		chromedp.Click(chromedp.CSS("#tab-breakers")),
		wait(`[...document.querySelectorAll("#tool-breakers tbody tr")].some((r) => r.textContent.includes("current_time") && r.textContent.includes("closed"))`),
	)
	b.shot("08-breakers")
	// The Schedules tab lists the config's job; Pause and Resume act on it through the API.
	row := `[...document.querySelectorAll("#schedules-table tbody tr")].find((r) => r.textContent.includes("new-year-digest"))`
	b.step("open the schedules",
		chromedp.Click(chromedp.CSS("#tab-schedules")),
		wait(`((r) => r && r.textContent.includes("config") && r.textContent.includes("enabled") && r.textContent.includes("Pause"))(`+row+`)`),
	)
	b.shot("08b-schedules")
	b.step("pause the job",
		chromedp.Click(chromedp.CSS(`#schedules-table tr[data-job="config:new-year-digest"] button:last-child`)),
		wait(`((r) => r && r.textContent.includes("paused") && r.textContent.includes("Resume"))(`+row+`)`),
	)
	b.step("resume the job",
		chromedp.Click(chromedp.CSS(`#schedules-table tr[data-job="config:new-year-digest"] button`)),
		wait(`((r) => r && r.textContent.includes("enabled") && r.textContent.includes("Pause"))(`+row+`)`),
	)
	b.step("open the memory panel",
		chromedp.Click(chromedp.CSS("#tab-memory")),
		wait(`(document.querySelector("#memory-body strong") || {}).textContent === "Memory is not configured."`),
	)
	b.shot("09-memory")
	// The MCP tab: one server connected with its tool, one that needs login with the command.
	mcpRow := func(name string) string {
		return `[...document.querySelectorAll("#mcp-table tbody tr")].find((r) => r.dataset.server === "` + name + `")`
	}
	b.step("open the MCP servers",
		chromedp.Click(chromedp.CSS("#tab-mcp")),
		wait(`((r) => r && r.querySelector(".pill").textContent === "connected" && r.textContent.includes("1"))(`+mcpRow("wx")+`)`),
		wait(`((r) => r && r.querySelector(".pill").textContent === "needs login" && r.textContent.includes("echogate mcp login tracker"))(`+mcpRow("tracker")+`)`),
	)
	b.shot("10-mcp")
}

// askAgain asks for the time as ann, leaving the approval waiting, and returns the session id.
func (b *consoleBrowser) askAgain() string {
	b.step("ask for the time again",
		chromedp.Click(chromedp.CSS("#tab-chat")),
		chromedp.SetValue(chromedp.CSS("#user"), "ann"),
		chromedp.SetValue(chromedp.CSS("#text"), "what time is it now?"),
		chromedp.Click(chromedp.CSS("#send")),
		wait(`document.querySelectorAll("#log .approval").length === 2 && document.querySelector("#status").textContent === "Waiting for approval."`),
	)
	session, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`window.echogateChat.session()`))
	if err != nil {
		b.t.Fatal(err)
	}
	return session
}

// reopenAfterRestart reopens session on the restarted gateway at base2: its earlier turns, the
// tool row and the waiting approval, naming who asked.
func (b *consoleBrowser) reopenAfterRestart(base2, session string) {
	b.step("reopen the session after a restart",
		chromedp.Navigate(base2+"/#chat"),
		chromedp.WaitVisible(chromedp.CSS("#text")),
		chromedp.SetValue(chromedp.CSS("#session"), "web:"+session),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#session-form").requestSubmit()`),
		wait(fmt.Sprintf(`[...document.querySelectorAll("#log .msg.user")].map((e) => e.textContent).join("|") === %q`,
			"hello there|what time is it?|what time is it now?")),
		wait(fmt.Sprintf(`[...document.querySelectorAll("#log .msg.assistant")].some((e) => e.textContent === %q)`, consoleGreeting)),
		wait(fmt.Sprintf(`[...document.querySelectorAll("#log .msg.assistant")].some((e) => e.textContent === %q)`, consoleTimeAnswer)),
		wait(`[...document.querySelectorAll("#log details.tool summary")].some((e) => e.textContent.includes("current_time") && e.textContent.includes("✓"))`),
		wait(`document.querySelectorAll("#log .approval").length === 1`),
	)
	card, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS("#log .approval")))
	if err != nil {
		b.t.Fatal(err)
	}
	if !strings.Contains(card, "Asked by ann;") || strings.Contains(card, "web:") {
		b.t.Errorf("the restored approval card = %q, want it to name who asked (Asked by ann), not an id", card)
	}
	b.shot("10-reopened-after-restart")
}

// browserBasicAuth makes the browser send the console token as HTTP Basic credentials on every request,
// as a browser does after its login prompt.
func browserBasicAuth(user, token string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		cred := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Authorization": "Basic " + cred},
		})
		return chromedp.Void{}, err
	}
}

func apiGet(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// serveReady starts `echogate serve` (see startServe) and waits until /readyz reports every
// channel running: /healthz answers before the web channel accepts chat requests.
func serveReady(t *testing.T, vars map[string]string, args ...string) (string, *syncBuffer, func()) {
	t.Helper()
	base, logs, stop := startServe(t, vars, args...)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, logs, stop
			}
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("/readyz did not report ready within 15s (last error %v); log:\n%s", err, logs.String())
		}
	}
}

// scrapeMetrics reads /metrics in the Prometheus text format.
func scrapeMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// metricTotal sums a family over its series: counter values, or histogram sample counts.
func metricTotal(fams map[string]*dto.MetricFamily, name string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestMetricsMoveAfterConversation scrapes /metrics before and after a scripted web
// conversation with a tool call, and checks that the counters and histograms moved.
func TestMetricsMoveAfterConversation(t *testing.T) {
	fake := consoleModel(t)
	dir := t.TempDir()
	base, logs, stop := serveReady(t, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-console",
		"ECHOGATE_DATA_DIR": dir}, "--config", consoleConfig(t, dir, "allow"))
	defer stop()

	before := scrapeMetrics(t, base)
	for _, text := range []string{"hello", "what time is it?"} {
		evs := postChat(t, base, "metrics", text)
		if last := evs[len(evs)-1]; last.Event != "done" || last.Data["status"] != "done" {
			t.Fatalf("turn %q ended with %s %v, want done; log:\n%s", text, last.Event, last.Data, logs.String())
		}
	}
	checks := []struct {
		name string
		min  float64 // at least this much more than before
	}{
		{"echogate_events_total", 2},
		{"echogate_turns_total", 2},
		{"echogate_turn_duration_seconds", 2},
		{"echogate_time_to_first_token_seconds", 2},
		{"echogate_model_calls_total", 3}, // greeting; tool call; answer after the tool
		{"echogate_model_tokens_total", 3 * 1500},
		{"echogate_tool_calls_total", 1},
		{"echogate_tool_duration_seconds", 1},
		{"echogate_spend_usd_total", 3 * (1200*2.5 + 300*10) / 1e6 * 0.999},
		{"echogate_stage_runs_total", 2 * 3}, // context, inference and response of each turn
		{"echogate_stage_duration_seconds", 2 * 3},
	}
	// A turn is counted when it is recorded, which may be just after its done event reached the
	// client: scrape until everything moved, within a deadline.
	var (
		after  map[string]*dto.MetricFamily
		missed []string
	)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		after, missed = scrapeMetrics(t, base), nil
		for _, c := range checks {
			if got := metricTotal(after, c.name) - metricTotal(before, c.name); got < c.min {
				missed = append(missed, fmt.Sprintf("%s moved by %v, want at least %v", c.name, got, c.min))
			}
		}
		if len(missed) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missed {
		t.Error(m)
	}
	if f := after["echogate_turn_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("echogate_turn_duration_seconds is %v, want a histogram", f.GetType())
	}
	tool := after["echogate_tool_calls_total"]
	found := false
	for _, m := range tool.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["tool"] == "current_time" && labels["result"] == "ok" && m.GetCounter().GetValue() == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("echogate_tool_calls_total = %v, want {tool=current_time, result=ok} 1", tool)
	}
}

// TestGrafanaDashboardMetricsExist checks that every echogate_* metric deploy/grafana-dashboard.json
// queries is one the gateway registers, so a renamed metric cannot leave the dashboard blank.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana-dashboard.json is not valid JSON: %v", err)
	}
	registered := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var collect func(m reflect.Value)
	collect = func(m reflect.Value) {
		for i := 0; i < m.NumField(); i++ {
			f := m.Type().Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				collect(m.Field(i)) // a group of collectors embedded in Metrics
				continue
			}
			if !f.IsExported() {
				continue // label children of an exported vector
			}
			c, ok := m.Field(i).Interface().(prometheus.Collector)
			if !ok || f.Name == "Registry" {
				continue
			}
			descs := make(chan *prometheus.Desc, 16)
			go func() { c.Describe(descs); close(descs) }()
			for d := range descs {
				if match := fqName.FindStringSubmatch(d.String()); match != nil {
					registered[match[1]] = true
				}
			}
		}
	}
	collect(reflect.ValueOf(*metrics.New()))
	name := regexp.MustCompile(`echogate_[a-z_]+`)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && registered[b] {
						base = b
					}
				}
				if !registered[base] {
					t.Errorf("panel %q queries %s, which the gateway does not register", p.Title, n)
				}
			}
		}
	}
	if queries < 20 {
		t.Errorf("the dashboard has %d queries, want the full set (turns, latency, model, tools, breakers, approvals, queues, platforms)", queries)
	}
}
