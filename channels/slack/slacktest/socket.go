package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// --- Socket Mode ---

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	c, err := s.upg.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	wc := &wsConn{c: c, done: make(chan struct{})}
	s.mu.Lock()
	s.conns[wc] = true
	s.connects++
	s.notifyLocked()
	waiting := s.waitingLocked()
	s.mu.Unlock()
	c.SetPongHandler(func(string) error {
		s.mu.Lock()
		s.pongs++
		s.notifyLocked()
		s.mu.Unlock()
		return nil
	})
	hello := map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "slacktest", "approximate_connection_time": 3600},
		"connection_info": map[string]any{"app_id": DefaultAppID}}
	_ = wc.writeJSON(hello)
	go s.pinger(wc)
	s.sendReliable(waiting)
	defer func() {
		close(wc.done)
		_ = c.Close()
		s.sendReliable(s.connGone(wc))
	}()
	for {
		var msg struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := c.ReadJSON(&msg); err != nil {
			return
		}
		if msg.EnvelopeID != "" {
			s.mu.Lock()
			s.acks[msg.EnvelopeID]++
			s.ackedLocked(msg.EnvelopeID)
			s.notifyLocked()
			s.mu.Unlock()
		}
	}
}

func (s *Server) pinger(wc *wsConn) {
	t := time.NewTicker(s.pingT)
	defer t.Stop()
	for {
		select {
		case <-wc.done:
			return
		case <-t.C:
			wc.wmu.Lock()
			err := wc.c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second))
			wc.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func (wc *wsConn) writeJSON(v any) error {
	wc.wmu.Lock()
	defer wc.wmu.Unlock()
	_ = wc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return wc.c.WriteJSON(v)
}

// Connects returns how many Socket Mode connections were opened so far.
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// OpenConnections returns how many Socket Mode connections are open now.
func (s *Server) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Pongs returns how many pongs answered the server's pings.
func (s *Server) Pongs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pongs
}

// Acks returns how many times an envelope was acknowledged.
func (s *Server) Acks(envelopeID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[envelopeID]
}

// DropConnections closes every Socket Mode connection abruptly (no close frame).
func (s *Server) DropConnections() {
	s.mu.Lock()
	var list []*wsConn
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	for _, c := range list {
		_ = c.c.UnderlyingConn().Close()
	}
}

// SendDisconnect sends Socket Mode's {"type":"disconnect"} (e.g. reason "refresh_requested")
// on every connection.
func (s *Server) SendDisconnect(reason string) {
	s.broadcast(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "slacktest"}})
}

func (s *Server) broadcast(v any) int {
	s.mu.Lock()
	var list []*wsConn
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	n := 0
	for _, c := range list {
		if c.writeJSON(v) == nil {
			n++
		}
	}
	return n
}

// Delivery describes one Events API delivery.
type Delivery struct {
	EventID      string // Slack event_id; default a fresh "Ev…"
	TeamID       string // default the server's team
	EnvelopeID   string // Socket Mode envelope id; default a fresh one
	RetryAttempt int    // Socket Mode retry_attempt / X-Slack-Retry-Num
}

// Push delivers an Events API callback with inner event over Socket Mode to one open
// connection and returns the envelope id (wait for its ack with Acks). It fails when no
// connection is open.
func (s *Server) Push(inner map[string]any, d Delivery) (string, error) {
	s.mu.Lock()
	s.envSeq++
	if d.EnvelopeID == "" {
		d.EnvelopeID = fmt.Sprintf("env-%d", s.envSeq)
	}
	if d.EventID == "" {
		d.EventID = fmt.Sprintf("Ev%06d", s.envSeq)
	}
	if d.TeamID == "" {
		d.TeamID = s.opts.TeamID
	}
	s.mu.Unlock()
	s.RecordPost(inner)
	s.mu.Lock()
	var conn *wsConn
	for c := range s.conns {
		conn = c
		break
	}
	s.mu.Unlock()
	if conn == nil {
		return "", fmt.Errorf("slacktest: push %s: no socket mode connection open", d.EventID)
	}
	env := map[string]any{
		"envelope_id": d.EnvelopeID, "type": "events_api", "accepts_response_payload": false,
		"retry_attempt": d.RetryAttempt, "retry_reason": retryReason(d.RetryAttempt),
		"payload": json.RawMessage(Callback(d.TeamID, d.EventID, inner)),
	}
	if err := conn.writeJSON(env); err != nil {
		s.dropConn(conn)
		return "", fmt.Errorf("slacktest: push %s: %w", d.EventID, err)
	}
	return d.EnvelopeID, nil
}

// dropConn forgets and closes a connection a write failed on, as Slack drops a socket it
// cannot write to: until its reader noticed, OpenConnections would count it, and a caller
// waiting for a connection to push on again would retry on the dead one at once.
func (s *Server) dropConn(wc *wsConn) {
	s.mu.Lock()
	delete(s.conns, wc)
	s.notifyLocked()
	s.mu.Unlock()
	_ = wc.c.UnderlyingConn().Close()
}

func retryReason(n int) string {
	if n > 0 {
		return "timeout"
	}
	return ""
}

// RecordPost stores the user's post an inner message or app_mention event describes (as Slack
// has it before it sends the event), unless it is already stored or is an edit, delete or
// other subtype (file shares are posts). Push calls it; call it yourself before delivering
// events over HTTP.
func (s *Server) RecordPost(inner map[string]any) {
	str := func(k string) string { v, _ := inner[k].(string); return v }
	if t := str("type"); (t != "message" && t != "app_mention") || (str("subtype") != "" && str("subtype") != "file_share") || str("channel") == "" || str("ts") == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.findLocked(str("channel"), str("ts")) != nil {
		return
	}
	team := str("user_team")
	if team == "" {
		team = str("team")
	}
	s.insertLocked(&Message{Channel: str("channel"), TS: str("ts"), ThreadTS: str("thread_ts"), User: str("user"), Team: team, BotID: str("bot_id"), Text: str("text")})
	s.notifyLocked()
}
