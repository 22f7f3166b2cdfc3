package web

import (
	"fmt"
	"slices"
	"time"
)

// The set of sessions and its locks. Channel.mu guards the set; each session's state has its
// own mu (lock order: Channel.mu, then a session's; nothing takes Channel.mu while holding a
// session's). The byte totals of the replay buffers and histories are atomics, brought back
// within their bounds after the lock of the session that took them past is released.

// publish publishes w on s. s.mu must be held; unlockSession then keeps the replay buffers
// within ReplayTotalBytes.
func (c *Channel) publish(s *session, w wireEvent) {
	c.replayBytes.Add(int64(s.publish(w, ringLimits{events: c.cfg.ReplayEvents, bytes: c.cfg.ReplayBytes})))
}

// shedReplays gives back the replay buffers of releasable sessions, least recently active
// first, until the buffers hold at most target bytes or none is left to give. Shedding down to
// below the bound keeps its cost (a scan of the sessions) off most publishes. It takes c.mu and
// each session's mu in turn; the caller holds neither.
func (c *Channel) shedReplays(target int64) {
	c.shedIdle(func(s *session) bool { return s.releasable() }, func(s *session) bool {
		if c.replayBytes.Load() <= target {
			return false
		}
		c.replayBytes.Add(-int64(s.releaseReplay()))
		return true
	})
}

// shedIdle calls give, under each one's mu, on the sessions that were idle (under their mu) when
// scanned, least recently active first, until give returns false. One shedder runs at a time: a
// caller that finds another shedding returns, as that one brings the total down.
func (c *Channel) shedIdle(idle func(*session) bool, give func(*session) bool) {
	if !c.shedding.TryLock() {
		return
	}
	defer c.shedding.Unlock()
	type cand struct {
		s  *session
		at time.Time
	}
	var cands []cand
	c.mu.RLock()
	for _, s := range c.sessions {
		s.mu.Lock()
		if idle(s) {
			cands = append(cands, cand{s, s.lastActive})
		}
		s.mu.Unlock()
	}
	c.mu.RUnlock()
	slices.SortFunc(cands, func(a, b cand) int { return a.at.Compare(b.at) })
	for _, cd := range cands {
		s := cd.s
		s.mu.Lock()
		more := true
		if !s.dropped && idle(s) { // still so: it may have woken since the scan
			more = give(s)
		}
		s.mu.Unlock()
		if !more {
			return
		}
	}
}

// dropSession forgets s. c.mu (for writing) and s.mu must be held.
func (c *Channel) dropSession(s *session) {
	c.replayBytes.Add(-int64(s.events.bytes))
	c.historyBytes.Add(-int64(s.historyBytes))
	s.dropped = true
	delete(c.sessions, s.id)
}

// lockSession returns the live session id with its mu held, creating it (see sessionLocked).
// Release it with unlockSession.
func (c *Channel) lockSession(id string, now time.Time) (*session, error) {
	for {
		c.mu.RLock()
		s := c.sessions[id]
		c.mu.RUnlock()
		if s == nil {
			c.mu.Lock()
			var err error
			s, err = c.sessionLocked(id, now)
			c.mu.Unlock()
			if err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		if !s.dropped {
			s.lastActive = now
			return s, nil
		}
		s.mu.Unlock() // evicted between the lookup and the lock: look again
	}
}

// lockLiveSession returns the live session id with its mu held, or nil when there is none.
// Release it with s.mu.Unlock, or with unlockSession after adding replay or history bytes.
func (c *Channel) lockLiveSession(id string) *session {
	c.mu.RLock()
	s := c.sessions[id]
	c.mu.RUnlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.dropped {
		s.mu.Unlock()
		return nil
	}
	return s
}

// unlockSession releases s.mu and then, holding no lock, brings the replay buffers and the
// histories of all sessions back within their totals when what happened under the lock took
// them past.
func (c *Channel) unlockSession(s *session) {
	s.mu.Unlock()
	if c.replayBytes.Load() > int64(c.cfg.ReplayTotalBytes) {
		c.shedReplays(int64(c.cfg.ReplayTotalBytes) * 3 / 4)
	}
	if c.historyBytes.Load() > int64(c.cfg.HistoryTotalBytes) {
		c.shedHistories(int64(c.cfg.HistoryTotalBytes)*3/4, s)
	}
}

// sessionLocked returns the live session id, creating it (and evicting the least recently
// active unattached session when full). c.mu must be held for writing, and no session's mu.
func (c *Channel) sessionLocked(id string, now time.Time) (*session, error) {
	if s := c.sessions[id]; s != nil {
		return s, nil
	}
	if len(c.sessions) >= c.cfg.MaxSessions {
		if err := c.evictOne(); err != nil {
			return nil, err
		}
	}
	s := newSession(id, now)
	c.sessions[id] = s
	return s, nil
}

// evictOne drops the least recently active session without an attached stream. c.mu must be
// held for writing, and no session's mu.
func (c *Channel) evictOne() error {
	for {
		var (
			victim *session
			at     time.Time
		)
		for _, s := range c.sessions {
			s.mu.Lock()
			if len(s.subs) == 0 && (victim == nil || s.lastActive.Before(at)) {
				victim, at = s, s.lastActive
			}
			s.mu.Unlock()
		}
		if victim == nil {
			return fmt.Errorf("%w (%d, every one with a client attached): raise MaxSessions", ErrTooManySessions, len(c.sessions))
		}
		victim.mu.Lock()
		// A request that looked the session up before c.mu was taken may have attached a
		// stream since the scan: then look again.
		ok := len(victim.subs) == 0
		if ok {
			c.dropSession(victim)
		}
		victim.mu.Unlock()
		if ok {
			c.log.Debug("evicted web session to make room", "session", victim.id)
			return nil
		}
	}
}

// evictIdle removes sessions idle for longer than IdleTimeout without an attached client, gives
// back the replay buffers of sessions whose last turn ended more than ReplayGrace ago with no
// client attached, and forgets submitted events whose turn never showed up within
// StreamTimeout. It returns how many sessions it removed and how many buffers it gave back.
func (c *Channel) evictIdle(now time.Time) (sessions, replays int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		s.mu.Lock()
		for evID, at := range s.queued {
			if now.Sub(at) > c.cfg.StreamTimeout {
				delete(s.queued, evID)
			}
		}
		idle := now.Sub(s.lastActive)
		switch {
		case len(s.subs) == 0 && idle > c.cfg.IdleTimeout:
			c.dropSession(s)
			sessions++
		case idle > c.cfg.ReplayGrace && s.releasable():
			c.replayBytes.Add(-int64(s.releaseReplay()))
			replays++
		}
		s.mu.Unlock()
	}
	return sessions, replays
}
