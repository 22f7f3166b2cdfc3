package main

import (
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// TestE2EApprovalPromptsNamePeople: through the real Slack and Discord adapters, the approval
// prompt names its requester by display name ("Only ann or an approver can decide."), the
// denial the model reads and the edited prompt name who denied it, and no text shows the raw
// platform id. Discord's readiness names the bot by its name, not its id.
func TestE2EApprovalPromptsNamePeople(t *testing.T) {
	for _, pl := range []struct {
		name string
		make func(t *testing.T) *platform
	}{
		{"slack", func(t *testing.T) *platform {
			p, srv := newSlackPlatform(t)
			srv.AddUser(slacktest.User{ID: p.requester, Name: "ann.l", DisplayName: "ann"})
			return p
		}},
		{"discord", func(t *testing.T) *platform { p, _ := newDiscordPlatform(t); return p }},
	} {
		t.Run(pl.name, func(t *testing.T) {
			p := pl.make(t)
			g, model := approvalGateway(t, p, approvalConfig)
			id := p.qualified(p.requester)
			if p.name == echogate.PlatformDiscord {
				_, ready := readyz(t, g.base)
				if d := ready["discord"]; !strings.Contains(d, "connected as echobot") {
					t.Errorf("/api/ready discord = %q, want the bot named (connected as echobot)", d)
				}
			}
			// Slack names people in the background (users.info): a first message teaches it.
			warm := p.newConv(t, "[names-warm]")
			p.open(t, warm, p.requester, "hello [names-warm]")
			warm.waitMsg(t, echoText)
			waitName(t, g.base, id, "ann")

			c := p.newConv(t, "[names-1]")
			p.open(t, c, p.requester, "what time is it? [names-1]")
			prompt := c.waitPrompt(t, "current_time")
			if !strings.Contains(prompt.Text, "Only ann or an approver can decide.") || strings.Contains(prompt.Text, p.requester) {
				t.Errorf("prompt = %q, want it to say \"Only ann or an approver can decide.\" without the id %s", prompt.Text, p.requester)
			}
			p.react(t, c, prompt.ID, p.requester, echogate.ReactionDeny)
			c.waitMsg(t, afterToolText)
			res := singleToolResult(t, approvalEnv{p: p, g: g, model: model}, "[names-1]", "current_time")
			if !strings.Contains(res, "not approved: ann denied it") {
				t.Errorf("current_time result = %q, want \"not approved: ann denied it\"", res)
			}
			edited := c.waitMsg(t, "Denied by")
			if !strings.Contains(edited.Text, "❌ Denied by ann") || strings.Contains(edited.Text, p.requester) {
				t.Errorf("decided prompt = %q, want \"❌ Denied by ann\" without the id", edited.Text)
			}
		})
	}
}

// waitName waits until the gateway's name directory (GET /api/names) knows id as name.
func waitName(t *testing.T, base, id, name string) {
	t.Helper()
	var got struct {
		Names map[string]string `json:"names"`
	}
	for deadline := time.Now().Add(waitTimeout); ; {
		getJSON(t, base+"/api/names?ids="+id, &got)
		if got.Names[id] == name {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/names?ids=%s = %v, want %s", id, got.Names, name)
		}
		time.Sleep(10 * time.Millisecond) // polling an HTTP endpoint: nothing to wait on
	}
}
