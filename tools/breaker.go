package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/echogate/echogate/internal/breaker"
)

// Breaker defaults.
const (
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 30 * time.Second
)

// BreakerConfig configures WithBreaker. The zero value means the defaults.
//
// What counts as a failure (the breaker's notion of "the tool itself is broken"):
//   - a Go error returned by Call (a Go error already means the turn failed),
//   - a panic inside Call (recovered, returned as a *PanicError),
//   - a per-call timeout set by CallTimeout (returned as an error wrapping context.DeadlineExceeded),
//   - an explicit Failure(result) returned by the tool.
//
// What does not count: an IsError Result (bad arguments, a 404, a refused URL: the model's
// request was at fault, not the tool), an *AskUserError (control flow), and any error returned
// after the caller's own ctx ended (cancellation says nothing about the tool's health); those
// calls are neither successes nor failures.
type BreakerConfig struct {
	// Failures is the number of consecutive failures that opens the circuit. Default 5.
	Failures int
	// CoolDown is how long the circuit stays open before one probe call is let through
	// (half-open). A successful probe closes the circuit, a failed one opens it again.
	// Default 30s.
	CoolDown time.Duration
	// CallTimeout, when positive, bounds every call; a call that runs out of it is a failure.
	// Zero means no extra bound (the caller's ctx still applies).
	CallTimeout time.Duration
	// Now is the breaker's clock: the cool-down and the retry time in the open message run on
	// it. Default time.Now.
	Now func() time.Time
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Failures <= 0 {
		c.Failures = DefaultBreakerFailures
	}
	if c.CoolDown <= 0 {
		c.CoolDown = DefaultBreakerCoolDown
	}
	if c.CallTimeout < 0 {
		c.CallTimeout = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// FailureError is returned by Failure. See Failure.
type FailureError struct {
	Result Result
}

func (e *FailureError) Error() string { return "tools: tool failure: " + e.Result.Content }

// Failure marks r as a failure of the tool itself (its backend is down, its process died, its
// credentials were revoked), as opposed to a bad request from the model. A tool returns it as
// its error:
//
//	return tools.Result{}, tools.Failure(tools.Errorf("weather API: %v", err))
//
// WithBreaker counts it as a failure and hands r (forced to IsError) to the caller with a nil
// error, so the model sees the message and the turn goes on. Without WithBreaker it is a plain
// Go error and fails the turn; wrap tools that use it.
func Failure(r Result) error {
	r.IsError = true
	return &FailureError{Result: r}
}

// PanicError is the error a recovered panic inside a tool's Call becomes.
type PanicError struct {
	Tool  string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("tools: %s panicked: %v", e.Tool, e.Value) }

// Recover wraps t so that a panic inside Call is recovered and returned as a *PanicError
// (message "tools: NAME panicked: VALUE") instead of crashing the process. Everything else
// passes through unchanged. WithBreaker already recovers; Recover is for tools without one.
func Recover(t Tool) Tool {
	if t == nil {
		return nil
	}
	if _, ok := t.(*recovered); ok {
		return t
	}
	return &recovered{Tool: t}
}

type recovered struct{ Tool }

func (r *recovered) Call(ctx context.Context, args json.RawMessage) (res Result, err error) {
	return safeCall(ctx, r.Tool, args)
}

// Unwrap returns the wrapped tool.
func (r *recovered) Unwrap() Tool { return r.Tool }

// safeCall runs t.Call, turning a panic into a *PanicError.
func safeCall(ctx context.Context, t Tool, args json.RawMessage) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = Result{}, &PanicError{Tool: t.Spec().Name, Value: v, Stack: debug.Stack()}
		}
	}()
	return t.Call(ctx, args)
}

// Breaker is a tool wrapped in a circuit breaker by WithBreaker. It is safe for concurrent use.
type Breaker struct {
	tool    Tool
	name    string
	cfg     BreakerConfig
	log     *slog.Logger
	onState func(tool, from, to string)
	cb      *breaker.Breaker

	mu       sync.Mutex
	tripFrom breaker.State // the state the circuit last opened from
}

// WithBreaker wraps t in a circuit breaker (internal/breaker, around gobreaker): after cfg.Failures
// consecutive failures (see BreakerConfig for what counts) the circuit opens and every call
// returns at once, without running t, an IsError result:
//
//	tool NAME unavailable: circuit open after 5 consecutive failures; try again after 12:00:30 UTC (in 30s)
//
// After cfg.CoolDown one probe call is let through (half-open; concurrent calls meanwhile are
// refused the same way); its success closes the circuit, its failure reopens it. Panics inside
// Call are recovered (see Recover) and count as failures.
//
// log (nil: discard) gets one line per state change with key "tool". onState (may be nil) is
// called on every state change with "closed", "open" or "half-open"; it runs while the breaker
// holds its lock, so it must return quickly and must not call back into the breaker.
//
// The breaker is internal/breaker's; its cool-down runs on cfg.Now.
func WithBreaker(t Tool, cfg BreakerConfig, log *slog.Logger, onState func(tool string, from, to string)) Tool {
	if t == nil {
		return nil
	}
	if inner, ok := t.(*recovered); ok {
		t = inner.Tool // the breaker recovers by itself; keep panics visible as failures
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Breaker{tool: t, name: t.Spec().Name, cfg: cfg.withDefaults(), log: log, onState: onState}
	b.cb = breaker.New(breaker.Settings{
		Name:     b.name,
		Failures: b.cfg.Failures,
		CoolDown: b.cfg.CoolDown,
		Now:      b.cfg.Now,
		// Outcomes are classified in Call: done(nil) is a success, done(errExcluded) is neither,
		// anything else is a failure.
		IsExcluded: func(err error) bool { return errors.Is(err, errExcluded) },
		OnState:    b.stateChanged,
	})
	return b
}

// errExcluded reports an outcome that is neither a success nor a failure.
var errExcluded = errors.New("tools: breaker: outcome not counted")

// Spec returns the wrapped tool's spec.
func (b *Breaker) Spec() Spec { return b.tool.Spec() }

// Unwrap returns the wrapped tool.
func (b *Breaker) Unwrap() Tool { return b.tool }

// State returns "closed", "open" or "half-open".
func (b *Breaker) State() string { return b.cb.State().String() }

// Call runs the wrapped tool unless the circuit is open. It blocks as long as the tool does; a
// cancelled ctx is passed on to the tool. While open it returns an IsError result at once.
func (b *Breaker) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	done, err := b.cb.Allow()
	if err != nil {
		return b.rejected(err), nil
	}
	callCtx := ctx
	if b.cfg.CallTimeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, b.cfg.CallTimeout)
		defer cancel()
	}
	res, err := safeCall(callCtx, b.tool, args)
	if err == nil {
		done(nil)
		return res, nil
	}
	return b.failed(ctx, callCtx, res, err, done)
}

// failed classifies a call that returned an error (see BreakerConfig) and reports it to the
// breaker through done. It is Call's, apart so that a call that succeeds does not pay for the
// error targets, which escape.
func (b *Breaker) failed(ctx, callCtx context.Context, res Result, err error, done func(error)) (Result, error) {
	var fail *FailureError
	var ask *AskUserError
	var panicked *PanicError
	switch {
	case errors.As(err, &ask):
		done(nil) // the tool works; it asked the user a question
		return res, err
	case errors.As(err, &panicked):
		done(err)
		b.log.LogAttrs(ctx, slog.LevelError, "tool panicked", slog.String("tool", b.name),
			slog.Any("panic", panicked.Value), slog.String("stack", string(panicked.Stack)))
		return Result{}, err
	case ctx.Err() != nil:
		done(errExcluded) // the caller gave up; says nothing about the tool
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("tools: %s: %w (after: %v)", b.name, ctx.Err(), err)
		}
		return Result{}, err
	case callCtx.Err() != nil:
		done(err)
		return Result{}, fmt.Errorf("tools: %s timed out after %s: %w", b.name, b.cfg.CallTimeout, err)
	case errors.As(err, &fail):
		done(err)
		return fail.Result, nil
	default:
		done(err)
		return res, err
	}
}

// rejected builds the result of a call refused by the breaker.
func (b *Breaker) rejected(err error) Result {
	b.mu.Lock()
	from := b.tripFrom
	b.mu.Unlock()
	if errors.Is(err, breaker.ErrTooManyRequests) {
		return Errorf("tool %s unavailable: circuit half-open while a probe call checks whether it recovered; try again in a few seconds", b.name)
	}
	why := fmt.Sprintf("after %d consecutive failures", b.cfg.Failures)
	if from == breaker.StateHalfOpen {
		why = "after a failed recovery probe"
	}
	retry := b.cb.OpenedAt().Add(b.cfg.CoolDown)
	wait := retry.Sub(b.cfg.Now()).Round(time.Second)
	if wait < time.Second {
		wait = time.Second
	}
	return Errorf("tool %s unavailable: circuit open %s; try again after %s (in %s)",
		b.name, why, retry.UTC().Format("15:04:05 MST"), wait)
}

// stateChanged is the breaker's OnState; it runs under the breaker's lock.
func (b *Breaker) stateChanged(_ string, from, to breaker.State) {
	if to == breaker.StateOpen {
		b.mu.Lock()
		b.tripFrom = from
		b.mu.Unlock()
	}
	level := slog.LevelInfo
	if to == breaker.StateOpen {
		level = slog.LevelWarn
	}
	b.log.LogAttrs(context.Background(), level, "tool circuit breaker state changed",
		slog.String("tool", b.name), slog.String("from", from.String()), slog.String("to", to.String()))
	if b.onState != nil {
		b.onState(b.name, from.String(), to.String())
	}
}
