package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	retry "github.com/echogate/echogate/internal/backoff"
	"github.com/echogate/echogate/tools"
)

// stableSession is how long a session must have lasted for its end to reset the reconnect
// backoff: a server that crashes right after every start is retried ever more slowly.
const stableSession = 30 * time.Second

// server is one supervised MCP server.
type server struct {
	m          *Manager
	cfg        ServerConfig
	safety     tools.Safety
	toolSafety map[string]tools.Safety
	breaker    tools.BreakerConfig
	maxOutput  int
	log        *slog.Logger
	allow      allowList
	relist     chan struct{} // a tools/list_changed arrived
	broken     chan struct{} // a call saw the connection closed
	kick       chan struct{} // a login stored a grant: reconnect now

	mu         sync.Mutex
	session    *sdk.ClientSession
	connected  bool
	since      time.Time
	lastErr    string
	attempts   int
	lost       string                  // this attempt found the OAuth grant unusable (why); reset per attempt
	needsLogin bool                    // the last attempt ended for want of a login
	inflight   map[uint64]inflightCall // tool calls in flight, for elicitations
	users      map[string]*userSession // auth: oauth_per_user: sessions by person (users.go)
	retired    []*userSession          // dropped sessions, to close outside their requests
	callSeq    uint64
	known      map[string]*entry // registry name → tool, kept across sessions so breakers survive
	registered map[string]bool   // names this server holds in the registry now
}

// entry is one tool of a server.
type entry struct {
	remote string
	spec   tools.Spec
	tool   tools.Tool // breaker-wrapped remoteTool
}

func newServer(m *Manager, sc ServerConfig) *server {
	safety, _ := parseSafety(sc.Safety) // validated
	ts := make(map[string]tools.Safety, len(sc.ToolSafety))
	for k, v := range sc.ToolSafety {
		ts[k], _ = parseSafety(v)
	}
	b := m.cfg.Breaker
	if sc.CallTimeout > 0 {
		b.CallTimeout = sc.CallTimeout
	}
	if b.CallTimeout <= 0 {
		b.CallTimeout = DefaultCallTimeout
	}
	maxOut := sc.MaxOutput
	if maxOut == 0 {
		maxOut = DefaultMaxOutput
	}
	return &server{
		m: m, cfg: sc, safety: safety, toolSafety: ts, breaker: b, maxOutput: maxOut,
		log:    m.log.With(slog.String("mcp_server", sc.Name)),
		allow:  newAllowList(sc.AllowChannels, sc.AllowUsers),
		relist: make(chan struct{}, 1), broken: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		known: map[string]*entry{}, registered: map[string]bool{}, inflight: map[uint64]inflightCall{}, users: map[string]*userSession{},
	}
}

func (s *server) target() string {
	if s.cfg.URL != "" {
		return redactURL(s.cfg.URL)
	}
	return s.cfg.Command
}

// scrub removes the server URL (which may hold credentials in its query) from a message.
func (s *server) scrub(msg string) string {
	if s.cfg.URL != "" {
		msg = strings.ReplaceAll(msg, s.cfg.URL, redactURL(s.cfg.URL))
	}
	return msg
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.registered))
	for n := range s.registered {
		names = append(names, n)
	}
	sort.Strings(names)
	return ServerStatus{Name: s.cfg.Name, Transport: s.cfg.Transport(), Target: s.target(), Connected: s.connected,
		NeedsLogin: s.needsLogin, Tools: names, LastError: s.lastErr, Since: s.since, Attempts: s.attempts}
}

// current returns the live session, nil when disconnected.
func (s *server) current() *sdk.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

func (s *server) downReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr != "" {
		return capText(s.lastErr, 300)
	}
	return "connecting"
}

func (s *server) requestRelist() {
	select {
	case s.relist <- struct{}{}:
	default:
	}
}

// sessionBroken is called by a tool call that saw the connection closed: calls fail fast from
// now on and the supervisor reconnects.
func (s *server) sessionBroken(cs *sdk.ClientSession, err error) {
	s.mu.Lock()
	if s.session != cs {
		s.mu.Unlock()
		return
	}
	s.session = nil
	s.mu.Unlock()
	s.log.Warn("mcp: connection lost during a tool call", "err", s.scrub(err.Error()))
	select {
	case s.broken <- struct{}{}:
	default:
	}
}

// supervise keeps the server connected until ctx ends.
func (s *server) supervise(ctx context.Context) {
	defer s.unregisterAll()
	failures := 0 // drives the backoff; only a session that stayed up resets it
	for {
		established, err := s.runSession(ctx)
		if ctx.Err() != nil {
			s.setDown("stopped", false)
			return
		}
		s.mu.Lock()
		if established {
			s.attempts = 0
			if time.Since(s.since) >= stableSession {
				failures = 0
			}
		}
		s.attempts++
		n := s.attempts
		s.mu.Unlock()
		failures++
		delay := backoff(s.m.cfg.ReconnectMin, s.m.cfg.ReconnectMax, failures)
		msg := s.scrub(err.Error())
		if reason := s.takeLost(); reason != "" {
			// Nobody can answer a login here: wait for one (or for another replica's, which
			// only the store shows: look again after ReconnectMax).
			msg = fmt.Sprintf("needs login: %s; run `echogate mcp login %s`", reason, s.cfg.Name)
			delay = s.m.cfg.ReconnectMax
			s.log.Warn("mcp: server needs login; its tools are withheld", "reason", reason)
		} else {
			s.log.Warn("mcp: server unavailable; reconnecting", "err", msg, "attempt", n, "retry_in", delay.Round(time.Millisecond))
		}
		s.setDown(msg, true)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.setDown("stopped", false)
			return
		case <-s.kick:
			t.Stop()
			failures = 0
		case <-t.C:
		}
	}
}

// backoff is min·2^(n-1) capped at max, with jitter in [d/2, d] (internal/backoff).
func backoff(min, max time.Duration, n int) time.Duration {
	return retry.Policy{Initial: min, Max: max}.Delay(n)
}

// setDown marks the server disconnected and removes its tools in one step under s.mu, so
// Status and Ready never report a server connected whose tools are gone (nor offer tools of
// a server they report down).
func (s *server) setDown(reason string, keepReason bool) {
	s.mu.Lock()
	changed := s.connected || (keepReason && s.lastErr != reason) || len(s.registered) > 0
	if s.connected {
		s.since = time.Now()
	}
	s.connected = false
	s.session = nil
	if keepReason {
		s.lastErr = reason
	}
	for name := range s.registered {
		s.m.reg.Remove(name)
	}
	clear(s.registered)
	s.mu.Unlock()
	if changed {
		s.m.notify()
	}
}
