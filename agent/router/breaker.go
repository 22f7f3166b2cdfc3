package router

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	circuit "github.com/echogate/echogate/internal/breaker"
)

// Breaker states as reported by BreakerStatus.State and Config.OnState.
const (
	StateClosed   = "closed"
	StateHalfOpen = "half-open"
	StateOpen     = "open"
)

// BreakerStatus is one model's circuit breaker, for the console and the admin API.
type BreakerStatus struct {
	Model string `json:"model"`
	// State is "closed" (calls pass), "open" (calls are skipped until the cool-down ends) or
	// "half-open" (the next call is a probe: success closes it, failure opens it again).
	State string `json:"state"`
	// Since is when the breaker entered State (by Config.Clock); zero when it never changed.
	Since time.Time `json:"since,omitzero"`
	// ConsecutiveFailures counts failures in a row since the last success or state change.
	ConsecutiveFailures uint32 `json:"consecutive_failures"`
	// Calls, Failures and Skipped are totals since the router started: calls that reached the
	// model, those that failed with a counted error, and calls skipped because the breaker did
	// not allow them.
	Calls    uint64 `json:"calls"`
	Failures uint64 `json:"failures"`
	Skipped  uint64 `json:"skipped"`
	// LastError is the last counted failure's text and LastErrorAt its time.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// breaker is one model's circuit breaker (internal/breaker, on Config.Clock) plus the totals the
// console shows.
type breaker struct {
	model string
	cb    *circuit.Breaker

	calls, failures, skipped atomic.Uint64

	mu          sync.Mutex
	since       time.Time
	lastErr     string
	lastErrTime time.Time
}

func newBreaker(model string, cfg BreakerConfig, now func() time.Time, onState func(model, from, to string)) *breaker {
	b := &breaker{model: model}
	b.cb = circuit.New(circuit.Settings{
		Name:     model,
		Failures: cfg.Failures,
		Probes:   cfg.Probes,
		CoolDown: cfg.CoolDown,
		Now:      now,
		// Only errCounted is a failure; errExcluded is neither (see outcome).
		IsSuccessful: func(err error) bool { return err == nil || !errors.Is(err, errCounted) },
		IsExcluded:   func(err error) bool { return errors.Is(err, errExcluded) },
		// Called with the breaker's lock held: record and forward, never call back into cb.
		OnState: func(name string, from, to circuit.State) {
			b.mu.Lock()
			b.since = now()
			b.mu.Unlock()
			if onState != nil {
				onState(name, from.String(), to.String())
			}
		},
	})
	return b
}

// allow asks the breaker for one call. done must be called exactly once with the outcome.
func (b *breaker) allow() (done func(error), ok bool) {
	done, err := b.cb.Allow()
	if err != nil {
		b.skipped.Add(1)
		return nil, false
	}
	b.calls.Add(1)
	return done, true
}

// failed records a counted failure's text for the console.
func (b *breaker) failed(at time.Time, err error) {
	b.failures.Add(1)
	b.mu.Lock()
	b.lastErr, b.lastErrTime = err.Error(), at
	b.mu.Unlock()
}

func (b *breaker) status() BreakerStatus {
	c := b.cb.Counts()
	s := BreakerStatus{
		Model:               b.model,
		State:               b.cb.State().String(),
		ConsecutiveFailures: c.ConsecutiveFailures,
		Calls:               b.calls.Load(),
		Failures:            b.failures.Load(),
		Skipped:             b.skipped.Load(),
	}
	b.mu.Lock()
	s.Since, s.LastError, s.LastErrorAt = b.since, b.lastErr, b.lastErrTime
	b.mu.Unlock()
	return s
}
