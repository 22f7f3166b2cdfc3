package discord_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/channeltest"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

func TestDiscordCheck(t *testing.T) {
	noFlags := int64(0)
	for name, tt := range map[string]struct {
		opts      discordtest.Options
		token     string // "" for the server's; "-" for none
		content   bool   // MessageContent asked for
		limited   bool   // users/@me answers 429 once
		want      string
		wantInAll string
	}{
		"not configured":    {token: "-", want: "discord:skip", wantInAll: "DISCORD_BOT_TOKEN unset"},
		"working token":     {want: "discord:token:ok discord:intents:ok", wantInAll: "MESSAGE CONTENT intent not needed"},
		"intent enabled":    {content: true, want: "discord:token:ok discord:intents:ok", wantInAll: "MESSAGE CONTENT intent enabled"},
		"intent missing":    {opts: discordtest.Options{AppFlags: &noFlags}, content: true, want: "discord:token:ok discord:intents:fail", wantInAll: "Privileged Gateway Intents"},
		"intent not needed": {opts: discordtest.Options{AppFlags: &noFlags}, want: "discord:token:ok discord:intents:ok"},
		"wrong token":       {token: "wrong", want: "discord:token:fail", wantInAll: "rejected (HTTP 401)"},
		"rate limited":      {limited: true, want: "discord:token:fail", wantInAll: "rate limited by Discord (HTTP 429)"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := discordtest.NewServer(tt.opts)
			defer srv.Close()
			if tt.limited {
				srv.RateLimitNext(http.MethodGet, "users/@me", 5*time.Second, false)
			}
			token := tt.token
			switch token {
			case "":
				token = srv.Token()
			case "-":
				token = ""
			}
			fs := discord.NewChecker(discord.Config{Token: token, APIURL: srv.APIURL, MessageContent: tt.content}, nil).Check(context.Background())
			channeltest.CheckFindings(t, fs, tt.want, tt.wantInAll)
		})
	}
}
