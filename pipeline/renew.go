package pipeline

import (
	"context"
	"sync"
	"time"
)

// Claim renewal. With several replicas on one store, every replica's janitor takes over the
// events whose claim is older than ReplayAfter (janitor.go), because their replica may be dead.
// An event this replica holds — queued in a mailbox, waiting for its session's lock, or being
// answered — is not abandoned however long it waits: every ReplayAfter/3 this replica moves the
// claims of all of them to now (ClaimRenewer), in one statement per chunk of keys. Taking such
// an event over would answer it on the other replica while a web chat stream waits here, and
// could change a conversation's order. A replica that dies stops renewing, so its events are
// taken over ReplayAfter after its last renewal, at most ReplayAfter (+ JanitorInterval) after
// the death.

// minRenewEvery bounds how often claims are renewed, whatever ReplayAfter.
const minRenewEvery = 10 * time.Millisecond

// renewing reports whether this process renews the claims of the events it holds: a store shared
// by replicas that can, with takeovers on (ReplayAfter).
func (p *Pipeline) renewing() bool {
	return p.shared.renewer != nil && p.shared.replicas() && p.cfg.ReplayAfter > 0
}

// renewEvery is the period of the renewal: a third of ReplayAfter, so that two renewals may fail
// (a slow database, a stalled process) before an event is taken over.
func (p *Pipeline) renewEvery() time.Duration {
	if p.shared.renewEvery > 0 {
		return p.shared.renewEvery
	}
	return max(p.cfg.ReplayAfter/3, minRenewEvery)
}

// startRenewer starts the renewal (when renewing) and returns what stops it and waits for its
// goroutine. It lives on Run's base context, and Run stops it after the drain: a turn still
// running while the process drains, and the events queued behind it, stay this replica's until
// the drain ends (or its timeout cancels them).
func (p *Pipeline) startRenewer() (stop func()) {
	if !p.renewing() {
		return func() {}
	}
	ctx, cancel := context.WithCancel(p.baseCtx)
	var wg sync.WaitGroup
	wg.Go(func() { p.renewClaims(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// renewClaims renews the claims of the events this process holds every renewEvery, until ctx
// ends. A renewal that fails is logged and tried again at the next tick; each is bounded by the
// period, so a stuck database call does not pile the next ones up.
func (p *Pipeline) renewClaims(ctx context.Context) {
	every := p.renewEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	var keys []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		keys = p.heldClaims(keys[:0])
		if len(keys) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		_, err := p.shared.renewer.RenewClaims(rctx, keys, p.cfg.Now())
		cancel()
		if err != nil && ctx.Err() == nil {
			p.log.Warn("pipeline: renew the claims of held events; another replica may take them over after agent.replay_after",
				"events", len(keys), "err", err)
		}
		clear(keys) // no key outlives its event
		if cap(keys) > 4096 && len(keys) < cap(keys)/4 {
			keys = nil // a burst's slice is not kept for ever
		}
	}
}

// heldClaims appends to keys the dedupe keys of the events this process holds, oldest first in
// each session: the event a mailbox's worker handles (also while it waits for the session's lock
// or its turn runs), then the mailbox's queue. There are at most MailboxSize+1 per session with
// events here. Events still being recorded (Submit's reservation) are left out: their claim is
// being written now.
func (p *Pipeline) heldClaims(keys []string) []string {
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		for _, mb := range sh.boxes {
			if mb.cur != nil && mb.cur.eventKey != "" {
				keys = append(keys, mb.cur.eventKey)
			}
			for j := range mb.queue {
				keys = append(keys, mb.queue[j].ev.DedupeKey())
			}
		}
		sh.mu.Unlock()
	}
	return keys
}
