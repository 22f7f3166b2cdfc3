package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/admin"
	"github.com/echogate/echogate/agent/cost"
)

// adminPost posts a JSON body (or raw text with the given content type) and returns the status
// and the decoded body.
func adminPost(t *testing.T, url, contentType, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// waitFor polls cond (an HTTP API the gateway updates asynchronously) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAdminAPI drives the console's JSON API against a running gateway: a web turn pauses for
// approval, the admin endpoint decides it through the pipeline, and the turn, usage, spend
// series, budgets and breakers show the result. Bad requests get errors that say what to fix.
func TestAdminAPI(t *testing.T) {
	fake := consoleModel(t)
	dir := t.TempDir()
	base, logs, stop := serveReady(t, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-console",
		"ECHOGATE_DATA_DIR": dir}, "--config", consoleConfig(t, dir, "ask"))
	defer stop()

	evs := postChat(t, base, "adm", "what time is it?")
	if last := evs[len(evs)-1]; last.Data["status"] != "paused" {
		t.Fatalf("turn ended %v, want paused for approval; log:\n%s", last.Data, logs.String())
	}
	var pending []admin.Approval
	apiGet(t, base+"/api/approvals", "", &pending)
	if len(pending) != 1 || pending[0].Session != "web:adm" || pending[0].Tool != "current_time" || pending[0].Platform != "web" ||
		!strings.Contains(pending[0].Args, `"timezone": "UTC"`) || pending[0].RequestedBy != "web:u1" {
		t.Fatalf("GET /api/approvals = %+v, want the current_time call of web:adm with its arguments", pending)
	}
	call := pending[0].CallID
	decide := base + "/api/approvals/decide"
	body := func(session, callID, decision, user string) string {
		b, _ := json.Marshal(admin.DecideRequest{Session: session, CallID: callID, Decision: decision, User: user})
		return string(b)
	}
	for name, tt := range map[string]struct {
		ctype, body string
		header      []string
		status      int
		msg         string
	}{
		"form post":          {"application/x-www-form-urlencoded", "session=web:adm", nil, 415, "send a JSON body"},
		"cross-site":         {"application/json", body("web:adm", call, "approve", ""), []string{"Origin", "https://evil.example"}, 403, "cross-origin request"},
		"malformed":          {"application/json", `{"session":`, nil, 400, "malformed JSON"},
		"unknown field":      {"application/json", `{"session":"web:adm","call":"x"}`, nil, 400, `unknown field "call"`},
		"two objects":        {"application/json", body("web:adm", call, "approve", "") + "{}", nil, 400, "exactly one JSON object"},
		"no session":         {"application/json", body("", call, "approve", ""), nil, 400, "session is required"},
		"no call":            {"application/json", body("web:adm", "", "approve", ""), nil, 400, "call_id is required"},
		"bad decision":       {"application/json", body("web:adm", call, "maybe", ""), nil, 400, `decision "maybe" is not one of`},
		"nothing pending":    {"application/json", body("web:other", call, "approve", ""), nil, 404, "has no pending approval"},
		"stale call":         {"application/json", body("web:adm", "call_old", "approve", ""), nil, 409, "reload the approvals"},
		"a platform user":    {"application/json", body("web:adm", call, "approve", "slack:U1"), nil, 400, "decides as itself"},
		"not an operator":    {"application/json", body("web:adm", call, "approve", "web:u1"), nil, 400, "decides as itself"},
		"unknown admin path": {"application/json", "{}", nil, 404, "unknown API path"},
	} {
		url := decide
		if name == "unknown admin path" {
			url = base + "/api/approvals/nope"
		}
		status, out := adminPost(t, url, tt.ctype, tt.body, tt.header...)
		if msg, _ := out["error"].(string); status != tt.status || !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: POST = %d %v, want %d naming %q", name, status, out, tt.status, tt.msg)
		}
	}

	// The decision goes through the pipeline as the console's (not the requester's) and resumes the turn.
	status, out := adminPost(t, decide, "application/json", body("web:adm", call, "approve", ""))
	if status != http.StatusAccepted || out["actor"] != "console" {
		t.Fatalf("POST /api/approvals/decide = %d %v, want 202 as the console", status, out)
	}
	var turns []echogate.TurnRecord
	waitFor(t, "the resumed turn to finish", func() bool {
		apiGet(t, base+"/api/turns?session=web:adm", "", &turns)
		return len(turns) == 2 && turns[0].Status == echogate.TurnDoneSt
	})
	apiGet(t, base+"/api/approvals", "", &pending)
	if len(pending) != 0 {
		t.Errorf("approvals after the decision = %+v, want none", pending)
	}
	if status, out := adminPost(t, decide, "application/json", body("web:adm", call, "approve", "")); status != 404 {
		t.Errorf("deciding twice = %d %v, want 404", status, out)
	}

	var detail admin.TurnDetail
	if code := apiGet(t, base+"/api/turns/detail?id="+turns[0].ID, "", &detail); code != 200 {
		t.Fatalf("GET /api/turns/detail = %d", code)
	}
	var steps []string
	for _, m := range detail.Messages {
		steps = append(steps, string(m.Message.Role))
	}
	modelCalls := 0
	for _, u := range detail.Usage {
		if u.Usage.Kind == echogate.UsageModel && u.Usage.InputTokens == 1200 {
			modelCalls++
		}
	}
	if modelCalls != 1 || detail.Turn.CostUSD <= 0 ||
		strings.Join(steps, ",") != "tool,assistant" || detail.Messages[1].Message.Content != consoleTimeAnswer {
		t.Errorf("turn detail = %+v (steps %v), want one model call, the tool result and the answer", detail, steps)
	}
	// Each turn's record carries the cached input tokens of its model calls (one call each here).
	var raw []map[string]any
	apiGet(t, base+"/api/turns?session=web:adm", "", &raw)
	for i, tr := range raw {
		if tr["cached_input_tokens"] != float64(consoleCachedTokens) || tr["input_tokens"] != float64(1200) {
			t.Errorf("GET /api/turns [%d] tokens in/cached = %v/%v, want 1200/%d", i, tr["input_tokens"], tr["cached_input_tokens"], consoleCachedTokens)
		}
	}
	for url, want := range map[string]int{
		base + "/api/turns/detail":           400,
		base + "/api/turns/detail?id=t_nope": 404,
		base + "/api/usage/series?days=0":    400,
		base + "/api/usage/series?days=x":    400,
		base + "/api/usage/series?days=367":  400,
		base + "/api/memory":                 404,
		base + "/api/knowledge":              404,
	} {
		if code := apiGet(t, url, "", nil); code != want {
			t.Errorf("GET %s = %d, want %d", url, code, want)
		}
	}

	var series admin.UsageSeries
	apiGet(t, base+"/api/usage/series?days=7", "", &series)
	today := time.Now().UTC().Format(time.DateOnly)
	var ledger struct {
		Total echogate.Usage `json:"total"`
	}
	apiGet(t, base+"/api/usage?since="+today+"T00:00:00Z", "", &ledger)
	if len(series.Days) != 7 || series.To != today || series.Days[6].CostUSD <= 0 || series.Today != (echogate.Usage{}) && series.Today.CostUSD != series.Days[6].CostUSD ||
		series.Total.InputTokens < 2400 || series.Today.InputTokens != ledger.Total.InputTokens || series.Today.CostUSD != ledger.Total.CostUSD ||
		series.MonthToDate.CostUSD < series.Today.CostUSD ||
		series.Days[6].CachedInputTokens != ledger.Total.CachedInputTokens || series.Days[6].CachedInputTokens < 2*consoleCachedTokens {
		t.Errorf("GET /api/usage/series?days=7 = %+v, want 7 days ending today with today's ledger total %+v (two model calls)", series, ledger.Total)
	}
	var b cost.Limits
	apiGet(t, base+"/api/budgets", "", &b)
	if b != (cost.Limits{PerTurnUSD: 0.5, PerDayUSD: 0.05, PerMonthUSD: 20}) {
		t.Errorf("GET /api/budgets = %+v, want the configured limits", b)
	}
	var br admin.Breakers
	apiGet(t, base+"/api/breakers", "", &br)
	found := false
	for _, tb := range br.Tools {
		if tb.Tool == "current_time" {
			found = tb.State == "closed" && tb.Approval == "ask" && tb.Safety == "safe"
		}
	}
	if !found || br.Models == nil {
		t.Errorf("GET /api/breakers = %+v, want current_time closed with approval ask", br)
	}
	var info map[string]any
	apiGet(t, base+"/api/info", "", &info)
	if info["store"] != "sqlite" || info["model"] != "gpt-4o-mini" || info["auth"] != false {
		t.Errorf("GET /api/info = %v", info)
	}
}

// TestConsoleDecidesSlackApproval approves a Slack conversation's tool call from the console:
// the decision reaches the pipeline as the console's own reaction, and the answer is posted in
// the Slack thread.
func TestConsoleDecidesSlackApproval(t *testing.T) {
	p, _ := newSlackPlatform(t)
	p.vars["ECHOGATE_APPROVERS"] = "slack:console-admin"
	g, model := approvalGateway(t, p, approvalConfig)
	tag := "[console-slack]"
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, tag+" what time is it")
	c.waitPrompt(t, "current_time")

	// The pause is stored before its prompt is posted, and gets the prompt's reference after.
	var pending []admin.Approval
	waitFor(t, "the pending approval with its posted prompt", func() bool {
		apiGet(t, g.base+"/api/approvals", "", &pending)
		return len(pending) == 1 && !pending[0].Prompt.IsZero()
	})
	if pending[0].Platform != "slack" || pending[0].Tool != "current_time" {
		t.Fatalf("GET /api/approvals = %+v, want the Slack call", pending)
	}
	pd := pending[0]
	req := func(user string) string {
		b, _ := json.Marshal(admin.DecideRequest{Session: string(pd.Session), CallID: pd.CallID, Decision: "approve", User: user})
		return string(b)
	}
	if status, out := adminPost(t, g.base+"/api/approvals/decide", "application/json", req("slack:U_STRANGER")); status != http.StatusBadRequest {
		t.Errorf("deciding as a Slack user = %d %v, want 400", status, out)
	}
	status, out := adminPost(t, g.base+"/api/approvals/decide", "application/json", req(""))
	if status != http.StatusAccepted || out["actor"] != "console" {
		t.Fatalf("POST /api/approvals/decide = %d %v, want 202 as the console", status, out)
	}
	c.waitMsg(t, afterToolText)
	if res := singleToolResult(t, approvalEnv{p: p, g: g, model: model}, tag, "current_time"); !strings.Contains(res, `"timezone":"UTC"`) {
		t.Errorf("tool result = %q, want the current_time output", res)
	}
	g.logs.waitLine(t, "pause resolved", "by=slack:console")
}

// TestAdminMemoryAndKnowledgeLists: with memory and knowledge on, their console endpoints list
// the stores (empty on a fresh gateway) and check the user filter.
func TestAdminMemoryAndKnowledgeLists(t *testing.T) {
	fake := consoleModel(t)
	dir := t.TempDir()
	cfg := consoleConfig(t, dir, "allow")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("memory: {enabled: true}\nknowledge: {enabled: true}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	base, _, stop := serveReady(t, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-console", "ECHOGATE_DATA_DIR": dir}, "--config", cfg)
	defer stop()
	for url, want := range map[string]int{
		base + "/api/memory":               200,
		base + "/api/memory?user=slack:U1": 200,
		base + "/api/memory?user=U1":       400,
		base + "/api/knowledge?limit=10":   200,
	} {
		var list []map[string]any
		if code := apiGet(t, url, "", &list); code != want || code == 200 && list == nil {
			t.Errorf("GET %s = %d %v, want %d with a JSON list", url, code, list, want)
		}
	}
}
