package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	retry "github.com/echogate/echogate/internal/backoff"
	"github.com/echogate/echogate/tools"
)

// stableSession is how long a session must have lasted for its end to reset the reconnect
// backoff: a server that crashes right after every start is retried ever more slowly.
const stableSession = 30 * time.Second

// maxTools bounds how many tools one server may register (a runaway listing must not flood the
// model's catalogue).
const maxTools = 256

// Manager supervises the configured MCP servers and keeps their tools in a tools.Registry.
// Build it with New, start it with Run; Status, Allowed and ToolFilter are safe for concurrent
// use at any time.
type Manager struct {
	cfg     Config
	reg     *tools.Registry
	log     *slog.Logger
	onState func(tool, from, to string)
	servers []*server
	byName  map[string]*server
	running atomic.Bool
	logins  *Logins // nil without auth: oauth servers

	mu      sync.Mutex
	updated chan struct{}
}

// ServerStatus is one server's state, for /readyz-like views and the console.
type ServerStatus struct {
	Name      string
	Transport string // "stdio" or "http"
	Target    string // the command, or the URL without credentials
	Connected bool
	// NeedsLogin is set for a server with auth: oauth that has no usable grant (none stored,
	// refused, or more scope wanted): its tools are withheld until a login; LastError says
	// why and what to run.
	NeedsLogin bool
	Tools      []string // registered tool names, sorted
	// LastError is why the server is not connected (or the last listing problem); empty when
	// all is well. It never holds header values or URL credentials.
	LastError string
	// Since is when Connected last changed (zero before the first attempt ended).
	Since time.Time
	// Attempts counts failed connection attempts since the last established session.
	Attempts int
}

// New validates cfg and builds a Manager that registers MCP tools in reg. It does no I/O.
// log may be nil (discard). onState (may be nil) receives every circuit-breaker state change of
// an MCP tool, as tools.WithBreaker documents ("closed", "open", "half-open"); it must return
// quickly.
func New(cfg Config, reg *tools.Registry, log *slog.Logger, onState func(tool, from, to string)) (*Manager, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: a tools registry is required", ErrConfig)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	if cfg.Breaker.Failures < 0 || cfg.Breaker.CoolDown < 0 {
		return nil, fmt.Errorf("%w: mcp breaker: failures and cool_down must not be negative (0 means the defaults)", ErrConfig)
	}
	m := &Manager{cfg: cfg, reg: reg, log: log, onState: onState, byName: map[string]*server{}, updated: make(chan struct{})}
	for i, sc := range cfg.Servers {
		if err := sc.validate(i); err != nil {
			return nil, err
		}
		if _, dup := m.byName[sc.Name]; dup {
			return nil, fmt.Errorf("%w: mcp.servers[%d]: the name %q is used twice; give each server its own name", ErrConfig, i, sc.Name)
		}
		s := newServer(m, sc)
		m.servers = append(m.servers, s)
		m.byName[sc.Name] = s
		if sc.oauth() && (cfg.Tokens == nil || cfg.OAuthRedirectURL == "") {
			return nil, fmt.Errorf("%w: mcp.servers[%d] (%s): auth: oauth needs a token store (%s and a database) and the gateway's OAuth redirect URL (its /oauth/callback)", ErrConfig, i, sc.Name, "ECHOGATE_SECRET_KEY")
		}
	}
	if err := m.startLogins(); err != nil {
		return nil, err
	}
	return m, nil
}

// Run connects every server and keeps it connected until ctx ends: one supervisor goroutine per
// server, all of which have exited, their sessions closed (stdio processes stopped) and their
// tools unregistered when Run returns. Servers that are down are retried with backoff; Run
// itself never fails because of a server. It returns nil when ctx ends, ErrRunning when called
// twice.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.supervise(ctx)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	if m.logins != nil {
		m.logins.Close()
	}
	return nil
}

// Status reports every server in configuration order.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return out
}

// Updated returns a channel that is closed at the next change of any server's connection state,
// last error or tools. Take it before looking at Status or the registry, then wait on it.
func (m *Manager) Updated() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.updated
}

func (m *Manager) notify() {
	m.mu.Lock()
	close(m.updated)
	m.updated = make(chan struct{})
	m.mu.Unlock()
}

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

// refresh lists the server's tools (all pages) and brings the registry in line: new tools are
// added, changed ones replaced, vanished ones removed.
func (s *server) refresh(ctx context.Context, cs *sdk.ClientSession) error {
	var listed []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if t == nil {
			continue
		}
		if err := checkTool(t); err != nil {
			s.log.Warn("mcp: tool definition rejected; the server's other tools are offered", "tool", t.Name, "reason", err.Error())
			continue
		}
		if len(listed) == maxTools {
			s.log.Warn("mcp: server lists too many tools; ignoring the rest", "max", maxTools)
			break
		}
		listed = append(listed, t)
	}
	sort.Slice(listed, func(i, j int) bool { return listed[i].Name < listed[j].Name })
	changed, err := s.apply(cs, listed)
	if changed {
		s.m.notify()
	}
	return err
}

// apply registers listed (sorted by name) as the server's tools. It reports whether anything
// visible changed. The session's first listing also marks the server connected, under the
// same lock as the registration: whoever sees one of its tools in the registry then reads
// Connected in Status, and a server Ready or Status reports connected offers its tools.
func (s *server) apply(cs *sdk.ClientSession, listed []*sdk.Tool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != cs {
		return false, fmt.Errorf("mcp: %s: session ended while listing", s.cfg.Name)
	}
	changed := false
	if !s.connected {
		s.connected, s.since, s.lastErr, s.attempts, s.needsLogin = true, time.Now(), "", 0, false
		changed = true
	}
	want := make(map[string]*entry, len(listed))
	taken := func(name string) bool {
		if _, ok := want[name]; ok {
			return true
		}
		if s.registered[name] {
			return false
		}
		_, exists := s.m.reg.Get(name)
		return exists
	}
	for _, t := range listed {
		name := registryName(s.cfg.Name, t.Name, taken)
		safety, ok := s.toolSafety[t.Name]
		if !ok {
			safety = s.safety
		}
		spec := buildSpec(s.cfg.Name, name, t, safety)
		if e, ok := s.known[name]; ok && e.remote == t.Name && sameSpec(e.spec, spec) {
			want[name] = e
			continue
		}
		rt := &remoteTool{srv: s, remote: t.Name, spec: spec}
		want[name] = &entry{remote: t.Name, spec: spec, tool: tools.WithBreaker(rt, s.breaker, s.m.log, s.m.onState)}
	}
	for name := range s.registered {
		if _, keep := want[name]; !keep {
			s.m.reg.Remove(name)
			delete(s.registered, name)
			changed = true
		}
	}
	var problems []string
	for name, e := range want {
		if s.registered[name] && s.known[name] == e {
			continue
		}
		var err error
		if s.registered[name] {
			err = s.m.reg.Replace(e.tool)
		} else {
			err = s.m.reg.Add(e.tool)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("tool %s not registered: %v", e.remote, err))
			continue
		}
		s.registered[name] = true
		changed = true
	}
	s.known = want
	if len(problems) > 0 {
		sort.Strings(problems)
		s.lastErr = strings.Join(problems, "; ")
		s.log.Warn("mcp: some tools could not be registered", "err", s.lastErr)
		changed = true
	} else if s.connected && s.lastErr != "" {
		s.lastErr = "" // an earlier listing problem is solved
		changed = true
	}
	return changed, nil
}

func sameSpec(a, b tools.Spec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Safety == b.Safety && string(a.Parameters) == string(b.Parameters)
}

// unregisterAll removes the server's tools from the registry.
func (s *server) unregisterAll() {
	s.closeUsers()
	s.mu.Lock()
	n := len(s.registered)
	for name := range s.registered {
		s.m.reg.Remove(name)
	}
	clear(s.registered)
	s.mu.Unlock()
	if n > 0 {
		s.m.notify()
	}
}

var buildVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
})

func version() string { return buildVersion() }
