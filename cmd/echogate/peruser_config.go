package main

import (
	"math"

	"github.com/echogate/echogate/pipeline"
)

// UserRateConfig is agent.user_rate: how many turns one user may start per minute (on average,
// after a burst). A message over it is answered with when to send it again.
type UserRateConfig struct {
	PerMinute float64 `yaml:"per_minute"` // default 20; -1 no limit
	Burst     int     `yaml:"burst"`      // default 10
}

// Defaults of the per-user limits (agent.max_concurrent_turns_per_user, agent.user_rate).
const (
	defaultMaxConcurrentTurnsPerUser = 3
	defaultUserRatePerMinute         = 20
	defaultUserRateBurst             = 10
)

// validatePerUser checks agent.max_concurrent_turns_per_user and agent.user_rate.
func (a AgentConfig) validatePerUser() error {
	switch r := a.UserRate; {
	case a.MaxConcurrentTurnsPerUser < -1:
		return badKey("agent.max_concurrent_turns_per_user", "%d is out of range: use how many turns one user may run at once (0 for the default %d), or -1 for no cap",
			a.MaxConcurrentTurnsPerUser, defaultMaxConcurrentTurnsPerUser)
	case math.IsNaN(r.PerMinute) || math.IsInf(r.PerMinute, 0) || r.PerMinute < 0 && r.PerMinute != -1:
		return badKey("agent.user_rate.per_minute", "%v is out of range: use how many turns one user may start a minute (0 for the default %d), or -1 for no limit",
			r.PerMinute, defaultUserRatePerMinute)
	case r.Burst < 0:
		return badKey("agent.user_rate.burst", "%d is negative: use how many turns one user may start at once (0 for the default %d)", r.Burst, defaultUserRateBurst)
	}
	return nil
}

// perUser is the pipeline's per-user limits for a validated agent section: defaults filled in,
// -1 turned into the pipeline's "none".
func (a AgentConfig) perUser() pipeline.PerUserLimits {
	l := pipeline.PerUserLimits{MaxConcurrentTurns: a.MaxConcurrentTurnsPerUser, RatePerMinute: a.UserRate.PerMinute, Burst: a.UserRate.Burst}
	switch l.MaxConcurrentTurns {
	case 0:
		l.MaxConcurrentTurns = defaultMaxConcurrentTurnsPerUser
	case -1:
		l.MaxConcurrentTurns = 0
	}
	switch l.RatePerMinute {
	case 0:
		l.RatePerMinute = defaultUserRatePerMinute
	case -1:
		l.RatePerMinute = 0
	}
	if l.Burst == 0 {
		l.Burst = defaultUserRateBurst
	}
	return l
}
