package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

// TestE2EDiscordDM is `echogate serve` with DISCORD_BOT_TOKEN and DISCORD_API_URL pointing at the
// fake Discord: it discovers the gateway from the REST URL, identifies with the intents it needs,
// /readyz says Discord is connected, a DM is answered once in the DM channel, and after a dropped
// connection it resumes and answers a DM sent while it was away.
func TestE2EDiscordDM(t *testing.T) {
	model := newScriptedModel(t)
	p, srv := newDiscordPlatform(t)
	vars := model.vars()
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "")

	body := waitReadyz(t, g.base, http.StatusOK, "discord", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
	t.Logf("/readyz = %v", body)
	ids := srv.Identifies()
	if len(ids) != 1 {
		t.Fatalf("identifies = %d, want 1", len(ids))
	}
	want := discordgo.IntentsDirectMessages | discordgo.IntentsDirectMessageReactions | discordgo.IntentsGuildMessages |
		discordgo.IntentsGuildMessageReactions
	if got := discordgo.Intent(ids[0].Intents); got&want != want || got&discordgo.IntentsMessageContent != 0 {
		t.Errorf("identify intents = %b, want %b (DMs, DM reactions, guild messages, guild reactions) without the privileged MESSAGE CONTENT (discord.message_content: auto with mentions required)", got, want)
	}

	ann := discordtest.User{ID: "500000000000000001", Username: "ann"}
	dm := srv.DMChannel(ann.ID)
	srv.SendDM(ann, "hello from a DM")
	answer := echoText + "hello from a DM"
	p.waitFor(t, "the DM answer", func() bool {
		for _, m := range srv.BotMessages(dm) {
			if discord.VisibleText(m.Content) == answer {
				return true
			}
		}
		return false
	})
	if got := srv.BotMessages(dm); len(got) != 1 {
		t.Errorf("bot messages in the DM = %d, want exactly the answer: %+v", len(got), got)
	}
	if got := srv.BotMessages(""); len(got) != 1 {
		t.Errorf("bot messages anywhere = %d, want 1", len(got))
	}

	// A dropped connection: a DM dispatched while the gateway is away is replayed on resume and
	// answered once.
	srv.DropConnection()
	srv.SendDM(ann, "are you back")
	p.reconnected(t, 2)
	p.waitFor(t, "the answer after the resume", func() bool {
		for _, m := range srv.BotMessages(dm) {
			if discord.VisibleText(m.Content) == echoText+"are you back" {
				return true
			}
		}
		return false
	})
	if got := srv.BotMessages(dm); len(got) != 2 {
		t.Errorf("bot messages in the DM = %d, want 2 (one answer per DM): %+v", len(got), got)
	}
	if len(srv.Resumes()) == 0 {
		t.Errorf("the gateway identified again instead of resuming: identifies %d, resumes 0", len(srv.Identifies()))
	}
	waitReadyz(t, g.base, http.StatusOK, "discord", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
}
