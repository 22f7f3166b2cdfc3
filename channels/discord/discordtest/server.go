// Package discordtest is a local fake of Discord for wire tests: the REST API (gateway discovery,
// users/@me, channel messages create/edit/delete/get, reactions, typing, get channel) and the
// gateway websocket (Hello, Identify or Resume, READY/RESUMED, heartbeats and ACKs, dispatches
// with sequence numbers, op 7 reconnect, op 9 invalid session, replay of missed dispatches on
// resume).
//
// It records every REST call and gateway handshake so tests can assert on what a real client
// (discordgo) sent, can inject 429s, enforce per-channel message limits, stop acknowledging
// heartbeats (a zombie connection) and drop connections. It listens on 127.0.0.1 only.
//
//	srv := discordtest.NewServer(discordtest.Options{})
//	defer srv.Close()
//	// point the client at srv.APIURL (e.g. DISCORD_API_URL) with token srv.Token()
//	srv.SendDM(discordtest.User{ID: "42", Username: "ann"}, "hello")
//	err := srv.WaitFor(5*time.Second, "an answer", func() bool { return len(srv.BotMessages()) > 0 })
package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Options configures a Server. The zero value works.
type Options struct {
	// Token is the bot token the server accepts (without "Bot "); default "test-token".
	Token string
	// BotID and BotName describe the bot user; defaults "100000000000000001" and "echobot".
	BotID   string
	BotName string
	// HeartbeatInterval is sent in Hello; default 500ms.
	HeartbeatInterval time.Duration
	// DisallowedIntents: an Identify asking for any of these intent bits is closed with 4014,
	// as Discord does when a privileged intent is not enabled in the Developer Portal.
	DisallowedIntents int
	// EnforceChannelLimit enforces Discord's per-channel message limit: at most ChannelLimit
	// creates (and, separately, ChannelLimit edits) per channel within ChannelWindow (defaults
	// 5 and 5s). Responses carry X-RateLimit-* headers like Discord's; a request over the limit
	// is answered 429 and counted in Violations.
	EnforceChannelLimit bool
	ChannelLimit        int
	ChannelWindow       time.Duration
	// NoEcho stops the gateway from dispatching MESSAGE_CREATE / MESSAGE_REACTION_ADD for what
	// the bot itself posts (Discord does dispatch them).
	NoEcho bool
	// OmitMessageAuthorID leaves message_author_id out of MESSAGE_REACTION_ADD payloads.
	OmitMessageAuthorID bool
	// AppFlags are the application flags of GET /applications/@me; nil means
	// GATEWAY_MESSAGE_CONTENT (1<<18) is set, as after enabling the intent in the portal.
	AppFlags *int64
	// NonceWindow is how long a create with enforce_nonce returns the message first created with
	// the same nonce in the channel, instead of creating another (Discord: "the past few
	// minutes"). 0 means 5 minutes. ExpireNonces ends every window at once.
	NonceWindow time.Duration
}

// User is a Discord user as the fake knows it.
type User struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name,omitempty"`
	Bot        bool   `json:"bot,omitempty"`
}

// Message is a message held by the fake: current content plus its history.
type Message struct {
	ID          string
	ChannelID   string
	GuildID     string
	Author      User
	Content     string
	ReferenceID string // message_reference.message_id of a reply
	Nonce       string
	CreatedAt   time.Time
	EditedAt    []time.Time // one entry per edit
	Deleted     bool
	Reactions   []string // emoji the bot added, in order
	Components  string   // message components JSON as last sent (the bot's buttons); "" for none
	// Attachments are the files of a user's message (see SendWithFiles), served by the fake's
	// CDN.
	Attachments []Attachment
}

// Call is one recorded REST request.
type Call struct {
	Method string
	Path   string // unescaped, without the /api/vN prefix, e.g. "/channels/1/messages"
	Body   []byte
	Status int
	At     time.Time
}

// Identify is a recorded gateway Identify payload.
type Identify struct {
	Token   string
	Intents int
	Shard   [2]int // [0, 1] when absent
	Query   url.Values
}

// Resume is a recorded gateway Resume payload.
type Resume struct {
	SessionID string
	Seq       int64
}

type rateLimit struct {
	method   string
	contains string
	after    time.Duration
	global   bool
}

// Server is the fake. Create it with NewServer; Close it when done.
type Server struct {
	opts Options
	http *httptest.Server
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// APIURL is the REST base URL to configure clients with: URL + "/api/v9/".
	APIURL string
	// GatewayURL is the websocket URL returned by GET /gateway: ws://127.0.0.1:port/gateway.
	GatewayURL string

	upgrader websocket.Upgrader

	mu         sync.Mutex
	changed    chan struct{}
	nextID     int64
	calls      []Call
	messages   map[string]*Message
	order      []string
	stallMatch func(string) bool   // StallWhen
	stallCh    chan struct{}       // closed by ReleaseStalls
	nonces     map[string]nonceUse // channel + "\x00" + nonce → its first message
	dmChannels map[string]string   // user id → DM channel id
	guildOf    map[string]string   // channel id → guild id ("" for DMs)
	limits     []rateLimit
	windows    map[string][]time.Time
	violations int

	acks        bool
	heartbeats  int
	connects    int
	identifies  []Identify
	resumes     []Resume
	queries     []url.Values
	sessions    map[string]*gwSession
	current     *gwSession
	conn        *gwConn
	replayExtra int
	closed      bool

	interactions map[string]string // interaction id → token (interactions.go)
	callbacks    []Callback
	followUps    []FollowUp
	commandSets  []CommandSet
	threads      map[string]bool // thread channel ids

	files     map[string]*Attachment // hosted attachments by id (files.go)
	downloads map[string]int         // attachment id → downloads
}

// NewServer starts a fake Discord on 127.0.0.1.
func NewServer(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = "test-token"
	}
	if opts.BotID == "" {
		opts.BotID = "100000000000000001"
	}
	if opts.BotName == "" {
		opts.BotName = "echobot"
	}
	if opts.ChannelLimit <= 0 {
		opts.ChannelLimit = 5
	}
	if opts.ChannelWindow <= 0 {
		opts.ChannelWindow = 5 * time.Second
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 500 * time.Millisecond
	}
	s := &Server{
		opts:       opts,
		changed:    make(chan struct{}),
		nextID:     1_200_000_000_000_000_000,
		messages:   map[string]*Message{},
		nonces:     map[string]nonceUse{},
		dmChannels: map[string]string{},
		guildOf:    map[string]string{},
		windows:    map[string][]time.Time{},
		sessions:   map[string]*gwSession{},
		acks:       true,
		files:      map[string]*Attachment{},
		downloads:  map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /gateway", s.serveGateway)
	mux.HandleFunc("GET /gateway/", s.serveGateway)
	mux.HandleFunc("/api/{version}/", s.serveREST)
	mux.HandleFunc("GET /attachments/{channel}/{id}/{name}", s.serveAttachment)
	// The URLs are set before the server serves: a client in another process (the binary under
	// test) gives the race detector no happens-before edge to writes made after Start.
	s.http = httptest.NewUnstartedServer(mux)
	s.URL = "http://" + s.http.Listener.Addr().String()
	s.APIURL = s.URL + "/api/v9/"
	s.GatewayURL = "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway"
	s.http.Start()
	return s
}

// Close stops the server and closes gateway connections.
func (s *Server) Close() {
	s.ReleaseStalls()
	s.mu.Lock()
	s.closed = true
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.ws.Close()
	}
	s.http.CloseClientConnections()
	s.http.Close()
}

// Token returns the accepted bot token (without "Bot ").
func (s *Server) Token() string { return s.opts.Token }

// Bot returns the bot user.
func (s *Server) Bot() User { return User{ID: s.opts.BotID, Username: s.opts.BotName, Bot: true} }

// notify wakes WaitFor callers. Call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond returns true, re-checking on every change of the server's state
// (REST calls, gateway traffic) and at least every 50ms, or fails after timeout naming what.
// cond runs without the server's lock held, so it may call the server's accessors.
func (s *Server) WaitFor(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			if cond() {
				return nil
			}
			return fmt.Errorf("discordtest: timed out after %s waiting for %s", timeout, what)
		}
	}
}

func (s *Server) newID() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// Calls returns every REST call so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsTo returns the calls with method whose path starts with prefix ("" matches any).
func (s *Server) CallsTo(method, prefix string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if (method == "" || c.Method == method) && strings.HasPrefix(c.Path, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Message returns the message with id (including deleted ones).
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return Message{}, false
	}
	return m.clone(), true
}

func (m *Message) clone() Message {
	c := *m
	c.EditedAt = append([]time.Time(nil), m.EditedAt...)
	c.Reactions = append([]string(nil), m.Reactions...)
	c.Attachments = append([]Attachment(nil), m.Attachments...)
	return c
}

// Messages returns the messages of channelID that are not deleted, oldest first.
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.order {
		m := s.messages[id]
		if m.ChannelID == channelID && !m.Deleted {
			out = append(out, m.clone())
		}
	}
	return out
}

// BotMessages returns the bot's messages in channelID that are not deleted, oldest first; with
// channelID "" those of every channel.
func (s *Server) BotMessages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.order {
		m := s.messages[id]
		if m.Author.ID == s.opts.BotID && !m.Deleted && (channelID == "" || m.ChannelID == channelID) {
			out = append(out, m.clone())
		}
	}
	return out
}

// Violations counts requests answered 429 by EnforceChannelLimit.
func (s *Server) Violations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.violations
}

// RateLimitNext makes the next REST request with method whose path contains contains answer 429
// with retry_after (and, when global, X-RateLimit-Global). Rules queue up in order.
func (s *Server) RateLimitNext(method, contains string, retryAfter time.Duration, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, rateLimit{method: method, contains: contains, after: retryAfter, global: global})
}

// DMChannel returns the DM channel id of user, creating it.
func (s *Server) DMChannel(userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dmChannelLocked(userID)
}

func (s *Server) dmChannelLocked(userID string) string {
	if ch, ok := s.dmChannels[userID]; ok {
		return ch
	}
	ch := s.newID()
	s.dmChannels[userID] = ch
	s.guildOf[ch] = ""
	return ch
}

// --- REST ---

type apiError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	version := r.PathValue("version")
	path := strings.TrimPrefix(r.URL.Path, "/api/"+version)
	status := s.handleREST(w, r, path, body)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: path, Body: body, Status: status, At: time.Now()})
	s.notify()
	s.mu.Unlock()
}

// handleREST answers one request and returns the status it wrote.
func (s *Server) handleREST(w http.ResponseWriter, r *http.Request, path string, body []byte) int {
	if version := r.PathValue("version"); version != "v9" && version != "v10" {
		writeJSON(w, http.StatusNotFound, apiError{Message: "unsupported API version " + version})
		return http.StatusNotFound
	}
	if r.Header.Get("Authorization") != "Bot "+s.opts.Token {
		writeJSON(w, http.StatusUnauthorized, apiError{Message: "401: Unauthorized", Code: 0})
		return http.StatusUnauthorized
	}
	if st, ok := s.injected429(w, r.Method, path); ok {
		return st
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if st, ok := s.handleInteractionREST(w, r.Method, parts, body); ok {
		return st
	}
	switch {
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodGet:
		return s.listMessages(w, parts[1], r.URL.Query())
	case r.Method == http.MethodGet && path == "/gateway":
		writeJSON(w, 200, map[string]any{"url": s.GatewayURL})
	case r.Method == http.MethodGet && path == "/gateway/bot":
		writeJSON(w, 200, map[string]any{"url": s.GatewayURL, "shards": 1,
			"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}})
	case r.Method == http.MethodGet && path == "/users/@me":
		writeJSON(w, 200, s.Bot())
	case r.Method == http.MethodGet && path == "/applications/@me":
		flags := int64(1 << 18)
		if s.opts.AppFlags != nil {
			flags = *s.opts.AppFlags
		}
		writeJSON(w, 200, map[string]any{"id": s.Bot().ID, "name": s.Bot().Username, "flags": flags})
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet:
		s.mu.Lock()
		guild, known := s.guildOf[parts[1]]
		s.mu.Unlock()
		typ := 0
		if known && guild == "" {
			typ = 1
		}
		s.mu.Lock()
		if s.threads[parts[1]] {
			typ = 11
		}
		s.mu.Unlock()
		ch := map[string]any{"id": parts[1], "type": typ}
		if guild != "" {
			ch["guild_id"] = guild
		}
		writeJSON(w, 200, ch)
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "typing" && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPost:
		return s.createMessage(r.Context(), w, parts[1], body)
	case len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		return s.messageOp(r.Context(), w, r.Method, parts[1], parts[3], body)
	case len(parts) == 7 && parts[0] == "channels" && parts[2] == "messages" && parts[4] == "reactions" && parts[6] == "@me":
		return s.reactionOp(w, r.Method, parts[1], parts[3], parts[5])
	default:
		writeJSON(w, http.StatusNotFound, apiError{Message: "404: Not Found (discordtest has no route " + r.Method + " " + path + ")", Code: 0})
		return http.StatusNotFound
	}
	return 200
}

func write429(w http.ResponseWriter, after time.Duration, global bool) int {
	secs := after.Seconds()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Scope", "user")
	if global {
		h.Set("X-RateLimit-Global", "true")
		h.Set("X-RateLimit-Scope", "global")
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global})
	return http.StatusTooManyRequests
}

// injected429 answers a queued RateLimitNext rule or a channel limit violation.
func (s *Server) injected429(w http.ResponseWriter, method, path string) (int, bool) {
	s.mu.Lock()
	for i, l := range s.limits {
		if l.method == method && strings.Contains(path, l.contains) {
			s.limits = append(s.limits[:i], s.limits[i+1:]...)
			s.mu.Unlock()
			return write429(w, l.after, l.global), true
		}
	}
	if s.opts.EnforceChannelLimit && strings.HasPrefix(path, "/channels/") && strings.Contains(path, "/messages") &&
		!strings.Contains(path, "/reactions") && (method == http.MethodPost || method == http.MethodPatch) {
		ch := strings.Split(strings.Trim(path, "/"), "/")[1]
		key := method + " " + ch
		limit, window := s.opts.ChannelLimit, s.opts.ChannelWindow
		now := time.Now()
		var win []time.Time
		for _, t := range s.windows[key] {
			if now.Sub(t) < window {
				win = append(win, t)
			}
		}
		if len(win) >= limit {
			s.windows[key] = win
			s.violations++
			after := window - now.Sub(win[0])
			s.mu.Unlock()
			return write429(w, after, false), true
		}
		win = append(win, now)
		s.windows[key] = win
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(limit-len(win)))
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat((window-now.Sub(win[0])).Seconds(), 'f', 3, 64))
		h.Set("X-RateLimit-Bucket", key)
	}
	s.mu.Unlock()
	return 0, false
}

type wireUser struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name,omitempty"`
	Bot        bool   `json:"bot,omitempty"`
}

type wireMessage struct {
	ID                string          `json:"id"`
	ChannelID         string          `json:"channel_id"`
	GuildID           string          `json:"guild_id,omitempty"`
	Author            wireUser        `json:"author"`
	Content           string          `json:"content"`
	Timestamp         string          `json:"timestamp"`
	EditedTimestamp   *string         `json:"edited_timestamp"`
	Type              int             `json:"type"`
	Mentions          []wireUser      `json:"mentions"`
	Attachments       []any           `json:"attachments"`
	Embeds            []any           `json:"embeds"`
	Nonce             string          `json:"nonce,omitempty"`
	MessageReference  *wireReference  `json:"message_reference,omitempty"`
	ReferencedMessage *wireMessage    `json:"referenced_message,omitempty"`
	Member            *map[string]any `json:"member,omitempty"`
}

type wireReference struct {
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id,omitempty"`
	GuildID   string `json:"guild_id,omitempty"`
}

func (s *Server) wireLocked(m *Message, withRef bool) wireMessage {
	w := wireMessage{
		ID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID,
		Author:  wireUser{ID: m.Author.ID, Username: m.Author.Username, GlobalName: m.Author.GlobalName, Bot: m.Author.Bot},
		Content: m.Content, Timestamp: m.CreatedAt.UTC().Format(time.RFC3339Nano),
		Mentions: []wireUser{}, Attachments: []any{}, Embeds: []any{}, Nonce: m.Nonce,
	}
	if n := len(m.EditedAt); n > 0 {
		ts := m.EditedAt[n-1].UTC().Format(time.RFC3339Nano)
		w.EditedTimestamp = &ts
	}
	if m.ReferenceID != "" {
		w.Type = 19
		w.MessageReference = &wireReference{MessageID: m.ReferenceID, ChannelID: m.ChannelID, GuildID: m.GuildID}
		if ref, ok := s.messages[m.ReferenceID]; ok && withRef {
			r := s.wireLocked(ref, false)
			w.ReferencedMessage = &r
		}
	}
	for _, a := range m.Attachments {
		w.Attachments = append(w.Attachments, s.wireAttachment(m.ChannelID, a))
	}
	if m.GuildID != "" {
		w.Member = &map[string]any{"roles": []string{}, "joined_at": m.CreatedAt.UTC().Format(time.RFC3339)}
	}
	return w
}

func (s *Server) createMessage(ctx context.Context, w http.ResponseWriter, channelID string, body []byte) int {
	var req struct {
		Content          string `json:"content"`
		Nonce            any    `json:"nonce"`
		EnforceNonce     bool   `json:"enforce_nonce"`
		MessageReference *struct {
			MessageID string `json:"message_id"`
		} `json:"message_reference"`
		Components json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "400: Bad Request: " + err.Error(), Code: 50109})
		return http.StatusBadRequest
	}
	if req.Content == "" {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "Cannot send an empty message", Code: 50006})
		return http.StatusBadRequest
	}
	if n := len([]rune(req.Content)); n > 2000 {
		writeJSON(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Invalid Form Body: content: Must be 2000 or fewer in length (got %d)", n), Code: 50035})
		return http.StatusBadRequest
	}
	nonce := ""
	if req.Nonce != nil {
		nonce = fmt.Sprint(req.Nonce)
	}
	s.mu.Lock()
	if req.EnforceNonce && nonce != "" {
		if use, ok := s.nonces[channelID+"\x00"+nonce]; ok && time.Since(use.at) < s.nonceWindow() {
			out := s.wireLocked(s.messages[use.id], true)
			s.mu.Unlock()
			writeJSON(w, 200, out)
			return 200
		}
	}
	m := &Message{ID: s.newID(), ChannelID: channelID, GuildID: s.guildOf[channelID], Author: s.Bot(), Content: req.Content, Nonce: nonce, CreatedAt: time.Now()}
	if req.MessageReference != nil {
		m.ReferenceID = req.MessageReference.MessageID
	}
	if len(req.Components) > 0 && string(req.Components) != "null" {
		m.Components = string(req.Components)
	}
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	if nonce != "" {
		s.nonces[channelID+"\x00"+nonce] = nonceUse{id: m.ID, at: m.CreatedAt}
	}
	out := s.wireLocked(m, true)
	stall := s.stallLocked(req.Content)
	s.mu.Unlock()
	if !s.opts.NoEcho {
		s.Dispatch("MESSAGE_CREATE", out)
	}
	if !waitStall(ctx, stall) { // the message exists; its response waits
		return 0
	}
	writeJSON(w, 200, out)
	return 200
}

func (s *Server) messageOp(ctx context.Context, w http.ResponseWriter, method, channelID, messageID string, body []byte) int {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok || m.ChannelID != channelID || m.Deleted {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: 10008})
		return http.StatusNotFound
	}
	switch method {
	case http.MethodGet:
		out := s.wireLocked(m, true)
		out.Nonce = "" // Discord shows a nonce only to the create and in MESSAGE_CREATE
		s.mu.Unlock()
		writeJSON(w, 200, out)
		return 200
	case http.MethodPatch:
		var req struct {
			Content    *string          `json:"content"`
			Components *json.RawMessage `json:"components"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			s.mu.Unlock()
			writeJSON(w, http.StatusBadRequest, apiError{Message: "400: Bad Request", Code: 50109})
			return http.StatusBadRequest
		}
		if m.Author.ID != s.opts.BotID {
			s.mu.Unlock()
			writeJSON(w, http.StatusForbidden, apiError{Message: "Cannot edit a message authored by another user", Code: 50005})
			return http.StatusForbidden
		}
		if req.Content != nil {
			if n := len([]rune(*req.Content)); n > 2000 || n == 0 {
				s.mu.Unlock()
				writeJSON(w, http.StatusBadRequest, apiError{Message: fmt.Sprintf("Invalid Form Body: content length %d", n), Code: 50035})
				return http.StatusBadRequest
			}
			m.Content = *req.Content
		}
		if req.Components != nil {
			m.Components = ""
			if c := string(*req.Components); c != "[]" && c != "null" {
				m.Components = c
			}
		}
		m.EditedAt = append(m.EditedAt, time.Now())
		out := s.wireLocked(m, true)
		stall := s.stallLocked(m.Content)
		s.mu.Unlock()
		if !waitStall(ctx, stall) { // the edit is applied; its response waits
			return 0
		}
		writeJSON(w, 200, out)
		return 200
	case http.MethodDelete:
		m.Deleted = true
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusMethodNotAllowed, apiError{Message: "405: Method Not Allowed"})
	return http.StatusMethodNotAllowed
}

func (s *Server) reactionOp(w http.ResponseWriter, method, channelID, messageID, emoji string) int {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok || m.ChannelID != channelID || m.Deleted {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, apiError{Message: "Unknown Message", Code: 10008})
		return http.StatusNotFound
	}
	switch method {
	case http.MethodPut:
		m.Reactions = append(m.Reactions, emoji)
		guild := m.GuildID
		author := m.Author.ID
		s.mu.Unlock()
		if !s.opts.NoEcho {
			s.dispatchReaction(channelID, guild, messageID, author, s.Bot(), emoji)
		}
	case http.MethodDelete:
		for i, e := range m.Reactions {
			if e == emoji {
				m.Reactions = append(m.Reactions[:i], m.Reactions[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	default:
		s.mu.Unlock()
		writeJSON(w, http.StatusMethodNotAllowed, apiError{Message: "405: Method Not Allowed"})
		return http.StatusMethodNotAllowed
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

// --- what users do ---

// SendDM dispatches MESSAGE_CREATE for a DM from user to the bot and returns the message.
func (s *Server) SendDM(user User, text string) Message {
	s.mu.Lock()
	ch := s.dmChannelLocked(user.ID)
	s.mu.Unlock()
	return s.post(user, "", ch, text, "", false, nil)
}

// SendGuildMessage dispatches MESSAGE_CREATE for a message by user in a guild channel (or
// thread) channelID. With mentionBot the text starts with the bot's mention markup.
func (s *Server) SendGuildMessage(guildID, channelID string, user User, text string, mentionBot bool) Message {
	s.mu.Lock()
	s.guildOf[channelID] = guildID
	s.mu.Unlock()
	return s.post(user, guildID, channelID, text, "", mentionBot, nil)
}

// ReplyInGuild dispatches MESSAGE_CREATE for a reply by user to message replyTo (no mention).
func (s *Server) ReplyInGuild(guildID, channelID string, user User, text, replyTo string) Message {
	s.mu.Lock()
	s.guildOf[channelID] = guildID
	s.mu.Unlock()
	return s.post(user, guildID, channelID, text, replyTo, false, nil)
}

func (s *Server) post(user User, guildID, channelID, text, replyTo string, mentionBot bool, files []Attachment) Message {
	s.mu.Lock()
	if mentionBot {
		text = "<@" + s.opts.BotID + "> " + text
	}
	m := &Message{ID: s.newID(), ChannelID: channelID, GuildID: guildID, Author: user, Content: text, ReferenceID: replyTo, CreatedAt: time.Now()}
	m.Attachments = s.hostLocked(files)
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	out := s.wireLocked(m, true)
	// A reply pings the author of the replied-to message (Discord's default), so a reply to
	// the bot mentions it, and its content is visible without MESSAGE_CONTENT.
	replyPing := false
	if ref, ok := s.messages[replyTo]; ok && replyTo != "" && ref.Author.ID == s.opts.BotID {
		replyPing = true
	}
	if mentionBot || replyPing {
		out.Mentions = append(out.Mentions, wireUser{ID: s.opts.BotID, Username: s.opts.BotName, Bot: true})
	}
	out = s.visibleLocked(out, mentionBot || replyPing)
	c := m.clone()
	s.mu.Unlock()
	s.Dispatch("MESSAGE_CREATE", out)
	return c
}

// AddReaction dispatches MESSAGE_REACTION_ADD: user reacted with emoji to message messageID.
func (s *Server) AddReaction(messageID string, user User, emoji string) error {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("discordtest: add reaction: unknown message %s", messageID)
	}
	ch, guild, author := m.ChannelID, m.GuildID, m.Author.ID
	s.mu.Unlock()
	s.dispatchReaction(ch, guild, messageID, author, user, emoji)
	return nil
}

func (s *Server) dispatchReaction(channelID, guildID, messageID, authorID string, user User, emoji string) {
	d := map[string]any{
		"user_id": user.ID, "channel_id": channelID, "message_id": messageID,
		"emoji": map[string]any{"id": nil, "name": emoji}, "burst": false, "type": 0,
	}
	if !s.opts.OmitMessageAuthorID {
		d["message_author_id"] = authorID
	}
	if guildID != "" {
		d["guild_id"] = guildID
		d["member"] = map[string]any{"user": wireUser{ID: user.ID, Username: user.Username, GlobalName: user.GlobalName, Bot: user.Bot}, "roles": []string{}}
	}
	s.Dispatch("MESSAGE_REACTION_ADD", d)
}

// sortedKeys is a helper for stable output in error messages.
func sortedKeys(m map[string]*gwSession) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nonceUse is the message a nonce first created and when.
type nonceUse struct {
	id string
	at time.Time
}

func (s *Server) nonceWindow() time.Duration {
	if s.opts.NonceWindow > 0 {
		return s.opts.NonceWindow
	}
	return 5 * time.Minute
}

// DeleteMessage deletes a message as a moderator would: later edits of it answer 404
// Unknown Message. It reports whether the message existed.
func (s *Server) DeleteMessage(id string) bool {
	s.mu.Lock()
	m, ok := s.messages[id]
	if ok {
		m.Deleted = true
	}
	s.mu.Unlock()
	s.notify()
	return ok
}

// ExpireNonces ends the nonce window of every message created so far: a create repeating one of
// their nonces creates a new message, as on Discord minutes later.
func (s *Server) ExpireNonces() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.nonces)
}

// StallWhen makes every later message create or edit whose resulting content match accepts
// hang once applied: the message exists (or shows the edit) but the response waits until
// ReleaseStalls, Close or the client going away, as when a process dies between Discord taking
// a post and its answer arriving.
func (s *Server) StallWhen(match func(content string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallMatch = match
	if s.stallCh == nil {
		s.stallCh = make(chan struct{})
	}
}

// ReleaseStalls answers the stalled requests and stops stalling.
func (s *Server) ReleaseStalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stallCh != nil {
		close(s.stallCh)
		s.stallCh, s.stallMatch = nil, nil
	}
}

func (s *Server) stallLocked(content string) chan struct{} {
	if s.stallMatch != nil && s.stallMatch(content) {
		return s.stallCh
	}
	return nil
}

// waitStall holds a response while stall (from stallLocked) is open; false when the client went
// away (nothing is to be written).
func waitStall(ctx context.Context, stall chan struct{}) bool {
	if stall == nil {
		return true
	}
	select {
	case <-stall:
		return true
	case <-ctx.Done():
		return false
	}
}
