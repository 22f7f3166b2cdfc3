package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMisspeltVariablesWarn: a variable outside ECHOGATE_ one letter off a name the gateway
// reads, and a ${VAR} in a token field that expands to nothing, are named with the likely fix
// (else they give a web-only or demo gateway in silence); ECHOGATE_SLACK_TOKEN points at the bot
// token. Names nothing resembles, and the example file's references left unset, stay quiet.
func TestMisspeltVariablesWarn(t *testing.T) {
	for name, tt := range map[string]struct {
		yaml  string
		vars  map[string]string
		code  int
		want  []string
		quiet bool
	}{
		"slack typo":          {vars: map[string]string{"SLACK_BOT_TOKN": "xoxb-1"}, want: []string{"SLACK_BOT_TOKN", "did you mean SLACK_BOT_TOKEN?"}},
		"openai typo":         {vars: map[string]string{"OPENAI_APIKEY": "sk-1"}, want: []string{"OPENAI_APIKEY", "did you mean OPENAI_API_KEY?"}},
		"database typo":       {vars: map[string]string{"DATABSE_URL": "postgres://x"}, want: []string{"DATABSE_URL", "did you mean DATABASE_URL?"}},
		"empty own reference": {yaml: "slack:\n  bot_token: ${MY_SLACK_BOT}\n", want: []string{"c.yaml, line 2: slack.bot_token: ${MY_SLACK_BOT} is empty", "MY_SLACK_BOT is not set"}},
		"empty with a typo set": {yaml: "discord:\n  token: ${DISCORD_BOT_TOKEN}\n", vars: map[string]string{"DISCORD_BOT_TOKN": "x"},
			want: []string{"discord.token: ${DISCORD_BOT_TOKEN} is empty", "did you mean DISCORD_BOT_TOKEN?"}},
		"slack token":     {vars: map[string]string{"ECHOGATE_SLACK_TOKEN": "xoxb-1"}, code: 2, want: []string{"ECHOGATE_SLACK_TOKEN", "did you mean SLACK_BOT_TOKEN"}},
		"example unset":   {yaml: "slack:\n  bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}\n", quiet: true},
		"unrelated names": {vars: map[string]string{"OPENAI_ORG_ID": "org-1", "SLACK_WEBHOOK": "https://x", "HOME": "/root"}, quiet: true},
		"referenced name": {yaml: "slack:\n  bot_token: ${SLACK_BOT_TOKEN_PROD}\n  app_token: xapp-1\n", vars: map[string]string{"SLACK_BOT_TOKEN_PROD": "xoxb-1"}, quiet: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			vars := map[string]string{"ECHOGATE_DATA_DIR": filepath.Join(dir, "data")}
			for k, v := range tt.vars {
				vars[k] = v
			}
			args := []string{"migrate"}
			if tt.yaml != "" {
				if err := os.WriteFile("c.yaml", []byte(tt.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = []string{"--config", "c.yaml", "migrate"}
			}
			e, _, errb := testEnv(vars, args...)
			if code := run(context.Background(), e); code != tt.code {
				t.Fatalf("exit = %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			msg := errb.String()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr = %q, want it to contain %q", msg, w)
				}
			}
			if tt.quiet && strings.Contains(msg, "WARN") {
				t.Errorf("stderr = %q, want no warning", msg)
			}
		})
	}
}
