package pipeline

import (
	"time"

	"github.com/echogate/echogate/internal/backoff"
)

// The pipeline's own retry waits, on internal/backoff. Both are without jitter: they space one
// process's retries of its own work, which nothing else retries in step with.

// lockWait is the wait before the next TryLockSession while another replica runs the session:
// 20ms doubling to 1s.
var lockWait = backoff.Policy{Initial: 20 * time.Millisecond, Max: time.Second, Jitter: backoff.NoJitter}

// deferredWait is the wait before replaying an event deferred deferrals times already:
// first·2^deferrals, capped at maxDeferredRetry.
func deferredWait(first time.Duration, deferrals int) time.Duration {
	return backoff.Policy{Initial: first, Max: maxDeferredRetry, Jitter: backoff.NoJitter}.Delay(deferrals + 1)
}
