package slacktest

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// --- Web API ---

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, token := readParams(r)
	s.mu.Lock()
	var f *Failure
	if q := s.failures[method]; len(q) > 0 {
		f = &q[0]
		s.failures[method] = q[1:]
	}
	s.mu.Unlock()

	if f != nil && !f.Process {
		if !wait(r.Context(), f.Delay) {
			return
		}
		s.answerFailure(w, method, params, f)
		return
	}
	status, body := s.handle(method, params, token)
	if f != nil { // processed, then the answer fails
		if !wait(r.Context(), f.Delay) {
			s.record(method, params, 0, "client gave up")
			return
		}
		s.answerFailure(w, method, params, f)
		return
	}
	s.record(method, params, status, errCode(body))
	if method == "auth.test" && status == 200 {
		scopes := s.opts.Scopes
		if scopes == nil {
			scopes = DefaultScopes
		}
		w.Header().Set("X-OAuth-Scopes", strings.Join(scopes, ","))
	}
	writeJSON(w, status, body)
}

// DefaultScopes are the bot scopes of docs/slack-app-manifest.yaml.
var DefaultScopes = []string{"app_mentions:read", "assistant:write", "channels:history", "chat:write", "commands", "files:read",
	"groups:history", "im:history", "im:write", "reactions:read", "reactions:write", "users:read"}

func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Server) answerFailure(w http.ResponseWriter, method string, params map[string]string, f *Failure) {
	switch {
	case f.Drop:
		s.record(method, params, 0, "dropped")
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case f.Status == http.StatusTooManyRequests:
		s.record(method, params, f.Status, "")
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		w.WriteHeader(f.Status)
	case f.Status >= 300:
		s.record(method, params, f.Status, "")
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte("<html>server error</html>"))
	default:
		s.record(method, params, 200, f.Error)
		writeJSON(w, 200, map[string]any{"ok": false, "error": f.Error})
	}
}

func (s *Server) record(method string, params map[string]string, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := make(map[string]string, len(params))
	for k, v := range params {
		if k != "token" {
			p[k] = v
		}
	}
	s.calls = append(s.calls, Call{Method: method, Params: p, Time: s.opts.Now(), Status: status, Error: code})
	s.notifyLocked()
}

func errCode(body map[string]any) string {
	if ok, _ := body["ok"].(bool); ok {
		return ""
	}
	e, _ := body["error"].(string)
	return e
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// readParams reads form or JSON parameters and the token (form field or bearer header).
func readParams(r *http.Request) (map[string]string, string) {
	p := map[string]string{}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&m)
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				p[k] = str
			} else {
				p[k] = string(v)
			}
		}
	} else {
		_ = r.ParseForm()
		for k, v := range r.Form {
			if len(v) > 0 {
				p[k] = v[0]
			}
		}
	}
	if t := p["token"]; t != "" {
		token = t
	}
	return p, token
}

func fail(code string) (int, map[string]any) { return 200, map[string]any{"ok": false, "error": code} }

func (s *Server) handle(method string, p map[string]string, token string) (int, map[string]any) {
	if method == "apps.connections.open" {
		if token != s.opts.AppToken {
			return fail("invalid_auth")
		}
		u := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/socket"
		return 200, map[string]any{"ok": true, "url": u}
	}
	if token != s.opts.BotToken {
		return fail("invalid_auth")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "auth.test":
		return 200, map[string]any{"ok": true, "url": "https://test.slack.com/", "team": "Test", "user": "echogate",
			"team_id": s.opts.TeamID, "user_id": s.opts.BotUserID, "bot_id": s.opts.BotID}
	case "chat.postMessage", "chat.update", "chat.postEphemeral", "chat.delete":
		return s.chatLocked(method, p)
	case "chat.startStream", "chat.appendStream", "chat.stopStream":
		if s.noStream {
			return fail("unknown_method")
		}
		return s.streamLocked(method, p)
	case "reactions.add", "reactions.remove":
		return s.reactionLocked(method, p)
	case "assistant.threads.setStatus":
		if s.noStatus {
			return fail("not_allowed")
		}
		return 200, map[string]any{"ok": true}
	case "assistant.threads.setSuggestedPrompts", "assistant.threads.setTitle", "agents.sessions.setStatus":
		if s.noStatus {
			return fail("not_allowed")
		}
		return 200, map[string]any{"ok": true}
	case "users.info":
		return s.userInfoLocked(p)
	case "views.publish":
		return s.publishLocked(p)
	case "conversations.replies":
		return s.repliesLocked(p)
	case "conversations.history":
		return s.historyLocked(p)
	case "conversations.open":
		return s.openDMLocked(p) // dm.go
	}
	return fail("unknown_method")
}

// chatLocked answers the chat.* methods that post, change or remove messages.
func (s *Server) chatLocked(method string, p map[string]string) (int, map[string]any) {
	switch method {
	case "chat.postMessage":
		if p["channel"] == "" {
			return fail("channel_not_found")
		}
		if p["text"] == "" && p["blocks"] == "" {
			return fail("no_text")
		}
		m := &Message{Channel: p["channel"], TS: s.nextTSLocked(), ThreadTS: p["thread_ts"], User: s.opts.BotUserID,
			BotID: s.opts.BotID, Text: p["text"], Blocks: p["blocks"]}
		if md := p["metadata"]; md != "" {
			m.Metadata = json.RawMessage(md)
		}
		s.insertLocked(m)
		return 200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "message": s.msgJSON(m, false)}
	case "chat.update":
		m := s.findLocked(p["channel"], p["ts"])
		if m == nil {
			return fail("message_not_found")
		}
		if m.Streaming { // a native stream is changed only through its own methods until stopped
			return fail("cant_update_message")
		}
		m.Text, m.Blocks = p["text"], p["blocks"]
		if md := p["metadata"]; md != "" {
			m.Metadata = json.RawMessage(md)
		}
		m.Updates++
		return 200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text}
	case "chat.postEphemeral":
		if p["channel"] == "" || p["user"] == "" {
			return fail("channel_not_found")
		}
		e := Ephemeral{Channel: p["channel"], User: p["user"], ThreadTS: p["thread_ts"], Text: p["text"]}
		s.ephemerals = append(s.ephemerals, e)
		s.notifyLocked()
		return 200, map[string]any{"ok": true, "message_ts": s.nextTSLocked()}
	case "chat.delete":
		m := s.findLocked(p["channel"], p["ts"])
		if m == nil {
			return fail("message_not_found")
		}
		m.Deleted = true
		return 200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS}
	}
	return fail("unknown_method")
}

// reactionLocked answers reactions.add and reactions.remove.
func (s *Server) reactionLocked(method string, p map[string]string) (int, map[string]any) {
	m := s.findLocked(p["channel"], p["timestamp"])
	if m == nil {
		return fail("message_not_found")
	}
	name := p["name"]
	i := indexOf(m.Reactions, name)
	if method == "reactions.add" {
		if i >= 0 {
			return fail("already_reacted")
		}
		m.Reactions = append(m.Reactions, name)
	} else {
		if i < 0 {
			return fail("no_reaction")
		}
		m.Reactions = append(m.Reactions[:i], m.Reactions[i+1:]...)
	}
	return 200, map[string]any{"ok": true}
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

func (s *Server) streamLocked(method string, p map[string]string) (int, map[string]any) {
	if method == "chat.startStream" {
		if p["thread_ts"] == "" {
			return fail("invalid_arguments")
		}
		m := &Message{Channel: p["channel"], TS: s.nextTSLocked(), ThreadTS: p["thread_ts"], User: s.opts.BotUserID,
			BotID: s.opts.BotID, Text: p["markdown_text"], Streaming: true, Streamed: true}
		if !applyChunks(m, p["chunks"]) {
			return fail("invalid_chunks")
		}
		s.insertLocked(m)
		return 200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS}
	}
	m := s.findLocked(p["channel"], p["ts"])
	if m == nil {
		return fail("message_not_found")
	}
	if !m.Streaming {
		return fail("message_not_in_streaming_state")
	}
	m.Text += p["markdown_text"]
	if !applyChunks(m, p["chunks"]) {
		return fail("invalid_chunks")
	}
	m.Updates++
	if method == "chat.stopStream" {
		m.Streaming = false
		if md := p["metadata"]; md != "" {
			m.Metadata = json.RawMessage(md)
		}
		return 200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "message": s.msgJSON(m, false)}
	}
	return 200, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS}
}

func (s *Server) msgJSON(m *Message, withMeta bool) map[string]any {
	out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "user": m.User}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
	}
	if m.Team != "" {
		out["team"] = m.Team
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if withMeta && len(m.Metadata) > 0 {
		out["metadata"] = m.Metadata
	}
	return out
}

func inRange(ts string, p map[string]string) bool {
	incl := p["inclusive"] == "1" || p["inclusive"] == "true"
	f := tsFloat(ts)
	if o := p["oldest"]; o != "" {
		of := tsFloat(o)
		if f < of || (f == of && !incl) {
			return false
		}
	}
	if l := p["latest"]; l != "" {
		lf := tsFloat(l)
		if f > lf || (f == lf && !incl) {
			return false
		}
	}
	return true
}

func limitOf(p map[string]string, def int) int {
	if n, err := strconv.Atoi(p["limit"]); err == nil && n > 0 {
		return n
	}
	return def
}

func (s *Server) repliesLocked(p map[string]string) (int, map[string]any) {
	ch, ts := p["channel"], p["ts"]
	meta := p["include_all_metadata"] == "1"
	var out []map[string]any
	for _, m := range s.msgs[ch] {
		if m.Deleted {
			continue
		}
		if m.TS == ts && m.ThreadTS != "" && m.ThreadTS != m.TS { // a reply: Slack answers with it alone
			return 200, map[string]any{"ok": true, "messages": []any{s.msgJSON(m, meta)}, "has_more": false}
		}
		if (m.TS == ts || m.ThreadTS == ts) && (m.TS == ts || inRange(m.TS, p)) {
			out = append(out, s.msgJSON(m, meta))
		}
	}
	if len(out) == 0 {
		return fail("thread_not_found")
	}
	if n := limitOf(p, 1000); len(out) > n {
		out = out[:n]
	}
	return 200, map[string]any{"ok": true, "messages": out, "has_more": false}
}

func (s *Server) historyLocked(p map[string]string) (int, map[string]any) {
	ch := p["channel"]
	meta := p["include_all_metadata"] == "1"
	out := []map[string]any{}
	list := s.msgs[ch]
	for i := len(list) - 1; i >= 0; i-- { // newest first
		m := list[i]
		if m.Deleted || (m.ThreadTS != "" && m.ThreadTS != m.TS) || !inRange(m.TS, p) {
			continue
		}
		out = append(out, s.msgJSON(m, meta))
	}
	if n := limitOf(p, 100); len(out) > n {
		out = out[:n]
	}
	return 200, map[string]any{"ok": true, "messages": out, "has_more": false}
}

// --- Socket Mode ---
