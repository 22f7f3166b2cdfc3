package discord

import (
	"math/rand/v2"
	"time"

	"github.com/echogate/echogate/internal/backoff"
	"github.com/echogate/echogate/internal/clock"
)

// Clock is the channel's time source (internal/clock's, the project's one). Tests inject a fake;
// the zero Config uses the system clock.
type Clock = clock.Clock

type systemClock = clock.System

func randJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return rand.N(max)
}

// backoffDelay is the wait before reconnection attempt n (n ≥ 1 counts consecutive failures):
// half of the exponential step (initial·2^(n-1), capped at max) plus a random part of the other
// half ("equal jitter", internal/backoff), so reconnecting shards never synchronise yet never
// retry in a tight loop. n ≤ 0 waits nothing.
func backoffDelay(n int, initial, max time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	return backoff.Policy{Initial: initial, Max: max, Jitter: jitter}.Delay(n)
}
