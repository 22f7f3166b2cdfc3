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
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	// SharedShard keeps every gateway connection open, each with its own session, and sends
	// each dispatch to all of them (several processes on the same shard, see shared.go);
	// without it a new connection closes the previous one.
	SharedShard bool
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
	holds      []*hold             // HoldREST rules (hold.go)
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
	shared      map[*gwConn]bool // SharedShard: every open connection (shared.go)
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
	s.releaseHolds()
	s.mu.Lock()
	s.closed = true
	conn := s.conn
	var shared []*gwConn
	for c := range s.shared {
		shared = append(shared, c)
	}
	s.mu.Unlock()
	if conn != nil {
		conn.ws.Close()
	}
	for _, c := range shared {
		c.ws.Close()
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
