// Package clock is the project's one time-source interface. Code that waits or stamps times
// takes a Clock (or, where it only reads the time, a func() time.Time such as Clock.Now) so
// tests drive it with a fake instead of sleeping. The Slack and Discord adapters' Config.Clock
// are this interface; the breakers (internal/breaker) and the router take its Now.
package clock

import "time"

// Clock is a time source.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// System is the wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }
