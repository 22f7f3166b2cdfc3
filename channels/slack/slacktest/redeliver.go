package slacktest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// Socket Mode with several connections (one app, several replicas): Slack sends each event to
// one of the app's open connections, and an event not acknowledged on a connection that
// closes is sent again, with the same event id and a higher retry_attempt, on another one.
// Deliver does that; Push is the single-shot form a test drives itself.

// reliable is one event Deliver keeps until a connection acknowledged it.
type reliable struct {
	inner    map[string]any
	d        Delivery
	envelope string  // the envelope id of the current attempt
	conn     *wsConn // the connection the current attempt went to; nil while none is open
	attempts int
}

// Deliver sends an Events API callback with inner over Socket Mode to one open connection,
// chosen at random, and keeps it until acknowledged: when that connection closes first, the
// event goes again (same event id, retry_attempt one higher, a new envelope id) to another
// open connection, or to the next one that opens. It returns the event id; Unacknowledged
// counts what is still waiting. d.EnvelopeID and d.RetryAttempt are ignored.
func (s *Server) Deliver(inner map[string]any, d Delivery) string {
	s.RecordPost(inner)
	s.mu.Lock()
	s.envSeq++
	if d.EventID == "" {
		d.EventID = fmt.Sprintf("Ev%06d", s.envSeq)
	}
	if d.TeamID == "" {
		d.TeamID = s.opts.TeamID
	}
	if s.reliable == nil {
		s.reliable = map[string]*reliable{}
		s.byEnvelope = map[string]*reliable{}
	}
	r := &reliable{inner: inner, d: d}
	s.reliable[d.EventID] = r
	s.mu.Unlock()
	s.sendReliable([]*reliable{r})
	return d.EventID
}

// Unacknowledged returns how many events Deliver sent that no connection acknowledged yet.
func (s *Server) Unacknowledged() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reliable)
}

// Redeliveries returns how many times Deliver sent an event again after its connection closed.
func (s *Server) Redeliveries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.redeliveries
}

// sendReliable sends each of list to a random open connection. One whose write fails is
// sent again elsewhere (dropConn); with no connection open it waits for connOpened.
func (s *Server) sendReliable(list []*reliable) {
	for len(list) > 0 {
		r := list[0]
		list = list[1:]
		s.mu.Lock()
		if s.reliable[r.d.EventID] != r {
			s.mu.Unlock()
			continue // acknowledged meanwhile
		}
		var open []*wsConn
		for c := range s.conns {
			open = append(open, c)
		}
		if len(open) == 0 {
			r.conn = nil
			s.mu.Unlock()
			continue
		}
		conn := open[rand.IntN(len(open))]
		s.envSeq++
		delete(s.byEnvelope, r.envelope)
		r.envelope, r.conn = fmt.Sprintf("env-%d", s.envSeq), conn
		s.byEnvelope[r.envelope] = r
		if r.attempts > 0 {
			s.redeliveries++
		}
		attempt := r.attempts
		r.attempts++
		s.mu.Unlock()
		env := map[string]any{
			"envelope_id": r.envelope, "type": "events_api", "accepts_response_payload": false,
			"retry_attempt": attempt, "retry_reason": retryReason(attempt),
			"payload": json.RawMessage(Callback(r.d.TeamID, r.d.EventID, r.inner)),
		}
		if err := conn.writeJSON(env); err != nil {
			list = append(list, s.connGone(conn)...)
			_ = conn.c.UnderlyingConn().Close()
		}
	}
}

// acked marks the event of envelope acknowledged. Call with s.mu held.
func (s *Server) ackedLocked(envelope string) {
	if r, ok := s.byEnvelope[envelope]; ok {
		delete(s.byEnvelope, envelope)
		delete(s.reliable, r.d.EventID)
	}
}

// connGone forgets wc and returns the events sent on it that are not acknowledged, for
// sending again.
func (s *Server) connGone(wc *wsConn) []*reliable {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, wc)
	s.notifyLocked()
	var orphans []*reliable
	for _, r := range s.reliable {
		if r.conn == wc {
			r.conn = nil
			orphans = append(orphans, r)
		}
	}
	return orphans
}

// waiting returns the events that wait for a connection to open. Call with s.mu held.
func (s *Server) waitingLocked() []*reliable {
	var out []*reliable
	for _, r := range s.reliable {
		if r.conn == nil {
			out = append(out, r)
		}
	}
	return out
}
