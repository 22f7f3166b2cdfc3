package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

type dispatch struct {
	seq int64
	typ string
	d   json.RawMessage
}

type gwSession struct {
	id    string
	seq   int64
	log   []dispatch
	valid bool
}

type gwConn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex
	session *gwSession // set once READY or RESUMED was sent; guarded by Server.mu
	ready   bool       // guarded by Server.mu
}

type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}

func (c *gwConn) send(op int, d any, seq int64, typ string) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	p := payload{Op: op, D: raw}
	if typ != "" {
		p.S, p.T = &seq, &typ
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(p)
}

func (c *gwConn) closeWith(code int, text string) {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.ws.Close()
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn := &gwConn{ws: ws}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.connects++
	s.queries = append(s.queries, r.URL.Query())
	old := s.conn
	s.conn = conn
	if s.opts.SharedShard {
		s.sharedAddLocked(conn)
		old = nil
	}
	s.notify()
	s.mu.Unlock()
	if old != nil {
		_ = old.ws.Close() // one gateway connection at a time, like a single shard
	}
	defer func() {
		s.mu.Lock()
		if s.conn == conn {
			s.conn = nil
		}
		delete(s.shared, conn)
		s.notify()
		s.mu.Unlock()
		_ = ws.Close()
	}()
	if err := conn.send(10, map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()}, 0, ""); err != nil {
		return
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var p payload
		if err := json.Unmarshal(data, &p); err != nil {
			conn.closeWith(4002, "Decode error.")
			return
		}
		switch p.Op {
		case 1:
			s.mu.Lock()
			s.heartbeats++
			acks := s.acks
			s.notify()
			s.mu.Unlock()
			if acks {
				if conn.send(11, nil, 0, "") != nil {
					return
				}
			}
		case 2:
			if !s.identify(conn, p.D, r) {
				return
			}
		case 6:
			if !s.resume(conn, p.D) {
				return
			}
		}
	}
}

func (s *Server) identify(conn *gwConn, raw json.RawMessage, r *http.Request) bool {
	var id struct {
		Token   string  `json:"token"`
		Intents int     `json:"intents"`
		Shard   *[2]int `json:"shard"`
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		conn.closeWith(4002, "Decode error.")
		return false
	}
	rec := Identify{Token: id.Token, Intents: id.Intents, Shard: [2]int{0, 1}, Query: r.URL.Query()}
	if id.Shard != nil {
		rec.Shard = *id.Shard
	}
	s.mu.Lock()
	s.identifies = append(s.identifies, rec)
	s.notify()
	s.mu.Unlock()
	if strings.TrimPrefix(id.Token, "Bot ") != s.opts.Token {
		conn.closeWith(4004, "Authentication failed.")
		return false
	}
	if id.Intents&s.opts.DisallowedIntents != 0 {
		conn.closeWith(4014, "Disallowed intent(s).")
		return false
	}
	if rec.Shard[1] < 1 || rec.Shard[0] < 0 || rec.Shard[0] >= rec.Shard[1] {
		conn.closeWith(4010, "Invalid shard.")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := &gwSession{id: "session-" + strconv.Itoa(len(s.sessions)+1), valid: true}
	s.sessions[sess.id] = sess
	s.current = sess
	conn.session = sess
	ready := map[string]any{
		"v": 9, "user": s.Bot(), "session_id": sess.id, "resume_gateway_url": s.GatewayURL,
		"shard": rec.Shard, "guilds": []any{}, "private_channels": []any{},
		"application": map[string]any{"id": s.opts.BotID, "flags": 0},
	}
	if err := s.dispatchLocked(sess, conn, "READY", ready); err != nil {
		return false
	}
	conn.ready = true
	s.notify()
	return true
}

func (s *Server) resume(conn *gwConn, raw json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		conn.closeWith(4002, "Decode error.")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resumes = append(s.resumes, Resume{SessionID: rs.SessionID, Seq: rs.Seq})
	s.notify()
	sess, ok := s.sessions[rs.SessionID]
	if !ok || !sess.valid || strings.TrimPrefix(rs.Token, "Bot ") != s.opts.Token {
		// Not resumable: the client must identify again.
		return conn.send(9, false, 0, "") == nil
	}
	s.current = sess
	conn.session = sess
	from := rs.Seq - int64(s.replayExtra)
	s.replayExtra = 0
	for _, ev := range sess.log {
		if ev.seq > from && ev.typ != "READY" && ev.typ != "RESUMED" {
			if conn.send(0, ev.d, ev.seq, ev.typ) != nil {
				return false
			}
		}
	}
	if err := s.dispatchLocked(sess, conn, "RESUMED", map[string]any{}); err != nil {
		return false
	}
	conn.ready = true
	s.notify()
	return true
}

// dispatchLocked appends an event to sess and sends it on conn when conn is attached to sess.
// Call with s.mu held.
func (s *Server) dispatchLocked(sess *gwSession, conn *gwConn, typ string, d any) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	sess.seq++
	sess.log = append(sess.log, dispatch{seq: sess.seq, typ: typ, d: raw})
	if conn != nil && conn.session == sess {
		return conn.send(0, json.RawMessage(raw), sess.seq, typ)
	}
	return nil
}

// Dispatch sends a gateway dispatch (op 0) of type typ with data d to the current session,
// with the next sequence number, and returns that number. When no connection is attached the
// event is kept and replayed on resume; before the first Identify it is dropped (0).
func (s *Server) Dispatch(typ string, d any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.SharedShard {
		return s.sharedDispatchLocked(typ, d)
	}
	sess := s.current
	if sess == nil {
		return 0
	}
	conn := s.conn
	if conn != nil && (!conn.ready || conn.session != sess) {
		conn = nil
	}
	_ = s.dispatchLocked(sess, conn, typ, d)
	s.notify()
	return sess.seq
}

// Reconnect sends op 7 Reconnect on the current connection: the client must close it and
// reconnect (resuming).
func (s *Server) Reconnect() {
	s.mu.Lock()
	conn := s.conn
	if conn != nil {
		conn.ready = false
	}
	s.mu.Unlock()
	if conn != nil {
		_ = conn.send(7, nil, 0, "")
	}
}

// InvalidateSession sends op 9 Invalid Session. When resumable is false the session can no
// longer be resumed.
func (s *Server) InvalidateSession(resumable bool) {
	s.mu.Lock()
	conn := s.conn
	if !resumable && s.current != nil {
		s.current.valid = false
	}
	s.mu.Unlock()
	if conn != nil {
		_ = conn.send(9, resumable, 0, "")
	}
}

// DropConnection cuts the current gateway connection without a close frame (a network failure).
func (s *Server) DropConnection() {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		_ = conn.ws.NetConn().Close()
	}
}

// CloseConnection closes the current gateway connection with a close code.
func (s *Server) CloseConnection(code int, text string) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.closeWith(code, text)
	}
}

// SetHeartbeatAcks switches heartbeat ACKs on (default) or off (a zombie connection).
func (s *Server) SetHeartbeatAcks(on bool) {
	s.mu.Lock()
	s.acks = on
	s.notify()
	s.mu.Unlock()
}

// ReplayOnNextResume makes the next successful resume also replay the last n dispatches the
// client already acknowledged (Discord's delivery is at-least-once).
func (s *Server) ReplayOnNextResume(n int) {
	s.mu.Lock()
	s.replayExtra = n
	s.mu.Unlock()
}

// Connected reports whether a gateway connection is attached to a session (READY or RESUMED
// sent).
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && s.conn.ready
}

// Connections counts gateway websocket connections accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// Heartbeats counts heartbeats received so far.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// Identifies returns the Identify payloads received so far.
func (s *Server) Identifies() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.identifies...)
}

// Resumes returns the Resume payloads received so far.
func (s *Server) Resumes() []Resume {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Resume(nil), s.resumes...)
}

// Sessions returns the ids of the gateway sessions created so far, sorted.
func (s *Server) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.sessions)
}
