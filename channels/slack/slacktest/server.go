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
	Team      string // the author's own team (Slack Connect: another organisation's); "" = not sent
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

	reliable     map[string]*reliable // Deliver's events by event id, until acknowledged (redeliver.go)
	byEnvelope   map[string]*reliable // the same, by the envelope id of their current attempt
	redeliveries int
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
