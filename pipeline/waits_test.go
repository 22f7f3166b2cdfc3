package pipeline

import (
	"testing"
	"time"
)

// TestWaitSchedules pins the session-lock wait (20ms doubling to 1s) and the deferred replay's
// (DeferredRetry doubling per deferral to maxDeferredRetry).
func TestWaitSchedules(t *testing.T) {
	for tries, want := range map[int]time.Duration{1: 20 * time.Millisecond, 2: 40 * time.Millisecond, 6: 640 * time.Millisecond, 7: time.Second, 100: time.Second} {
		if got := lockWait.Delay(tries); got != want {
			t.Errorf("lockWait.Delay(%d) = %s, want %s", tries, got, want)
		}
	}
	for deferrals, want := range map[int]time.Duration{0: 5 * time.Second, 1: 10 * time.Second, 6: 320 * time.Second, 7: maxDeferredRetry, 40: maxDeferredRetry} {
		if got := deferredWait(5*time.Second, deferrals); got != want {
			t.Errorf("deferredWait(5s, %d) = %s, want %s", deferrals, got, want)
		}
	}
}
