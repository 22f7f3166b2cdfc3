package slack

import (
	"testing"
	"time"
)

// TestConnectGateBackoff pins the Socket Mode reconnect schedule: the first connect waits
// nothing, the second up to 1s, then 2s, 4s, … capped at 30s with equal jitter (within [d/2, d]);
// a connection that stayed up a minute starts the schedule again.
func TestConnectGateBackoff(t *testing.T) {
	clk := &manualClock{now: time.Unix(1000, 0)}
	g := newConnectGate(clk, nil)
	bounds := [][2]time.Duration{
		{0, 0}, {0, time.Second}, {time.Second, 2 * time.Second}, {2 * time.Second, 4 * time.Second},
		{4 * time.Second, 8 * time.Second}, {8 * time.Second, 16 * time.Second},
		{15 * time.Second, 30 * time.Second}, {15 * time.Second, 30 * time.Second},
	}
	for i, b := range bounds {
		if got := g.delay(); got < b[0] || got > b[1] {
			t.Fatalf("delay() #%d = %s, want within [%s, %s]", i, got, b[0], b[1])
		}
	}
	g.connected()
	clk.now = clk.now.Add(stableConnection)
	if got := g.delay(); got != 0 {
		t.Errorf("delay() after a stable connection = %s, want 0", got)
	}
}

// TestRetryBackoff pins the API retry schedule: initial·2^n capped at max, within [d/2, d].
func TestRetryBackoff(t *testing.T) {
	bo := backoff{initial: 500 * time.Millisecond, max: 8 * time.Second}
	for i, d := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if got := bo.next(); got < d/2 || got > d {
			t.Fatalf("next() #%d = %s, want within [%s, %s]", i, got, d/2, d)
		}
	}
	bo.reset()
	if got := bo.next(); got > 500*time.Millisecond {
		t.Errorf("next() after reset = %s, want at most 500ms", got)
	}
}
