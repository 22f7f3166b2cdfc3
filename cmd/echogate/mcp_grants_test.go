package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// chatAs is postChat for a given web user.
func chatAs(t *testing.T, base, session, user, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"session": session, "user": user, "text": text})
	resp, err := http.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/chat = %d", resp.StatusCode)
	}
	return sseText(readSSE(t, resp.Body))
}

var linkRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?[^\s"\\]+`)

// TestMCPPerUserGrantsThroughChat: with auth: oauth_per_user, a person without a grant gets an
// authorize-first result; `/mcp login tracker` gives them a private link whose redirect lands on
// the gateway; their calls then carry their own token, another person's do not, and
// `/mcp revoke tracker` forgets it.
func TestMCPPerUserGrantsThroughChat(t *testing.T) {
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
		return agenttest.TextAnswer("ok"), true
	})
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "mcp:\n  servers: [{name: tracker, url: '" + o.URL + "/mcp', auth: oauth_per_user, safety: safe}]\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e", "ECHOGATE_DATA_DIR": dir, "ECHOGATE_SECRET_KEY": testSecretKey}
	base, logs, stop := startServe(t, vars, "--config", p)
	defer stop()

	// The operator's grant lists the catalogue.
	resp, err := http.Post(base+"/api/mcp/login", "application/json", strings.NewReader(`{"server":"tracker"}`))
	if err != nil {
		t.Fatal(err)
	}
	var start mcpLoginView
	_ = json.NewDecoder(resp.Body).Decode(&start)
	resp.Body.Close()
	if code, _ := getPage(t, authRedirect(t, start.URL)); code != http.StatusOK {
		t.Fatalf("operator login callback = %d; log:\n%s", code, logs.String())
	}
	waitReadyz(t, base, http.StatusOK, "mcp:tracker", func(s string) bool { return s == "ok (1 tools)" })
	operator := o.tokens()

	got := chatAs(t, base, "a1", "ann", "who am i")
	if !strings.Contains(got, "authorize MCP server tracker") || strings.Contains(got, "token=at-") {
		t.Fatalf("ann's call before her login = %q, want authorize first and no token", got)
	}
	// Config.Authorize sent her the link in her conversation (a notice: the web chat keeps
	// notices sent during a turn in the history).
	if _, hist := getPage(t, base+"/api/chat/history?session=a1"); linkRe.FindString(hist) == "" || !strings.Contains(hist, "only for you") {
		t.Errorf("ann's conversation after the refused call = %q, want the authorization link sent to her", hist)
	}
	got = chatAs(t, base, "a2", "ann", "/mcp login tracker")
	link := linkRe.FindString(got)
	if link == "" {
		t.Fatalf("/mcp login tracker = %q, want a private authorization link", got)
	}
	if code, page := getPage(t, authRedirect(t, link)); code != http.StatusOK {
		t.Fatalf("ann's callback = %d %q; log:\n%s", code, page, logs.String())
	}
	if got := chatAs(t, base, "a2", "ann", "/mcp"); !strings.Contains(got, "• tracker") {
		t.Errorf("/mcp after login = %q, want tracker listed", got)
	}
	got = chatAs(t, base, "a3", "ann", "who am i")
	var annTok string
	for _, tk := range o.tokens() {
		if tk != operator[0] && strings.Contains(got, "token="+tk) {
			annTok = tk
		}
	}
	if annTok == "" {
		t.Errorf("ann's call after her login = %q, want her own token (not the operator's %v)", got, operator)
	}
	if got := chatAs(t, base, "b1", "bob", "who am i"); !strings.Contains(got, "authorize MCP server tracker") {
		t.Errorf("bob's call = %q, want authorize first (ann's token never serves him)", got)
	}
	if got := chatAs(t, base, "b1", "bob", "/mcp"); strings.Contains(got, "• tracker") {
		t.Errorf("bob's /mcp = %q, want none of ann's logins", got)
	}
	if got := chatAs(t, base, "a4", "ann", "/mcp revoke tracker"); !strings.Contains(got, "forgotten") {
		t.Errorf("/mcp revoke tracker = %q, want forgotten", got)
	}
	if got := chatAs(t, base, "a5", "ann", "who am i"); !strings.Contains(got, "authorize MCP server tracker") {
		t.Errorf("ann's call after revoke = %q, want authorize first", got)
	}
}
