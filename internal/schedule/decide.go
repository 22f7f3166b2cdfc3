package schedule

import (
	"fmt"
	"github.com/echogate/echogate/internal/backoff"
	"time"
)

// CatchUp is what a job does with slots missed while no scheduler ran (downtime, a paused
// process, back-off after failures).
type CatchUp struct {
	// Policy: CatchUpOnce (default) runs the latest missed slot once if it is not older than
	// MaxLateness; CatchUpSkip runs only a slot that is on time (not older than the worker's
	// Grace).
	Policy string
	// MaxLateness bounds CatchUpOnce; default DefaultMaxLateness.
	MaxLateness time.Duration
}

// Catch-up policies.
const (
	CatchUpOnce = "once"
	CatchUpSkip = "skip"
)

// Defaults of CatchUp and of a slot's on-time tolerance.
const (
	DefaultMaxLateness = time.Hour
	// DefaultGrace is how late a slot may start and still be on time: what a busy or slow
	// scheduler (and the poll bound) may add to a slot without it counting as missed.
	DefaultGrace = time.Minute
)

// Validate checks the policy and fills the defaults.
func (c CatchUp) Validate() (CatchUp, error) {
	switch c.Policy {
	case "":
		c.Policy = CatchUpOnce
	case CatchUpOnce, CatchUpSkip:
	default:
		return c, fmt.Errorf("%w: catch_up %q: use once or skip", ErrInvalid, c.Policy)
	}
	switch {
	case c.MaxLateness < 0:
		return c, fmt.Errorf("%w: max_lateness %s: must be positive (default %s)", ErrInvalid, c.MaxLateness, DefaultMaxLateness)
	case c.MaxLateness == 0:
		c.MaxLateness = DefaultMaxLateness
	}
	return c, nil
}

// Decision is what to do with a job whose cursor (its next slot) is due.
type Decision struct {
	Run  bool      // run Slot
	Slot time.Time // the slot to run (when Run)
	// Next is the job's cursor after this decision: the first slot after now; zero with Done.
	Next time.Time
	Done bool // no slot after now: a one-shot that ran or was missed
}

// maxWalk bounds the slots Decide walks through inside the catch-up window.
const maxWalk = 100_000

// Decide picks, for a job whose cursor is at or before now, the slot to run: the latest slot
// in [cursor, now] that is not older than the window (cu.MaxLateness for once, grace for skip,
// never less than grace), if any; every other missed slot is skipped. The new cursor is the
// first slot after now.
func Decide(s Schedule, cursor, now time.Time, cu CatchUp, grace time.Duration) Decision {
	if grace <= 0 {
		grace = DefaultGrace
	}
	window := grace
	if cu.Policy != CatchUpSkip {
		window = max(cu.MaxLateness, grace)
		if cu.MaxLateness == 0 {
			window = max(DefaultMaxLateness, grace)
		}
	}
	var d Decision
	if !cursor.After(now) {
		from := now.Add(-window)
		slot, ok := cursor, true
		if slot.Before(from) {
			slot, ok = s.Next(from.Add(-time.Nanosecond))
		}
		if ok && !slot.After(now) {
			for range maxWalk {
				n, more := s.Next(slot)
				if !more || n.After(now) {
					break
				}
				slot = n
			}
			d.Run, d.Slot = true, slot
		}
	}
	n, ok := s.Next(now)
	if !cursor.After(now) {
		d.Next, d.Done = n, !ok
	} else {
		d.Next = cursor
	}
	return d
}

// Backoff is the pause after n consecutive failures before the job's next run:
// min(BackoffBase·2^(n-1), BackoffMax); zero for n <= 0. It is a pure function of the failure
// count the store keeps (internal/backoff's step, no jitter), so every replica and restart
// agrees on it.
func Backoff(n int) time.Duration {
	return backoff.Policy{Initial: BackoffBase, Max: BackoffMax}.Step(n)
}

// Back-off bounds.
const (
	BackoffBase = time.Minute
	BackoffMax  = time.Hour
)
