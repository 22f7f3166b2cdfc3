package router

import (
	"errors"
	"fmt"

	"github.com/echogate/echogate/agent"
)

// Sentinel errors.
var (
	// ErrBreakerOpen is wrapped when a model was skipped because its circuit breaker is open (or
	// half-open with its probe already running) and no other model of the route answered. It
	// wraps agent.ErrUnavailable, so callers treat it like any other "model unavailable".
	ErrBreakerOpen = fmt.Errorf("router: circuit breaker open: %w", agent.ErrUnavailable)
	// ErrUnknownModel is wrapped when a request must go to a model no provider serves (the
	// request's model when no route matched and no default route is configured).
	ErrUnknownModel = errors.New("router: model is not served by any configured provider")
)

// errCounted and errExcluded are what the router reports to a breaker: a failure that counts
// toward opening it, or an outcome that must not count either way (the caller cancelled, the
// request itself was bad).
var (
	errCounted  = errors.New("router: model failed")
	errExcluded = errors.New("router: outcome not counted")
)
