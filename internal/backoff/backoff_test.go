package backoff

import (
	"testing"
	"time"
)

// TestDelaySchedule pins the schedule: Initial·2^(n-1) capped at Max, then "equal jitter"
// (half of it plus Jitter of the other half).
func TestDelaySchedule(t *testing.T) {
	none := func(time.Duration) time.Duration { return 0 }
	tests := []struct {
		name string
		p    Policy
		n    int
		want time.Duration
	}{
		{"n 0 waits nothing", Policy{Initial: time.Second, Max: time.Minute, Jitter: NoJitter}, 0, 0},
		{"first", Policy{Initial: time.Second, Max: time.Minute, Jitter: NoJitter}, 1, time.Second},
		{"doubles", Policy{Initial: time.Second, Max: time.Minute, Jitter: NoJitter}, 4, 8 * time.Second},
		{"capped", Policy{Initial: time.Second, Max: time.Minute, Jitter: NoJitter}, 7, time.Minute},
		{"stays capped", Policy{Initial: time.Second, Max: time.Minute, Jitter: NoJitter}, 1000, time.Minute},
		{"lock wait", Policy{Initial: 20 * time.Millisecond, Max: time.Second, Jitter: NoJitter}, 7, time.Second},
		{"lock wait before the cap", Policy{Initial: 20 * time.Millisecond, Max: time.Second, Jitter: NoJitter}, 6, 640 * time.Millisecond},
		{"initial above max is capped", Policy{Initial: time.Hour, Max: time.Minute, Jitter: NoJitter}, 1, time.Minute},
		{"zero jitter waits half", Policy{Initial: time.Second, Max: time.Minute, Jitter: none}, 3, 2 * time.Second},
		{"half jitter", Policy{Initial: time.Second, Max: time.Minute, Jitter: func(d time.Duration) time.Duration { return d / 2 }}, 3, 3 * time.Second},
		{"zero initial", Policy{Initial: 0, Max: time.Minute, Jitter: NoJitter}, 5, 0},
		{"n 0 does not ask Jitter", Policy{Initial: time.Second, Max: time.Minute, Jitter: func(d time.Duration) time.Duration { return d - 1 }}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Delay(tt.n); got != tt.want {
			t.Errorf("%s: %+v.Delay(%d) = %s, want %s", tt.name, tt.p, tt.n, got, tt.want)
		}
	}
}

// TestDelayRandomJitterStaysInRange: the default jitter keeps each delay within [d/2, d].
func TestDelayRandomJitterStaysInRange(t *testing.T) {
	p := Policy{Initial: time.Second, Max: 30 * time.Second}
	for n := 1; n <= 8; n++ {
		d := min(time.Second<<(n-1), 30*time.Second)
		for range 200 {
			if got := p.Delay(n); got < d/2 || got > d {
				t.Fatalf("Delay(%d) = %s, want within [%s, %s]", n, got, d/2, d)
			}
		}
	}
}
