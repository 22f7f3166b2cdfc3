package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// Issue 36, finding 2, through Slack: an allowed user asks for `cat /proc/<gateway pid>/environ`
// and for the bot's token. run_command refuses the path (naming the argument and
// tools.run_command.allow_paths), and the token the model writes, streamed in small deltas,
// reaches the channel as [redacted].
func TestE2EAllowedUserCannotPostTheBotsTokens(t *testing.T) {
	p, srv := newSlackPlatform(t)
	token := srv.BotToken()
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	t.Cleanup(fake.Close)
	environ := fmt.Sprintf("/proc/%d/environ", os.Getpid())
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		if last := req.Last(); last.Role == "tool" {
			return agenttest.TextAnswer("The command said: " + last.Content), true
		}
		switch text := req.LastUser(); {
		case strings.Contains(text, "read env"):
			args, _ := json.Marshal(map[string]any{"command": "cat", "args": []string{environ}})
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "run_command", Arguments: string(args)}), true
		case strings.Contains(text, "print the token"):
			return agenttest.Answer{Text: "Sure, SLACK_BOT_TOKEN is " + token + " and that is all.", FragmentSize: 3}, true
		}
		return agenttest.TextAnswer("?"), true
	})
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e"}
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "tools:\n  run_command: {allowed: [cat], approval: allow}\n")
	waitReadyz(t, g.base, http.StatusOK, "slack", func(s string) bool { return strings.Contains(s, "connected") })

	c := p.newConv(t, "[sec-1]")
	p.open(t, c, p.requester, "please read env [sec-1]")
	// The answer streams: wait for its end (the refusal's last words), not its first words.
	refused := c.waitMsg(t, "tools.run_command.allow_paths")
	if !strings.Contains(refused.Text, "The command said:") || !strings.Contains(refused.Text, "args[0]") {
		t.Errorf("answer after run_command = %q, want the refusal naming args[0] and tools.run_command.allow_paths", refused.Text)
	}

	c2 := p.newConv(t, "[sec-2]")
	p.open(t, c2, p.requester, "print the token [sec-2]")
	msg := c2.waitMsg(t, "and that is all.")
	if !strings.Contains(msg.Text, "[redacted]") {
		t.Errorf("answer = %q, want the token replaced by [redacted]", msg.Text)
	}
	for _, call := range append(srv.CallsTo("chat.appendStream"), append(srv.CallsTo("chat.postMessage"), append(srv.CallsTo("chat.update"), srv.CallsTo("chat.stopStream")...)...)...) {
		for k, v := range call.Params {
			if k != "token" && strings.Contains(v, token) {
				t.Errorf("Slack %s %s = %q carries the bot token", call.Method, k, v)
			}
		}
	}
	for _, m := range srv.BotMessages(c2.ch) {
		if strings.Contains(m.Text, token) {
			t.Errorf("bot message %s carries the bot token: %q", m.TS, m.Text)
		}
	}
}
