package pipeline

import (
	"context"
	"time"

	"github.com/echogate/echogate"
)

const (
	// stopPollInterval is how often a replica reads the stored stops: a stop sent to another
	// replica reaches the turn within it plus one query.
	stopPollInterval = 50 * time.Millisecond
	// stopWindow is how far back each poll reads; a stop is acted on once, when first seen.
	stopWindow = 3 * time.Second
)

// requestStop stores a stop of key's running turn for the replica that may run it (with a
// store shared by replicas); this process's own running turns are stopped by Submit at once.
func (p *Pipeline) requestStop(ctx context.Context, ev echogate.InboundEvent) {
	if p.stops == nil {
		return
	}
	if err := p.stops.RequestStop(ctx, ev.SessionKey()); err != nil {
		p.log.Warn("pipeline: store stop request for the other replicas", "session", ev.SessionKey(), "event_id", ev.ID, "err", err)
	}
}

// watchStops polls the stored stops until ctx ends and stops this process's running turn of
// every session stopped since it last looked. Stops stored before it started are not acted on.
func (p *Pipeline) watchStops(ctx context.Context) {
	seen := map[int64]time.Time{}
	primed := false
	tick := time.NewTicker(stopPollInterval)
	defer tick.Stop()
	for {
		stops, err := p.stops.RecentStops(ctx, stopWindow)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				p.log.Debug("pipeline: poll stop requests", "err", err)
			}
		default:
			now := time.Now()
			for _, s := range stops {
				if _, ok := seen[s.ID]; ok {
					continue
				}
				seen[s.ID] = now
				if primed && p.stopLocal(s.Session) {
					p.log.Info("turn stop requested on another replica", "session", s.Session)
				}
			}
			primed = true
			for id, at := range seen {
				if now.Sub(at) > 2*stopWindow {
					delete(seen, id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stopLocal stops key's turn when it runs in this process.
func (p *Pipeline) stopLocal(key echogate.SessionKey) bool {
	sh := p.shardFor(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	mb := sh.boxes[key]
	if mb == nil || mb.cur == nil {
		return false
	}
	mb.cur.stop()
	return true
}
