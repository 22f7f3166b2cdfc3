package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

func TestDoctorAgainstFakes(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-ok", Models: []string{"gpt-4o-mini"}})
	defer fake.Close()
	slackSrv := slacktest.New(slacktest.Options{})
	defer slackSrv.Close()
	discordSrv := discordtest.NewServer(discordtest.Options{})
	defer discordSrv.Close()
	good := map[string]string{
		"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-ok",
		"SLACK_BOT_TOKEN": slacktest.DefaultBotToken, "SLACK_APP_TOKEN": slacktest.DefaultAppToken, "SLACK_API_URL": slackSrv.APIURL(),
		"DISCORD_BOT_TOKEN": discordSrv.Token(), "DISCORD_API_URL": discordSrv.APIURL,
		"ECHOGATE_DATA_DIR": t.TempDir(),
	}
	e, out, errb := testEnv(good, "doctor")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("doctor against working fakes: exit %d\n%s%s", code, out, errb)
	}
	for _, want := range []string{"ok  database", "ok  model:", "ok  slack:bot_token", "ok  slack:scopes", "ok  slack:socket_mode", "ok  discord:token", "ok  discord:intents"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	// Wrong tokens, a missing intent and an unreachable database: each named with its fix.
	noContent := int64(0)
	noIntent := discordtest.NewServer(discordtest.Options{AppFlags: &noContent})
	defer noIntent.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	deadDB := "postgres://u:p@" + ln.Addr().String() + "/db?connect_timeout=2"
	ln.Close()
	bad := map[string]string{}
	for k, v := range good {
		bad[k] = v
	}
	bad["SLACK_BOT_TOKEN"] = "xoxb-wrong"
	bad["OPENAI_API_KEY"] = "sk-wrong"
	bad["DISCORD_BOT_TOKEN"] = noIntent.Token()
	bad["DISCORD_API_URL"] = noIntent.APIURL
	bad["ECHOGATE_DISCORD_MESSAGE_CONTENT"] = "on" // the intent is needed only when asked for
	bad["DATABASE_URL"] = deadDB
	e, out, errb = testEnv(bad, "doctor")
	if code := run(context.Background(), e); code == 0 {
		t.Fatalf("doctor with problems exited 0:\n%s", out)
	}
	text := out.String()
	for _, want := range []string{
		"!!  database", "check DATABASE_URL",
		"!!  model:", "set a valid OPENAI_API_KEY",
		"!!  slack:bot_token", "SLACK_BOT_TOKEN is not valid",
		"!!  discord:intents", "MESSAGE CONTENT",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor output lacks %q:\n%s%s", want, text, errb)
		}
	}
	if strings.Contains(text+errb.String(), "sk-wrong") || strings.Contains(text, "xoxb-wrong") {
		t.Error("doctor printed a secret")
	}
}

func TestPutBudgetsWithoutRestart(t *testing.T) {
	base, _, stop := startServe(t, map[string]string{})
	defer stop()
	put := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, base+"/api/budgets", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := put(`{"per_user_day_usd": 0.5}`); code != 200 || !strings.Contains(body, `"per_user_day_usd":0.5`) {
		t.Errorf("PUT = %d %s, want 200 with the new limit", code, body)
	}
	if code, body := put(`{"per_day_usd": 10}`); code != 200 || !strings.Contains(body, `"per_user_day_usd":0.5`) || !strings.Contains(body, `"per_day_usd":10`) {
		t.Errorf("second PUT = %d %s, want both limits kept", code, body)
	}
	if code, body := put(`{"per_user_dy_usd": 1}`); code != 400 || !strings.Contains(body, "per_user_dy_usd") {
		t.Errorf("PUT with a typo = %d %s, want 400 naming the field", code, body)
	}
	if code, _ := put(`{"per_day_usd": -1}`); code != 400 {
		t.Errorf("PUT negative = %d, want 400", code)
	}
}

// TestDoctorRateLimitAndMCP: a 429 is reported as a wait with the retry time, not as a network
// problem; each MCP server is checked: a working one lists its tools, a broken one names its
// command and the fix.
func TestDoctorRateLimitAndMCP(t *testing.T) {
	slackSrv := slacktest.New(slacktest.Options{})
	defer slackSrv.Close()
	slackSrv.Fail("auth.test", slacktest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 30})
	discordSrv := discordtest.NewServer(discordtest.Options{})
	defer discordSrv.Close()
	discordSrv.RateLimitNext(http.MethodGet, "users/@me", 5*time.Second, false)
	url, open := slowMCP(t)
	open()
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "mcp:\n  servers: [{name: docs, url: '" + url + "'}, {name: gone, command: '" + filepath.Join(dir, "no-such-server") + "'}]\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SLACK_BOT_TOKEN": slacktest.DefaultBotToken, "SLACK_APP_TOKEN": slacktest.DefaultAppToken, "SLACK_API_URL": slackSrv.APIURL(),
		"DISCORD_BOT_TOKEN": discordSrv.Token(), "DISCORD_API_URL": discordSrv.APIURL,
		"ECHOGATE_DATA_DIR": dir,
	}
	e, out, errb := testEnv(vars, "--config", p, "doctor")
	if code := run(context.Background(), e); code != 1 {
		t.Fatalf("doctor exit %d, want 1:\n%s%s", code, out, errb)
	}
	text := out.String()
	for _, want := range []string{
		"!!  slack:bot_token", "rate limited by Slack (HTTP 429), retry after 30s", "wait 30s and run `echogate doctor` again",
		"!!  discord:token", "rate limited by Discord",
		"ok  mcp:docs", "1 tools (docs__lookup)",
		"!!  mcp:gone", "no-such-server", "mcp.servers[1].command",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "check SLACK_API_URL and the network") {
		t.Errorf("a rate limit was reported as a network problem:\n%s", text)
	}
}
