// Package backoff is the project's one retry schedule: exponential growth with a cap, from
// github.com/cenkalti/backoff/v5, and "equal jitter" on top (half of the step plus a random part
// of the other half), so retries of many clients never synchronise yet never spin.
//
// cenkalti's ExponentialBackOff computes the steps (Multiplier 2, RandomizationFactor 0, so no
// randomness of its own). Its jitter is not used: it is symmetric around the step, can exceed
// MaxInterval, and draws from the global math/rand/v2 source with no way to inject one, while
// the callers here document "between half and all of min(Initial·2^(n-1), Max)" and their tests
// pin schedules with a deterministic Jitter.
//
// Users: the OpenAI provider's retries, the Slack Socket Mode and Discord gateway reconnects, MCP
// server reconnects, the pipeline's session-lock wait and its deferred-event replay, a scheduled
// job's pause after failures (Step, no jitter: every replica computes the same) and its webhook
// delivery's retries.
package backoff

import (
	"math/rand/v2"
	"time"

	cenkalti "github.com/cenkalti/backoff/v5"
)

// Policy is a retry schedule. The zero Jitter is uniform random.
type Policy struct {
	// Initial is the first step; each further step doubles it.
	Initial time.Duration
	// Max caps every step (and so every delay).
	Max time.Duration
	// Jitter returns a value in [0, max]; the delay is step/2 + Jitter(step - step/2). Nil
	// means uniform random; NoJitter makes every delay the whole step.
	Jitter func(max time.Duration) time.Duration
}

// NoJitter is a Jitter that always returns max: the delay is the whole step.
func NoJitter(max time.Duration) time.Duration { return max }

// Random is the default Jitter: uniform in [0, max].
func Random(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return rand.N(max + 1) // #nosec G404 -- jitter needs no cryptographic randomness
}

// Step returns retry n's step without jitter: Initial·2^(n-1) capped at Max; 0 for n ≤ 0.
func (p Policy) Step(n int) time.Duration {
	if n <= 0 || p.Initial <= 0 {
		return 0
	}
	b := &cenkalti.ExponentialBackOff{InitialInterval: p.Initial, Multiplier: 2, MaxInterval: p.Max}
	var d time.Duration
	for range n {
		if d = b.NextBackOff(); d >= p.Max {
			break
		}
	}
	return min(d, p.Max)
}

// Delay returns the wait before retry n (1-based): half of Step(n) plus Jitter of the other half.
func (p Policy) Delay(n int) time.Duration {
	d := p.Step(n)
	if d <= 0 {
		return 0 // Jitter is not asked about an empty step
	}
	jitter := p.Jitter
	if jitter == nil {
		jitter = Random
	}
	half := d / 2
	return half + jitter(d-half)
}
