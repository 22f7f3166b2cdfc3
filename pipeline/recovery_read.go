package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/backoff"
)

// recoveryReads bounds the attempts to read a replayed event's turn log; recoveryBackoff is
// the wait before the second (doubled before each later one).
const (
	recoveryReads   = 3
	recoveryBackoff = 100 * time.Millisecond
)

// replayed is what the turn log holds about a replayed event.
type replayed struct {
	resume *echogate.TurnResume  // the resume record the event wrote (a decision), if any
	turns  []echogate.TurnRecord // the session's latest turns, newest first (without a resume)
	pend   echogate.PendingTurn  // the session's pause (zero when none)
}

// readReplayed reads the turn log for ev, retrying a failed read.
func (p *Pipeline) readReplayed(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent) (replayed, error) {
	var (
		rp  replayed
		err error
	)
	waits := backoff.Policy{Initial: recoveryBackoff, Max: recoveryBackoff << recoveryReads, Jitter: backoff.NoJitter}
	for attempt := 0; attempt < recoveryReads; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(waits.Delay(attempt))
			select {
			case <-ctx.Done():
				t.Stop()
				return rp, ctx.Err()
			case <-t.C:
			}
		}
		if rp, err = p.readReplayedOnce(ctx, ev); err == nil {
			return rp, nil
		}
		log.Warn("pipeline: read the turn log of a replayed event", "attempt", attempt+1, "err", err)
	}
	return rp, err
}

func (p *Pipeline) readReplayedOnce(ctx context.Context, ev echogate.InboundEvent) (replayed, error) {
	var rp replayed
	r, err := p.d.Store.GetResume(ctx, ev.DedupeKey())
	switch {
	case err == nil:
		rp.resume = &r
		return rp, nil
	case !errors.Is(err, echogate.ErrNotFound):
		return rp, fmt.Errorf("read its resume record: %w", err)
	}
	if rp.turns, err = p.d.Store.ListTurns(ctx, ev.SessionKey(), 50); err != nil {
		return rp, fmt.Errorf("list its session's turns: %w", err)
	}
	switch pend, err := p.getPending(ctx, ev.SessionKey()); {
	case err == nil:
		rp.pend = pend
	case !errors.Is(err, echogate.ErrNotFound):
		return rp, fmt.Errorf("read its session's pause: %w", err)
	}
	return rp, nil
}
