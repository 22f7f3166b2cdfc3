package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate/tools"
)

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

var buildVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
})

func version() string { return buildVersion() }
