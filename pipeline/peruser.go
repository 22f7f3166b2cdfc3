package pipeline

import (
	"context"

	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
)

// BudgetReserver is a Budget that holds a model call's estimate against the budgets from its
// check until release (agent/cost's Tracker): the pipeline releases it once the call's usage
// is in the ledger, so parallel turns of one user see each other's calls in flight. A Budget
// without it is only checked.
type BudgetReserver interface {
	Reserve(ctx context.Context, s cost.Scope, req agent.Request) (release func(), err error)
}

// reserveBudget checks b (nil: none) for the call req and, when b reserves, keeps the hold
// with the turn's spend until releaseBudget.
func (t *Turn) reserveBudget(ctx context.Context, b Budget, s cost.Scope, req agent.Request) error {
	if b == nil {
		return nil
	}
	r, ok := b.(BudgetReserver)
	if !ok {
		return b.Check(ctx, s, req)
	}
	release, err := r.Reserve(ctx, s, req)
	if err != nil {
		return err
	}
	l := &t.usage
	l.mu.Lock()
	l.holds = append(l.holds, release)
	l.mu.Unlock()
	return nil
}

// releaseBudget releases the turn's budget holds. Call it when the usage of every call made so
// far is in the ledger (or could not be written, which is logged): before the next call's
// check, and when the turn ended.
func (t *Turn) releaseBudget() {
	l := &t.usage
	l.mu.Lock()
	holds := l.holds
	l.holds = nil
	l.mu.Unlock()
	for _, release := range holds {
		release()
	}
}
