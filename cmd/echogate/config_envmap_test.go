package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEnvReachesMapSections: ECHOGATE_<PATH>_<NAME>_<KEY> sets an entry of tools and
// slack.channels (README: every scalar key can be set from the environment), merges with the
// file's entry of that name in any case, and its mistakes name the variable.
func TestEnvReachesMapSections(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("tools:\n  http_fetch: {allow_private: true}\nslack:\n  channels: {C0OPS: {require_mention: true}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(vars map[string]string) (*Config, error) {
		if err := checkEnvNames(environOf(vars)); err != nil {
			return nil, err
		}
		return loadConfigFrom(p, func(k string) string { return vars[k] }, func() []string { return environOf(vars) })
	}
	cfg, err := load(map[string]string{
		"ECHOGATE_TOOLS_CURRENT_TIME_APPROVAL":          "ask",
		"ECHOGATE_TOOLS_HTTP_FETCH_APPROVAL":            "deny",
		"ECHOGATE_TOOLS_HTTP_FETCH_TIMEOUT":             "5s",
		"ECHOGATE_TOOLS_RUN_COMMAND_APPROVERS_ONLY":     "true",
		"ECHOGATE_SLACK_CHANNELS_C0OPS_REQUIRE_MENTION": "false",
		"ECHOGATE_SLACK_CHANNELS_C0NEW_REQUIRE_MENTION": "true",
	})
	if err != nil {
		t.Fatalf("load = %v, want the map entries set", err)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"tools.current_time.approval", cfg.Tools["current_time"].Approval, "ask"},
		{"tools.http_fetch.approval", cfg.Tools["http_fetch"].Approval, "deny"},
		{"tools.http_fetch.allow_private (file)", cfg.Tools["http_fetch"].AllowPrivate, true},
		{"tools.http_fetch.timeout", time.Duration(cfg.Tools["http_fetch"].Timeout), 5 * time.Second},
		{"tools.run_command.approvers_only", cfg.Tools["run_command"].ApproversOnly, true},
		{"slack.channels.C0OPS.require_mention", *cfg.Slack.Channels["C0OPS"].RequireMention, false},
		{"slack.channels.C0NEW.require_mention", *cfg.Slack.Channels["C0NEW"].RequireMention, true},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for name, tt := range map[string]struct {
		vars map[string]string
		want string
	}{
		"bad value":     {map[string]string{"ECHOGATE_TOOLS_CURRENT_TIME_APPROVAL": "maybe"}, `config: ECHOGATE_TOOLS_CURRENT_TIME_APPROVAL: tools.current_time.approval: "maybe": use allow, ask or deny`},
		"bad type":      {map[string]string{"ECHOGATE_TOOLS_HTTP_FETCH_ALLOW_PRIVATE": "sure"}, "ECHOGATE_TOOLS_HTTP_FETCH_ALLOW_PRIVATE: " + `"sure" is not true or false`},
		"unknown field": {map[string]string{"ECHOGATE_TOOLS_CURRENT_TIME_APROVAL": "ask"}, "ECHOGATE_TOOLS_CURRENT_TIME_APROVAL: no setting reads it"},
	} {
		if _, err := load(tt.vars); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: load = %v, want %q", name, err, tt.want)
		}
	}
}

func environOf(vars map[string]string) []string {
	var kv []string
	for k, v := range vars {
		kv = append(kv, k+"="+v)
	}
	return kv
}
