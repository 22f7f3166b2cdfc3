package web

import (
	"context"
	"time"

	"github.com/echogate/echogate"
)

// follow writes the events of sub until isEnd reports true for one, the client leaves, the
// channel stops, the stream times out or the client fell further behind than the replay buffer
// holds.
//
// Writes are coalesced in flush windows of FlushInterval. The headers open the first window; an
// event that finds the stream idle is written and flushed at once and opens the next. While a
// window is open the stream is lazy: a publish wakes it only for the stream's first token once
// the headers went out (written and flushed at once), for the event that ends the stream
// (written at once, flushed by the handler's return) and when its unread events near what the
// replay buffer keeps; the rest of the window's events go out with one write and one flush when
// it closes. So an event waits at most FlushInterval, the end not at all, the first token not at
// all unless it came within the first window (then it goes at most FlushInterval after the
// request, usually with the turn's end: a turn that fast is one write), and a fast model's burst
// of deltas costs this goroutine one wake-up, not one per delta.
func (c *Channel) follow(ctx context.Context, sw *sseWriter, s *session, sub *subscriber, isEnd func(wireEvent) bool) {
	defer c.unsubscribeFrom(s, sub)
	hb := time.NewTicker(c.cfg.Heartbeat)
	defer hb.Stop()
	timeout := time.NewTimer(c.cfg.StreamTimeout)
	defer timeout.Stop()
	window := time.NewTimer(c.cfg.FlushInterval)
	defer window.Stop()
	s.mu.Lock()
	sub.lazy = true
	s.mu.Unlock()
	open, dirty := true, true // a window is open (window runs); written since the last flush
	flush := func() error {
		if err := sw.flush(); err != nil {
			return err
		}
		dirty = false
		if !sub.shown { // read by publishers under s.mu; written only here
			s.mu.Lock()
			sub.shown = true
			s.mu.Unlock()
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.stopped:
			_ = sw.comment("gateway shutting down: re-attach with Last-Event-ID")
			return
		case <-timeout.C:
			_ = sw.event(wireEvent{TurnEvent: echogate.TurnEvent{Type: typeNotice, Session: echogate.SessionKey("web:" + s.id),
				Text: "stream timed out before the turn ended: re-attach with GET /api/chat/stream", Time: c.cfg.Now()}, Kind: "timeout"})
			return
		case <-hb.C:
			if err := sw.comment("ping"); err != nil {
				return
			}
			dirty = false
		case <-window.C:
			// What the window gathered goes out together. A window that gathered nothing leaves
			// the stream idle: its next event goes out at once.
			b := c.writePending(sw, s, sub, isEnd, false)
			if b.end {
				return
			}
			if b.wrote || dirty {
				if err := flush(); err != nil {
					return
				}
			}
			if open = b.wrote; open {
				window.Reset(c.cfg.FlushInterval)
			}
		case _, ok := <-sub.wake:
			if !ok {
				_ = sw.comment("session closed: re-attach with Last-Event-ID")
				return
			}
			b := c.writePending(sw, s, sub, isEnd, open)
			if b.end {
				return // the handler's return flushes the last events with the response's last chunk
			}
			if !b.wrote {
				continue
			}
			dirty = true
			if !open || b.firstToken && sub.shown {
				if err := flush(); err != nil {
					return
				}
			}
			if !open {
				open = true
				window.Reset(c.cfg.FlushInterval)
			}
		}
	}
}

// needsWake reports whether publishing w (already numbered and buffered) must wake the stream of
// sub now (see follow). The replay buffer evicts what a stream has not read once it holds
// lim.events entries or lim.bytes: a lazy stream is woken well before that. s.mu must be
// held.
func (s *session) needsWake(sub *subscriber, w *wireEvent, lim ringLimits) bool {
	if !sub.lazy || w.terminal() || w.Type == echogate.TurnDelta && !sub.tokens && sub.shown {
		return true
	}
	return s.lastSeq-sub.next+1 >= int64(lim.events/4) || s.events.bytes >= lim.bytes/2
}

// batch is what one writePending did.
type batch struct {
	wrote      bool // an event was written
	end        bool // the stream is over: its last event written, a write failed, or the client fell behind
	firstToken bool // the batch holds the stream's first delta
}

// writePending writes the events published for sub since its last call, up to the first that
// isEnd reports, with one write (no flush). open says whether a flush window stays open after
// this batch; the stream stays lazy while one is open or this batch opens one (it wrote).
func (c *Channel) writePending(sw *sseWriter, s *session, sub *subscriber, isEnd func(wireEvent) bool, open bool) (b batch) {
	sc := getScratch() // held for this batch only
	defer sc.put()
	s.mu.Lock()
	evs, behind, more := s.pending(sub, sc.evs)
	n := len(evs)
	for i, e := range evs {
		if isEnd(e) {
			n = i + 1
			break
		}
	}
	if !sub.tokens {
		for _, e := range evs[:n] {
			if e.Type == echogate.TurnDelta {
				sub.tokens, b.firstToken = true, true
				break
			}
		}
	}
	sub.lazy = open || n > 0
	s.mu.Unlock()
	sc.evs = evs
	if more { // the rest on the next round, without waiting for a publish
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
	if behind {
		_ = sw.comment("dropped: the client fell behind; re-attach with Last-Event-ID")
		c.log.Debug("dropped a slow web stream", "session", s.id)
		return batch{end: true}
	}
	if err := sw.bufferWith(sc, evs[:n]); err != nil {
		return batch{end: true}
	}
	b.wrote = n > 0
	b.end = n < len(evs) || n > 0 && isEnd(evs[n-1])
	return b
}
