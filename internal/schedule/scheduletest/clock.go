// Package scheduletest has the fakes of scheduled work's tests: a clock that moves only when
// told to.
package scheduletest

import (
	"sync"
	"time"
)

// Clock is a fake schedule.Clock: Now stands still until Advance or Set; a channel from After
// fires when the clock reaches its deadline.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	added   chan struct{} // signalled when After registers a waiter
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

// NewClock returns a clock reading now.
func NewClock(now time.Time) *Clock { return &Clock{now: now, added: make(chan struct{}, 1)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once it reached now+d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	select {
	case c.added <- struct{}{}:
	default:
	}
	return ch
}

// Waiters returns how many After channels have not fired yet.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Added is signalled (buffered, one) whenever After registers a waiter: a test waits on it
// to know a worker went to sleep, instead of sleeping itself.
func (c *Clock) Added() <-chan struct{} { return c.added }

// Advance moves the clock by d and fires the waiters whose deadline it reached.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never back) and fires the waiters whose deadline it reached.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.c <- c.now
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}
