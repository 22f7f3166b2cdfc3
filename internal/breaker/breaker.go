// Package breaker is the project's one circuit breaker: github.com/sony/gobreaker/v2 (its
// counts, trip rule, half-open probe limit, generations and outcome classification) with the
// cool-down run on an injected clock.
//
// gobreaker v2.4.0 reads time.Now itself (Settings has no clock), so its own timeout is set to
// one nanosecond and this package keeps the circuit open until Settings.CoolDown has passed on
// Settings.Now: while it has not, Allow refuses without asking gobreaker, and State reports
// "open". Once it has, the next Allow or State moves the circuit to half-open and Allow hands
// the call to gobreaker, which lets Settings.Probes calls through. Tests therefore drive a
// breaker through open, half-open and closed by advancing a fake clock, without sleeping.
//
// Tools (tools.WithBreaker), models (agent/router), embeddings (internal/embed) and the Discord
// gateway's reconnect loop (channels/discord) each build their breakers here.
package breaker

import (
	"errors"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// State is a breaker state; String gives "closed", "half-open" or "open".
type State = gobreaker.State

// The states.
const (
	StateClosed   = gobreaker.StateClosed
	StateHalfOpen = gobreaker.StateHalfOpen
	StateOpen     = gobreaker.StateOpen
)

// Counts are gobreaker's counters for the current generation (reset on every state change).
type Counts = gobreaker.Counts

var (
	// ErrOpen is returned by Allow while the circuit is open.
	ErrOpen = gobreaker.ErrOpenState
	// ErrTooManyRequests is returned by Allow while the circuit is half-open and its probes are
	// already out.
	ErrTooManyRequests = gobreaker.ErrTooManyRequests
)

// Settings configure New. Zero fields take the defaults given.
type Settings struct {
	// Name names the breaker in OnState.
	Name string
	// Failures opens the circuit: that many consecutive failures, or, when Window is set, that
	// many failures (successes in between or not) within Window. Default 5.
	Failures int
	// Window, when positive, counts failures in a sliding window on Now instead of in a row.
	Window time.Duration
	// Probes is how many calls half-open lets through; that many successes close the circuit,
	// one failure opens it again. Default 1.
	Probes int
	// CoolDown is how long the circuit stays open before half-open. Default 30s.
	CoolDown time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IsSuccessful and IsExcluded classify an outcome passed to done (gobreaker's): by default
	// nil is a success and every error a failure; an excluded outcome is neither.
	IsSuccessful func(err error) bool
	IsExcluded   func(err error) bool
	// OnState, when set, is called on every state change. It runs under the breaker's locks:
	// it must return quickly and must not call back into the breaker.
	OnState func(name string, from, to State)
}

// Default settings.
const (
	DefaultFailures = 5
	DefaultCoolDown = 30 * time.Second
)

// Breaker is a circuit breaker. It is safe for concurrent use.
type Breaker struct {
	s  Settings
	cb *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu       sync.Mutex // taken inside gobreaker's lock (changed, tripped), never around it
	state    State      // the state callers see
	openedAt time.Time
	fails    []time.Time // Window mode: failure times in the closed state, oldest first
}

// New returns a closed breaker.
func New(s Settings) *Breaker {
	if s.Failures <= 0 {
		s.Failures = DefaultFailures
	}
	if s.Probes <= 0 {
		s.Probes = 1
	}
	if s.CoolDown <= 0 {
		s.CoolDown = DefaultCoolDown
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	b := &Breaker{s: s, state: StateClosed}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         s.Name,
		MaxRequests:  uint32(s.Probes),
		Timeout:      time.Nanosecond, // the cool-down is kept on s.Now by Allow and State
		ReadyToTrip:  b.tripped,
		IsSuccessful: s.IsSuccessful,
		IsExcluded:   s.IsExcluded,
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.changed(to)
		},
	})
	return b
}

// Allow asks for one call. When it returns a nil error, done must be called exactly once with
// the call's outcome. Errors: ErrOpen while open, ErrTooManyRequests while half-open with its
// probes out.
func (b *Breaker) Allow() (done func(error), err error) {
	b.mu.Lock()
	if b.state == StateOpen && !b.coolDownOver() {
		b.mu.Unlock()
		return nil, ErrOpen
	}
	b.halfOpen()
	b.mu.Unlock()
	done, err = b.cb.Allow()
	if errors.Is(err, ErrOpen) {
		// gobreaker's one-nanosecond timeout has not passed on the wall clock yet: the circuit
		// is half-open by Now, and this call is refused like a surplus probe.
		err = ErrTooManyRequests
	}
	return done, err
}

// Do runs f if the breaker allows it and reports f's error as the outcome. A panic in f counts
// as a failure and is re-raised.
func Do[T any](b *Breaker, f func() (T, error)) (T, error) {
	done, err := b.Allow()
	if err != nil {
		var zero T
		return zero, err
	}
	settled := false
	defer func() {
		if !settled {
			done(errors.New("breaker: call panicked"))
		}
	}()
	v, err := f()
	settled = true
	done(err)
	return v, err
}

// State returns the current state. An open circuit whose cool-down is over reports half-open.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == StateOpen && b.coolDownOver() {
		b.halfOpen()
	}
	return b.state
}

// Counts returns gobreaker's counters for the current state.
func (b *Breaker) Counts() Counts { return b.cb.Counts() }

// OpenedAt returns when the circuit last opened (zero if never).
func (b *Breaker) OpenedAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.openedAt
}

// CoolDown returns the configured cool-down.
func (b *Breaker) CoolDown() time.Duration { return b.s.CoolDown }

func (b *Breaker) coolDownOver() bool { return !b.s.Now().Before(b.openedAt.Add(b.s.CoolDown)) }

// halfOpen moves an open circuit to half-open. b.mu is held.
func (b *Breaker) halfOpen() {
	if b.state == StateOpen {
		b.set(StateHalfOpen)
	}
}

// set changes the visible state and reports it. b.mu is held.
func (b *Breaker) set(to State) {
	from := b.state
	b.state = to
	if b.s.OnState != nil && from != to {
		b.s.OnState(b.s.Name, from, to)
	}
}

// changed is gobreaker's OnStateChange (under gobreaker's lock).
func (b *Breaker) changed(to gobreaker.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch to {
	case StateOpen:
		b.openedAt, b.fails = b.s.Now(), b.fails[:0]
		b.set(StateOpen)
	case StateClosed:
		b.fails = b.fails[:0]
		b.set(StateClosed)
	case StateHalfOpen:
		// gobreaker's nanosecond timeout passed; the circuit is half-open once Now says so.
		if b.coolDownOver() {
			b.halfOpen()
		}
	}
}

// tripped is gobreaker's ReadyToTrip, called after each failure in the closed state (under
// gobreaker's lock).
func (b *Breaker) tripped(c gobreaker.Counts) bool {
	if b.s.Window <= 0 {
		return c.ConsecutiveFailures >= uint32(b.s.Failures)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.s.Now()
	keep := b.fails[:0]
	for _, t := range b.fails {
		if now.Sub(t) < b.s.Window {
			keep = append(keep, t)
		}
	}
	b.fails = append(keep, now)
	if len(b.fails) > b.s.Failures {
		b.fails = b.fails[len(b.fails)-b.s.Failures:]
	}
	return len(b.fails) >= b.s.Failures
}
