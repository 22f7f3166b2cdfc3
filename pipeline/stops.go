package pipeline

import (
	"context"
	"strings"
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

// watchStops polls the stored stops until ctx ends and stops this process's running turn of
// every session stopped since it last looked. Stops stored before it started are not acted on.
func (p *Pipeline) watchStops(ctx context.Context) {
	seen := map[int64]time.Time{}
	primed := false
	tick := time.NewTicker(stopPollInterval)
	defer tick.Stop()
	for {
		stops, err := p.shared.stops.RecentStops(ctx, stopWindow)
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
				if primed && p.stopLocal(ctx, s) {
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

// stopLocal stops the turn of s's session when it runs in this process and s's sender may
// stop it (authority, as for a stop received here).
func (p *Pipeline) stopLocal(ctx context.Context, s echogate.StopRequest) bool {
	platform, id, _ := strings.Cut(s.Actor, ":")
	ev := echogate.InboundEvent{Kind: echogate.KindMessage, Text: "stop", Session: s.Session,
		Conversation: echogate.ConversationRef{Platform: platform}, Actor: echogate.Actor{ID: id}}
	_, stopped, _ := p.stopRunning(ctx, s.Session, &ev, actStop, nil)
	return stopped
}
