package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// shopMCP is an MCP server whose tools ask the client: "ask" a size (a form of one enum
// field), "connect" a link to open (URL mode). Each returns the answer it got as JSON.
func shopMCP(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "shop", Version: "1"}, nil)
	answer := func(res *sdk.ElicitResult, err error) (*sdk.CallToolResult, any, error) {
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "elicit failed: " + err.Error()}}}, nil, nil
		}
		b, _ := json.Marshal(res)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "server got " + string(b)}}}, nil, nil
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "ask", Description: "asks for a size"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which size?", RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"size":{"type":"string","enum":["small","large"]}},"required":["size"]}`)}))
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "connect", Description: "asks to open a link"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Connect your shop account",
				URL: "https://shop.example/connect?s=42", ElicitationID: "el-1"}))
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// shopModel calls shop__ask for "order a shirt", shop__connect for "connect me", and answers
// with what a tool returned.
func shopModel(t *testing.T) map[string]string {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	t.Cleanup(fake.Close)
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		if last := req.Last(); last.Role == "tool" {
			return agenttest.TextAnswer(afterToolText + oneLine(last.Content, 200)), true
		}
		switch text := req.LastUser(); {
		case strings.Contains(text, "order a shirt"):
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "shop__ask", Arguments: `{}`}), true
		case strings.Contains(text, "connect me"):
			return agenttest.ToolAnswer(echogate.ToolCall{Name: "shop__connect", Arguments: `{}`}), true
		}
		return agenttest.TextAnswer("ok"), true
	})
	return map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e"}
}

// elicitPlatform is a platform with what the elicitation test needs beyond the approval one:
// pressing a question's button, and the texts a user was shown alone (Slack ephemeral, Discord
// DM).
type elicitPlatform struct {
	*platform
	press   func(t *testing.T, c *conv, msgID, user, value string)
	private func(c *conv, user string) []string
}

// TestE2EMCPElicitation: an MCP server's question during a tool call is put to the person who
// asked, through the real Slack and Discord adapters: a stranger's press is refused with a note
// only they see and does not answer; the requester's press, or their typed reply, reaches the
// server and the turn goes on with the tool's result; a URL-mode link goes to the requester
// alone.
func TestE2EMCPElicitation(t *testing.T) {
	shop := shopMCP(t)
	for _, make := range []func(t *testing.T) elicitPlatform{slackElicit, discordElicit} {
		ep := make(t)
		t.Run(ep.name, func(t *testing.T) {
			vars := shopModel(t)
			for k, v := range ep.vars {
				vars[k] = v
			}
			g := startGateway(t, vars, "mcp:\n  servers: [{name: shop, url: '"+shop+"', safety: safe}]\n")
			waitReadyz(t, g.base, http.StatusOK, "mcp:shop", func(s string) bool { return strings.HasPrefix(s, "ok") })
			waitReadyz(t, g.base, http.StatusOK, ep.readyEntry, func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })

			c := ep.newConv(t, "[elicit-"+ep.name+"]")
			ep.open(t, c, ep.requester, "order a shirt "+c.tag)
			q := c.waitMsg(t, "MCP server shop asks", "Which size?")
			ep.press(t, c, q.ID, ep.stranger, "elicit:v0")
			ep.waitFor(t, "the stranger's private note", func() bool {
				return strings.Contains(strings.Join(ep.private(c, ep.stranger), "\n"), "Only the person")
			})
			if got := c.find(afterToolText); len(got) > 0 {
				t.Fatalf("the turn went on after a stranger's press: %q", got[0].Text)
			}
			ep.press(t, c, q.ID, ep.requester, "elicit:v1")
			// The answer streams: wait for the text that shows what the server got.
			c.waitMsg(t, afterToolText, `"action":"accept"`, `"size":"large"`)
			c.waitMsg(t, "Answered by")

			// A typed answer: the requester's reply (addressed to the bot) is the value.
			a := ep.newConv(t, "[elicit-typed-"+ep.name+"]")
			ep.open(t, a, ep.requester, "order a shirt "+a.tag)
			a.waitMsg(t, "MCP server shop asks", "Which size?")
			ep.say(t, a, ep.requester, "small")
			a.waitMsg(t, afterToolText, `"action":"accept"`, `"size":"small"`)

			u := ep.newConv(t, "[elicit-url-"+ep.name+"]")
			ep.open(t, u, ep.requester, "connect me "+u.tag)
			u.waitMsg(t, afterToolText, `"action":"accept"`)
			if !strings.Contains(strings.Join(ep.private(u, ep.requester), "\n"), "https://shop.example/connect?s=42") {
				t.Errorf("the requester was not sent the link privately; shown alone: %q", ep.private(u, ep.requester))
			}
			if got := u.find("shop.example"); len(got) > 0 {
				t.Errorf("the link was posted in the conversation: %q", got[0].Text)
			}
		})
	}
}

func slackElicit(t *testing.T) elicitPlatform {
	p, srv := newSlackPlatform(t)
	return elicitPlatform{platform: p,
		press: func(t *testing.T, c *conv, msgID, user, value string) {
			t.Helper()
			if _, err := srv.PushInteractive(slacktest.ButtonPress(user, user, c.ch, msgID, "echogate_choice:"+value)); err != nil {
				t.Fatal(err)
			}
		},
		private: p.private}
}

func discordElicit(t *testing.T) elicitPlatform {
	p, srv := newDiscordPlatform(t)
	return elicitPlatform{platform: p,
		press: func(t *testing.T, c *conv, msgID, user, value string) {
			t.Helper()
			if _, err := srv.ClickButton(msgID, discordtest.User{ID: user, Username: user}, "echogate_choice:"+value); err != nil {
				t.Fatal(err)
			}
		},
		private: func(c *conv, user string) []string {
			var out []string
			for _, m := range srv.BotMessages(srv.DMChannel(user)) {
				out = append(out, m.Content)
			}
			return out
		}}
}
