package slack_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/echogate/echogate/channels/channeltest"
	"github.com/echogate/echogate/channels/slack"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

func TestSlackCheck(t *testing.T) {
	for name, tt := range map[string]struct {
		opts      slacktest.Options
		bot, app  string
		fail      string // a Web API method answering 429
		want      string
		wantInAll string // in some finding's detail or fix
	}{
		"not configured": {want: "slack:skip", wantInAll: "SLACK_BOT_TOKEN unset"},
		"working tokens": {bot: slacktest.DefaultBotToken, app: slacktest.DefaultAppToken,
			want: "slack:bot_token:ok slack:scopes:ok slack:socket_mode:ok", wantInAll: "all required bot scopes granted"},
		"bot token only": {bot: slacktest.DefaultBotToken, want: "slack:bot_token:ok slack:scopes:ok"},
		"wrong bot token": {bot: "xoxb-wrong", app: slacktest.DefaultAppToken,
			want: "slack:bot_token:fail slack:socket_mode:ok", wantInAll: "SLACK_BOT_TOKEN is not valid"},
		"wrong app token": {bot: slacktest.DefaultBotToken, app: "xapp-wrong",
			want: "slack:bot_token:ok slack:scopes:ok slack:socket_mode:fail", wantInAll: "app-level token"},
		"missing scope": {opts: slacktest.Options{Scopes: []string{"chat:write"}}, bot: slacktest.DefaultBotToken,
			want: "slack:bot_token:ok slack:scopes:fail", wantInAll: "missing bot scopes: "},
		"rate limited": {bot: slacktest.DefaultBotToken, fail: "auth.test",
			want: "slack:bot_token:fail", wantInAll: "rate limited by Slack (HTTP 429), retry after 30s"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := slacktest.New(tt.opts)
			defer srv.Close()
			if tt.fail != "" {
				srv.Fail(tt.fail, slacktest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 30})
			}
			fs := slack.NewChecker(slack.Config{BotToken: tt.bot, AppToken: tt.app, APIURL: srv.APIURL()}, nil, nil).Check(context.Background())
			channeltest.CheckFindings(t, fs, tt.want, tt.wantInAll)
		})
	}
}
