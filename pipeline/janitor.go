package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/echogate/echogate"
)

// replay queues the events that were recorded but not finished: at start everything unfinished
// (one process per store) or, with ReplayAfter, events abandoned longer than that. With a store
// that can reclaim, each event is taken over by exactly one replica.
func (p *Pipeline) replay(ctx context.Context, atStart bool) error {
	now := p.cfg.Now()
	stale := now.Add(-p.cfg.ReplayAfter)
	if atStart && p.runAt.Before(stale) {
		// Never an event this process received itself: those claimed since Run began are
		// queued already (a Submit may race this query).
		stale = p.runAt
	}
	evs, err := p.d.Store.UnfinishedEvents(ctx, stale, 10000)
	if err != nil {
		return err
	}
	rc, canReclaim := p.shared.reclaimer, p.shared.reclaimer != nil
	for _, ce := range evs {
		if canReclaim {
			ok, err := rc.ReclaimEvent(ctx, ce.Key, stale.Add(time.Nanosecond), now)
			if err != nil {
				p.log.Warn("pipeline: reclaim unfinished event", "event", ce.Key, "err", err)
				continue
			}
			if !ok {
				continue // finished meanwhile, or another replica took it
			}
		}
		var ev echogate.InboundEvent
		if len(ce.Payload) == 0 || json.Unmarshal(ce.Payload, &ev) != nil {
			_ = p.d.Store.CompleteEvent(ctx, ce.Key, p.cfg.Now())
			continue
		}
		p.log.Info("replaying unfinished event", "event_id", ev.ID, "session", ev.SessionKey())
		key := mailboxKey(ev)
		sh := p.shardFor(key)
		sh.mu.Lock()
		mb := sh.boxes[key]
		if mb == nil {
			mb = &mailbox{key: key}
			sh.boxes[key] = mb
			p.d.Metrics.Mailbox(0, 1)
		}
		p.enqueueLocked(sh, mb, item{ev: ev, replay: true})
		sh.mu.Unlock()
	}
	return nil
}

// janitor applies approval timeouts and, with several replicas, takes over abandoned events,
// until ctx ends.
func (p *Pipeline) janitor(ctx context.Context) {
	t := time.NewTicker(p.cfg.JanitorInterval)
	defer t.Stop()
	for {
		// Under on_timeout: wait only scheduled runs' pauses expire (scheduled.go, pauseExpires).
		p.expireApprovals(ctx)
		if p.cfg.ReplayAfter > 0 {
			if err := p.replay(ctx, false); err != nil && ctx.Err() == nil {
				p.log.Warn("pipeline: replay abandoned events", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expireApprovals submits a timeout decision for every approval past its deadline. The decision
// is an ordinary event of the session, so it is ordered with everything else and recorded once
// even with several replicas.
func (p *Pipeline) expireApprovals(ctx context.Context) {
	pend, err := p.d.Store.ListPending(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("pipeline: list pending approvals", "err", err)
		}
		return
	}
	now := p.cfg.Now()
	for _, pt := range pend {
		if pt.Kind != echogate.PauseApproval || pt.ExpiresAt.IsZero() || now.Before(pt.ExpiresAt) {
			continue
		}
		info, err := p.d.Store.GetSession(ctx, pt.Session)
		if err != nil {
			continue
		}
		ev := echogate.InboundEvent{
			ID:           timeoutPrefix + pt.Turn,
			Kind:         echogate.KindReaction,
			Conversation: info.Conversation,
			Session:      pt.Session,
			Actor:        echogate.Actor{ID: "echogate", IsSelf: true},
			Reaction:     echogate.ReactionDeny,
			Target:       pt.Prompt,
			ReceivedAt:   now,
		}
		if err := p.Submit(ctx, ev); err != nil && !errors.Is(err, ErrShuttingDown) {
			p.log.Warn("pipeline: submit approval timeout", "session", pt.Session, "turn", pt.Turn, "err", err)
		}
	}
}

// timeoutPrefix starts the id of the event an approval timeout submits.
const timeoutPrefix = "approval-timeout:"
