package schedule

import (
	"testing"
	"time"
)

// FuzzCompile: a cron expression or zone from a user or the model never panics, and a schedule
// that compiles yields slots strictly after the instant asked.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"0 9 * * MON-FRI", "*/15 2 * * *", "30 2 * * *", "@daily", "0 0 29 2 *", "*/0 * * * *", "1-0 * * * *", "0 9 * * 7", "? ? ? ? ?", "0/0 * * * *"} {
		f.Add(s, "Europe/Berlin")
	}
	now := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, zone string) {
		sch, err := Compile(Spec{Cron: expr, Timezone: zone}, Limits{}, now)
		if err != nil {
			return
		}
		at := now
		for range 5 {
			n, ok := sch.Next(at)
			if !ok {
				return
			}
			if !n.After(at) {
				t.Fatalf("Compile(%q, %q).Next(%v) = %v, not after", expr, zone, at, n)
			}
			at = n
		}
	})
}

// FuzzParseWhen: a one-shot time from the model never panics.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"in 10m", "in 2h30m", "2026-12-08T10:00:00+01:00", "in -1h", "in 9999999h", "in 1e9h"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if at, err := ParseWhen(s, now); err == nil && at.IsZero() {
			t.Fatalf("ParseWhen(%q) = the zero time without an error", s)
		}
	})
}
