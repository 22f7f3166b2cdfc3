package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// doctor asks for im:write (conversations.open) only when a job delivers to slack:dm:<user>: an
// app installed without it passes until such a job is configured, then is told which scope is
// missing and what it is for.
func TestDoctorAsksForIMWriteOnlyWithASlackDMJob(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-ok", Models: []string{"gpt-4o-mini"}})
	defer fake.Close()
	scopes := slices.DeleteFunc(slices.Clone(slacktest.DefaultScopes), func(s string) bool { return s == "im:write" })
	srv := slacktest.New(slacktest.Options{Scopes: scopes})
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-ok",
		"SLACK_BOT_TOKEN": slacktest.DefaultBotToken, "SLACK_APP_TOKEN": slacktest.DefaultAppToken, "SLACK_API_URL": srv.APIURL(),
		"ECHOGATE_DATA_DIR": t.TempDir()}
	for name, tt := range map[string]struct {
		yaml string
		want []string
	}{
		"no DM job":      {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:C1'}]", []string{"ok  slack:scopes"}},
		"a Slack DM job": {"schedules: [{name: a, every: 1h, prompt: p, deliver: 'slack:dm:U1'}]", []string{"!!  slack:scopes", "im:write (scheduled jobs delivered to a user's DM"}},
	} {
		e, out, errb := testEnv(vars, "--config", writeConfig(t, tt.yaml), "doctor")
		run(context.Background(), e)
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: doctor output lacks %q:\n%s%s", name, w, out, errb)
			}
		}
	}
}
