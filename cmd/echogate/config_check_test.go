package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigMistakes: every YAML or environment mistake exits 2 before anything is written,
// naming the key (and, for YAML, the file and line) and the fix, never a Go type name.
func TestConfigMistakes(t *testing.T) {
	providers := "models:\n  default: m1\n  providers: [{name: p, base_url: 'http://127.0.0.1:1/v1', models: [m1, m2]}]\n"
	for name, tt := range map[string]struct {
		yaml string
		vars map[string]string
		want []string
	}{
		"string for int":        {yaml: "agent:\n  max_iterations: many\n", want: []string{"line 2", "agent.max_iterations", "expected a whole number", `"many"`}},
		"fraction for int":      {yaml: "agent:\n  max_iterations: 2.5\n", want: []string{"line 2", "agent.max_iterations", "whole number", "2.5"}},
		"scalar for section":    {yaml: "budgets: 5\n", want: []string{"line 1", "budgets", "expected a mapping of keys (per_turn_usd"}},
		"duration in words":     {yaml: "agent:\n  turn_timeout: \"5 minutes\"\n", want: []string{"line 2", "agent.turn_timeout", "write it like 30s, 5m or 24h"}},
		"number for duration":   {yaml: "agent:\n  turn_timeout: 300\n", want: []string{"agent.turn_timeout", "30s"}},
		"unknown key":           {yaml: "agent:\n  max_iteration: 3\n", want: []string{"line 2", "agent.max_iteration", `did you mean "max_iterations"`}},
		"unknown section":       {yaml: "agnet:\n  max_iterations: 3\n", want: []string{"agnet", `did you mean "agent"`}},
		"scalar for list":       {yaml: "approval:\n  approvers: slack:U1\n", want: []string{"approval.approvers", "expected a list"}},
		"list for map":          {yaml: "mcp:\n  servers: [{name: a, command: x, env: [A=1]}]\n", want: []string{"mcp.servers[0].env", "expected a mapping"}},
		"word for bool":         {yaml: "slack:\n  channels: {C1: {require_mention: nope}}\n", want: []string{"slack.channels.C1.require_mention", "true or false"}},
		"bad size":              {yaml: "files:\n  max_bytes: lots\n", want: []string{"files.max_bytes"}},
		"route to nothing":      {yaml: providers + "  routes: [{name: r, when: code, model: m3}]\n", want: []string{"models.routes[0].model", `"m3"`, `did you mean "m1"`}},
		"fallback to nothing":   {yaml: providers + "  routes: [{name: r, model: m2, fallback: [gpt-9]}]\n", want: []string{"models.routes[0].fallback[0]", `"gpt-9"`}},
		"route rule":            {yaml: providers + "  routes: [{name: r, when: sometimes, model: m2}]\n", want: []string{"models.routes[0].when", "long, code"}},
		"openai without key":    {yaml: "models:\n  providers: [{name: openai, base_url: https://api.openai.com/v1}]\n", want: []string{"models.providers[0].api_key", "OPENAI_API_KEY"}},
		"env typo":              {vars: map[string]string{"ECHOGATE_AGENT_MAX_ITERATONS": "3"}, want: []string{"ECHOGATE_AGENT_MAX_ITERATONS", "did you mean ECHOGATE_AGENT_MAX_ITERATIONS"}},
		"env unknown":           {vars: map[string]string{"ECHOGATE_FROBNICATE": "1"}, want: []string{"ECHOGATE_FROBNICATE", "no setting reads it"}},
		"env fraction":          {vars: map[string]string{"ECHOGATE_AGENT_MAX_ITERATIONS": "2.5"}, want: []string{"ECHOGATE_AGENT_MAX_ITERATIONS", "not a whole number"}},
		"env duration":          {vars: map[string]string{"ECHOGATE_AGENT_TURN_TIMEOUT": "5 minutes"}, want: []string{"ECHOGATE_AGENT_TURN_TIMEOUT", "30s, 5m or 24h"}},
		"env bool":              {vars: map[string]string{"ECHOGATE_MEMORY_ENABLED": "yes please"}, want: []string{"ECHOGATE_MEMORY_ENABLED", "true or false"}},
		"env key without https": {vars: map[string]string{"OPENAI_BASE_URL": "localhost:11434"}, want: []string{"models.providers[0].base_url", "OPENAI_BASE_URL"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			vars := map[string]string{"ECHOGATE_DATA_DIR": data}
			for k, v := range tt.vars {
				vars[k] = v
			}
			args := []string{"migrate"}
			if tt.yaml != "" {
				p := filepath.Join(dir, "echogate.yaml")
				if err := os.WriteFile(p, []byte(tt.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = []string{"--config", p, "migrate"}
			}
			e, _, errb := testEnv(vars, args...)
			if code := run(context.Background(), e); code != 2 {
				t.Fatalf("exit = %d, want 2 (stderr %q)", code, errb.String())
			}
			msg := errb.String()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr = %q, want it to contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "main.") || strings.Contains(msg, "!!") {
				t.Errorf("stderr = %q leaks Go or YAML type names", msg)
			}
			if _, err := os.Stat(data); err == nil {
				t.Errorf("the data dir was created before the configuration was rejected")
			}
		})
	}
}

// TestExampleConfigIsAWorkingStart: echogate.example.yaml copied to ./echogate.yaml with no key
// set keeps the demo model (a chat answers), and accepts every key it shows.
func TestExampleConfigIsAWorkingStart(t *testing.T) {
	example, err := os.ReadFile("../../echogate.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("echogate.yaml", example, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig("", func(string) string { return "" })
	if err != nil {
		t.Fatalf("the copied example does not load: %v", err)
	}
	if !cfg.demoMode() {
		t.Errorf("copied example without OPENAI_API_KEY: demo mode = false, want true (providers %+v)", cfg.Models.Providers)
	}
	e, out, errb := testEnv(map[string]string{}, "chat", "-m", "hello")
	if code := run(context.Background(), e); code != 0 || !strings.Contains(out.String(), "demo model") {
		t.Fatalf("chat with the copied example: exit %d, stdout %q, stderr %q; want 0 and a demo answer", code, out.String(), errb.String())
	}
	// With a key it is a real provider on the default endpoint.
	cfg, err = loadConfig("", func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-x"}[k] })
	if err != nil || cfg.demoMode() || cfg.Models.Providers[0].BaseURL != defaultBase {
		t.Errorf("copied example with a key: %v, providers %+v", err, cfg.Models.Providers)
	}
}

// TestSlackChannelOverrides: slack.channels is accepted and reaches the adapter's config.
func TestSlackChannelOverrides(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	body := "slack:\n  require_mention: true\n  channels: {C0123: {require_mention: false}, C0456: {}}\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(p, func(string) string { return "" })
	if err != nil {
		t.Fatalf("slack.channels rejected: %v", err)
	}
	sc := slackConfig(cfg.Slack)
	if got := sc.Channels["C0123"].RequireMention; got == nil || *got {
		t.Errorf("slack.channels.C0123.require_mention = %v, want false", got)
	}
	if got := sc.Channels["C0456"].RequireMention; got != nil {
		t.Errorf("slack.channels.C0456.require_mention = %v, want unset (the workspace default)", *got)
	}
}
