package cost

import (
	"errors"
	"fmt"
	"time"

	"github.com/echogate/echogate/agent"
)

// ErrDeferred is wrapped by Check's error for background work (Scope.Trigger consolidation or
// scheduled) that would exceed a budget: the job should be retried after LimitError.ResetsAt
// instead of spending. It wraps agent.ErrBudget.
var ErrDeferred = fmt.Errorf("cost: background work deferred until the budget resets: %w", agent.ErrBudget)

// LimitKind names a budget limit; the names are the config keys under budgets.
type LimitKind string

const (
	LimitPerTurn       LimitKind = "per_turn_usd"
	LimitPerSession    LimitKind = "per_session_usd"
	LimitPerUserDay    LimitKind = "per_user_day_usd"
	LimitPerChannelDay LimitKind = "per_channel_day_usd"
	LimitPerDay        LimitKind = "per_day_usd"
	LimitPerMonth      LimitKind = "per_month_usd"
)

// LimitError is Check's error when a call would exceed a budget. Its text is written for the user
// (the pipeline shows it as is): which limit, how much is spent, and when it resets. It wraps
// agent.ErrBudget, and also ErrDeferred when Deferred.
type LimitError struct {
	Limit       LimitKind
	LimitUSD    float64
	SpentUSD    float64 // spend so far in the limit's window, as the ledger has it
	HeldUSD     float64 // held by other calls in flight in the window (Tracker.Reserve)
	EstimateUSD float64 // the estimated cost of the refused call
	// ResetsAt is when the limit's window ends (next day or month in the configured location);
	// zero for per-turn and per-session limits, which do not reset with time.
	ResetsAt time.Time
	// Deferred marks background work (consolidation, scheduled jobs) that should wait for ResetsAt.
	Deferred bool
	Trigger  string // the scope's trigger: message, consolidation, scheduled

	text string
}

func (e *LimitError) Error() string {
	if e.Deferred {
		return e.Trigger + " deferred: " + e.text
	}
	return e.text
}

// Unwrap exposes agent.ErrBudget (and ErrDeferred for background work).
func (e *LimitError) Unwrap() error {
	if e.Deferred {
		return ErrDeferred
	}
	return agent.ErrBudget
}

// DeferUntil reports when work refused by a budget may be retried: the reset time of the limit
// that refused it. ok is false when err is not a LimitError or its limit does not reset with time.
func DeferUntil(err error) (at time.Time, ok bool) {
	var le *LimitError
	if errors.As(err, &le) && !le.ResetsAt.IsZero() {
		return le.ResetsAt, true
	}
	return time.Time{}, false
}
