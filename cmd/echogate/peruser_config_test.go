package main

import (
	"strings"
	"testing"

	"github.com/echogate/echogate/pipeline"
)

// agent.max_concurrent_turns_per_user and agent.user_rate: defaults, "none", and mistakes
// named by their key.
func TestPerUserLimitsConfig(t *testing.T) {
	for name, tt := range map[string]struct {
		yaml    string
		want    pipeline.PerUserLimits
		wantErr string
	}{
		"defaults":         {"agent: {}", pipeline.PerUserLimits{MaxConcurrentTurns: 3, RatePerMinute: 20, Burst: 10}, ""},
		"set":              {"agent: {max_concurrent_turns_per_user: 5, user_rate: {per_minute: 6, burst: 2}}", pipeline.PerUserLimits{MaxConcurrentTurns: 5, RatePerMinute: 6, Burst: 2}, ""},
		"off":              {"agent: {max_concurrent_turns_per_user: -1, user_rate: {per_minute: -1}}", pipeline.PerUserLimits{Burst: 10}, ""},
		"bad cap":          {"agent: {max_concurrent_turns_per_user: -2}", pipeline.PerUserLimits{}, "agent.max_concurrent_turns_per_user: -2 is out of range"},
		"bad rate":         {"agent: {user_rate: {per_minute: -3}}", pipeline.PerUserLimits{}, "agent.user_rate.per_minute: -3 is out of range"},
		"bad burst":        {"agent: {user_rate: {burst: -1}}", pipeline.PerUserLimits{}, "agent.user_rate.burst: -1 is negative"},
		"unknown rate key": {"agent: {user_rate: {per_hour: 3}}", pipeline.PerUserLimits{}, `unknown key "per_hour"`},
	} {
		cfg, err := loadYAML(t, tt.yaml)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: loadConfig = %v, want an error containing %q", name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: loadConfig = %v, want nil", name, err)
			continue
		}
		if got := cfg.Agent.perUser(); got != tt.want {
			t.Errorf("%s: perUser() = %+v, want %+v", name, got, tt.want)
		}
	}
}
