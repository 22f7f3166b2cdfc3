package main

import (
	"testing"
	"time"
)

// With PostgreSQL a replica renews the claims of the events it holds (pipeline/renew.go), so an
// event is taken over only once its replica stopped renewing: agent.replay_after defaults to a
// minute whatever the turn timeout, and is what it is set to; a single-process store replays at
// start only.
func TestPipelineConfigReplayAfter(t *testing.T) {
	for _, tt := range []struct {
		name    string
		backend string
		set     time.Duration
		turn    time.Duration
		want    time.Duration
	}{
		{"postgres default", "postgres", 0, 0, time.Minute},
		{"postgres default with a long turn timeout", "postgres", 0, 30 * time.Minute, time.Minute},
		{"postgres set", "postgres", 2 * time.Second, 0, 2 * time.Second},
		{"sqlite", "sqlite", 0, 0, 0},
	} {
		cfg := &Config{}
		cfg.Agent.ReplayAfter, cfg.Agent.TurnTimeout = Duration(tt.set), Duration(tt.turn)
		if got := pipelineConfig(cfg, tt.backend).ReplayAfter; got != tt.want {
			t.Errorf("%s: ReplayAfter = %v, want %v", tt.name, got, tt.want)
		}
	}
}
