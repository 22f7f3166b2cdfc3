// Package slacktest is a local fake of Slack for wire tests: an httptest server that speaks the
// Web API methods the gateway uses and Socket Mode (hello, envelopes, acks, pings, disconnects),
// plus helpers to build and sign Events API requests.
//
// Every Web API call is recorded (method, parameters, time, answer) for assertions. Failures
// can be injected per method: HTTP 429 with Retry-After, ok:false errors, 5xx, delays, and
// "processed but the answer was lost" (to test idempotent posting).
//
// It binds only 127.0.0.1 and is safe for concurrent use.
package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Defaults used when Options leaves a field empty.
const (
	DefaultBotToken  = "xoxb-test-token"
	DefaultAppToken  = "xapp-test-token"
	DefaultBotUserID = "UBOT"
	DefaultBotID     = "BBOT"
	DefaultTeamID    = "T0001"
	DefaultAppID     = "A0001"
)

// Options configures a Server. The zero value works.
type Options struct {
	BotToken, AppToken string // tokens accepted; defaults DefaultBotToken, DefaultAppToken
	BotUserID, BotID   string // identity returned by auth.test and stamped on the bot's posts
	TeamID             string
	// PingInterval is how often the Socket Mode server pings each connection; default 2s.
	PingInterval time.Duration
	// Scopes are the bot token's OAuth scopes, sent in auth.test's X-OAuth-Scopes header as
	// Slack does; nil means DefaultScopes.
	Scopes []string
	// Now stamps recorded calls and new message timestamps; default time.Now.
	Now func() time.Time
}

// Call is one recorded Web API call.
type Call struct {
	Method string
	Params map[string]string // form values or top-level JSON fields (objects as JSON text)
	Time   time.Time
	Status int    // HTTP status answered
	Error  string // ok:false error code answered, if any
}

// Message is a message stored by the fake.
type Message struct {
	Channel   string
	TS        string
	ThreadTS  string
	User      string
	BotID     string
	Text      string // text (chat.postMessage / update) or streamed markdown
	Blocks    string // blocks JSON as sent
	Metadata  json.RawMessage
	Streaming bool // chat.startStream begun, chat.stopStream not yet called
	Streamed  bool // created with chat.startStream
	Updates   int  // chat.update / appendStream calls
	Deleted   bool
	Reactions []string
	// Tasks are the task cards streamed into the message (task_update chunks), by id in the
	// order first seen, with their latest state.
	Tasks []Task
	// PlanTitle is the last plan_update title streamed into the message.
	PlanTitle string
}

// Task is a task card of a streamed message.
type Task struct {
	ID, Title, Status string
}

// Failure is an injected answer for one call of a method.
type Failure struct {
	Status     int           // HTTP status to answer (429, 500…); 0 means 200
	RetryAfter int           // seconds, for 429
	Error      string        // ok:false error code (with status 200)
	Delay      time.Duration // wait before answering (request context ends it early)
	// Process handles the call normally before failing the answer: the effect happens but the
	// client does not learn it (with Status >= 500, Drop, or a Delay past the client timeout).
	Process bool
	// Drop closes the connection without an answer.
	Drop bool
}

// Server is the fake Slack.
type Server struct {
	opts  Options
	srv   *httptest.Server
	upg   websocket.Upgrader
	pingT time.Duration

	mu        sync.Mutex
	calls     []Call
	msgs      map[string][]*Message // channel → messages by ts
	failures  map[string][]Failure
	noStream  bool
	noStatus  bool
	lastMicro int64
	changed   chan struct{}

	users      map[string]User   // users.info (interactive.go)
	homeViews  map[string]string // user → the home view last published (apphome.go)
	responses  []Response        // posts to response_urls
	ephemerals []Ephemeral       // chat.postEphemeral
	files      map[string]*File  // hosted files by id (files.go)
	fileSeq    int
	downloads  map[string]int // file id → authorized downloads

	conns    map[*wsConn]bool
	connects int
	acks     map[string]int
	pongs    int
	envSeq   int
}

type wsConn struct {
	c    *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
}

// New starts a fake Slack on 127.0.0.1. Close it when done.
func New(opts Options) *Server {
	if opts.BotToken == "" {
		opts.BotToken = DefaultBotToken
	}
	if opts.AppToken == "" {
		opts.AppToken = DefaultAppToken
	}
	if opts.BotUserID == "" {
		opts.BotUserID = DefaultBotUserID
	}
	if opts.BotID == "" {
		opts.BotID = DefaultBotID
	}
	if opts.TeamID == "" {
		opts.TeamID = DefaultTeamID
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts: opts, pingT: opts.PingInterval,
		msgs: map[string][]*Message{}, failures: map[string][]Failure{},
		changed: make(chan struct{}), conns: map[*wsConn]bool{}, acks: map[string]int{},
		files: map[string]*File{}, downloads: map[string]int{},
	}
	// Slack's clients send Origin https://api.slack.com.
	s.upg.CheckOrigin = func(*http.Request) bool { return true }
	if s.pingT <= 0 {
		s.pingT = 2 * time.Second
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/socket", s.serveSocket)
	mux.HandleFunc("/files-pri/", s.serveFile)
	mux.HandleFunc("/response/", s.serveResponse)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("slacktest: listen on 127.0.0.1: %v", err)) // test helper: no way to continue
	}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: mux}}
	s.srv.Start()
	return s
}

// Close drops every connection and stops the server.
func (s *Server) Close() {
	s.DropConnections()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// APIURL is the Web API base URL (ends in "/api/"): the channel's APIURL / SLACK_API_URL.
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// BotToken, AppToken, BotUserID and TeamID return the identity the fake accepts and reports.
func (s *Server) BotToken() string  { return s.opts.BotToken }
func (s *Server) AppToken() string  { return s.opts.AppToken }
func (s *Server) BotUserID() string { return s.opts.BotUserID }
func (s *Server) TeamID() string    { return s.opts.TeamID }

// Fail queues injected answers for the next calls of method (e.g. "chat.postMessage").
func (s *Server) Fail(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

// ClearFailures drops the injected answers still queued for method.
func (s *Server) ClearFailures(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failures, method)
}

// SetNativeStreaming switches chat.startStream/appendStream/stopStream on (default) or off
// (they answer ok:false unknown_method).
func (s *Server) SetNativeStreaming(on bool) {
	s.mu.Lock()
	s.noStream = !on
	s.mu.Unlock()
}

// SetAssistantStatus switches assistant.threads.setStatus on (default) or off (ok:false
// not_allowed, as in a workspace without the assistant feature).
func (s *Server) SetAssistantStatus(on bool) {
	s.mu.Lock()
	s.noStatus = !on
	s.mu.Unlock()
}

// Calls returns every recorded call, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsTo returns the recorded calls of one method.
func (s *Server) CallsTo(method string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns copies of the live (not deleted) messages of a channel, oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs[channel] {
		if !m.Deleted {
			cp := *m
			cp.Reactions = append([]string(nil), m.Reactions...)
			cp.Tasks = append([]Task(nil), m.Tasks...)
			out = append(out, cp)
		}
	}
	return out
}

// BotMessages returns the live messages the bot posted in a channel, oldest first.
func (s *Server) BotMessages(channel string) []Message {
	var out []Message
	for _, m := range s.Messages(channel) {
		if m.User == s.opts.BotUserID {
			out = append(out, m)
		}
	}
	return out
}

// AddMessage stores a message as if it had been posted (e.g. the user's post that starts a
// thread, or a bot message from before a restart). A zero TS gets a fresh one, which is
// returned.
func (s *Server) AddMessage(m Message) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.TS == "" {
		m.TS = s.nextTSLocked()
	}
	s.insertLocked(&m)
	s.notifyLocked()
	return m.TS
}

// WaitFor blocks until cond returns true (checked after every change: call, ack, connection)
// or ctx ends.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slacktest: condition not met: %w", ctx.Err())
		case <-ch:
		}
	}
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) nextTSLocked() string {
	us := s.opts.Now().UnixMicro()
	if us <= s.lastMicro {
		us = s.lastMicro + 1
	}
	s.lastMicro = us
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

func (s *Server) insertLocked(m *Message) {
	list := append(s.msgs[m.Channel], m)
	sort.SliceStable(list, func(i, j int) bool { return tsLess(list[i].TS, list[j].TS) })
	s.msgs[m.Channel] = list
}

func (s *Server) findLocked(ch, ts string) *Message {
	for _, m := range s.msgs[ch] {
		if m.TS == ts && !m.Deleted {
			return m
		}
	}
	return nil
}

func tsFloat(ts string) float64 { f, _ := strconv.ParseFloat(ts, 64); return f }

func tsLess(a, b string) bool {
	ai, af, _ := strings.Cut(a, ".")
	bi, bf, _ := strings.Cut(b, ".")
	if len(ai) != len(bi) {
		return len(ai) < len(bi)
	}
	if ai != bi {
		return ai < bi
	}
	return af < bf
}

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
	"groups:history", "im:history", "reactions:read", "reactions:write", "users:read"}

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
	case "chat.startStream", "chat.appendStream", "chat.stopStream":
		if s.noStream {
			return fail("unknown_method")
		}
		return s.streamLocked(method, p)
	case "reactions.add", "reactions.remove":
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
	}
	return fail("unknown_method")
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
	defer func() {
		close(wc.done)
		_ = c.Close()
		s.mu.Lock()
		delete(s.conns, wc)
		s.notifyLocked()
		s.mu.Unlock()
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
		return "", fmt.Errorf("slacktest: push %s: %w", d.EventID, err)
	}
	return d.EnvelopeID, nil
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
	s.insertLocked(&Message{Channel: str("channel"), TS: str("ts"), ThreadTS: str("thread_ts"), User: str("user"), BotID: str("bot_id"), Text: str("text")})
	s.notifyLocked()
}

// --- Events API helpers ---

// Callback returns the JSON body of an event_callback carrying inner.
func Callback(teamID, eventID string, inner map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"token": "verification-token", "team_id": teamID, "api_app_id": DefaultAppID, "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": inner,
		"authorizations": []any{map[string]any{"team_id": teamID, "user_id": DefaultBotUserID, "is_bot": true}},
	})
	return b
}

// URLVerification returns the body of a url_verification request.
func URLVerification(challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"token": "verification-token", "challenge": challenge, "type": "url_verification"})
	return b
}

// EventsRequest builds a POST to url with body, signed with secret at time ts, as Slack sends
// it. retry > 0 sets X-Slack-Retry-Num.
func EventsRequest(url, secret string, body []byte, ts time.Time, retry int) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		panic(fmt.Sprintf("slacktest: bad url %q: %v", url, err)) // test helper
	}
	req.Header.Set("Content-Type", "application/json")
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", Sign(secret, stamp, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	return req
}

// --- inner event builders ---

// Mention is an app_mention event. threadTS may be empty.
func Mention(channel, user, ts, threadTS, text string) map[string]any {
	e := map[string]any{"type": "app_mention", "channel": channel, "user": user, "ts": ts, "event_ts": ts, "text": text}
	if threadTS != "" {
		e["thread_ts"] = threadTS
	}
	return e
}

// ChannelMessage is a message event in a channel (channel_type "channel").
func ChannelMessage(channel, user, ts, threadTS, text string) map[string]any {
	e := map[string]any{"type": "message", "channel": channel, "channel_type": "channel", "user": user, "ts": ts, "event_ts": ts, "text": text}
	if threadTS != "" {
		e["thread_ts"] = threadTS
	}
	return e
}

// DM is a message event in an IM (channel_type "im").
func DM(channel, user, ts, text string) map[string]any {
	return map[string]any{"type": "message", "channel": channel, "channel_type": "im", "user": user, "ts": ts, "event_ts": ts, "text": text}
}

// BotMessage is a message event posted by a bot (bot_id set).
func BotMessage(channel, channelType, user, botID, ts, text string) map[string]any {
	return map[string]any{"type": "message", "channel": channel, "channel_type": channelType, "user": user, "bot_id": botID, "ts": ts, "event_ts": ts, "text": text}
}

// Reaction is a reaction_added event on the message (channel, ts) written by itemUser.
func Reaction(user, name, channel, ts, itemUser string) map[string]any {
	return map[string]any{"type": "reaction_added", "user": user, "reaction": name, "item_user": itemUser,
		"item": map[string]any{"type": "message", "channel": channel, "ts": ts}, "event_ts": ts}
}

// applyChunks applies the chunks of a streaming call (markdown_text and task_update) to m; it
// reports false for chunks that are not JSON or of an unknown type.
func applyChunks(m *Message, raw string) bool {
	if raw == "" {
		return true
	}
	var chunks []struct {
		Type, Text, ID, Title, Status string
	}
	if json.Unmarshal([]byte(raw), &chunks) != nil {
		return false
	}
	for _, c := range chunks {
		switch c.Type {
		case "markdown_text":
			m.Text += c.Text
		case "task_update":
			found := false
			for i := range m.Tasks {
				if m.Tasks[i].ID == c.ID {
					m.Tasks[i].Status, found = c.Status, true
				}
			}
			if !found {
				m.Tasks = append(m.Tasks, Task{ID: c.ID, Title: c.Title, Status: c.Status})
			}
		case "plan_update":
			m.PlanTitle = c.Title
		case "blocks":
		default:
			return false
		}
	}
	return true
}
