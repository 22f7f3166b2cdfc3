package discord_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

// summary renders findings as "name:ok|skip|fail" joined by spaces.
func summary(fs []channels.Finding) string {
	var b []string
	for _, f := range fs {
		state := "fail"
		switch {
		case f.Skipped:
			state = "skip"
		case f.OK:
			state = "ok"
		}
		b = append(b, f.Name+":"+state)
	}
	return strings.Join(b, " ")
}

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
			if got := summary(fs); got != tt.want {
				t.Errorf("Check = %s, want %s (%+v)", got, tt.want, fs)
			}
			var all strings.Builder
			for _, f := range fs {
				all.WriteString(f.Detail + " " + f.Fix + "\n")
				if !f.OK && !f.Skipped && f.Fix == "" {
					t.Errorf("finding %s fails without a fix: %+v", f.Name, f)
				}
			}
			if !strings.Contains(all.String(), tt.wantInAll) {
				t.Errorf("Check's details = %q, want them to say %q", all.String(), tt.wantInAll)
			}
		})
	}
}
