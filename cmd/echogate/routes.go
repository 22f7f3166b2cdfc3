package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/tools/mcp"
)

// routeMux is the server's ServeMux, remembering every pattern registered on it (and the web
// channel's, mounted under it), so that a test can walk them all.
type routeMux struct {
	*http.ServeMux
	patterns []string
}

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, h)
	m.patterns = append(m.patterns, pattern)
}

func (m *routeMux) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(f))
}

// Defaults of the http section.
const (
	defaultBodyTimeout    = 30 * time.Second
	defaultMaxConnections = 4096
)

// probePaths answer every Host and need no authentication.
var probePaths = []string{"/healthz", "/readyz"}

// routes is the server's handler: register's routes behind handler's guards.
func (g *gateway) routes() http.Handler { return g.handler(g.register()) }

// register registers every route: the chat page and API (the web channel), the admin API,
// /metrics, the probes and the platforms' endpoints.
func (g *gateway) register() *routeMux {
	mux := &routeMux{ServeMux: http.NewServeMux()}
	chat := g.web.Handler()
	mux.Handle("/", chat)
	mux.Handle("/api/chat", chat)
	mux.Handle("/api/chat/", chat)
	mux.patterns = append(mux.patterns, g.web.Routes()...) // served by the three mounts above
	g.adminAPI(mux)
	mux.Handle("GET /metrics", g.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("GET "+mcp.CallbackPath, g.oauthCallback()) // open: its single-use state authenticates it
	for path, h := range g.extra {
		mux.Handle(path, h)
	}
	return mux
}

// platformPaths are the paths of the platforms' endpoints (/slack/events): they check their
// own signatures, so they are open to every Host and need no token.
func (g *gateway) platformPaths() []string {
	var out []string
	for pattern := range g.extra {
		_, path, ok := strings.Cut(pattern, " ")
		if !ok {
			path = pattern
		}
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

// handler puts the server's guards around mux, outermost first: every request body must arrive
// within http.body_timeout; the Host must be one the server answers (DNS rebinding); and the one
// authentication rule (web.Auth) admits the request, on every path but the probes and the
// platforms' endpoints.
func (g *gateway) handler(mux *routeMux) http.Handler {
	open := append(g.platformPaths(), probePaths...)
	// The OAuth callback needs no token (the browser comes from the authorization server; its
	// state is bound to one pending login, single use) but is still Host-guarded.
	auth := web.NewAuth(g.cfg.HTTP.AuthToken, map[string]string{"/metrics": g.cfg.HTTP.MetricsToken}, append(open, mcp.CallbackPath)...)
	hosts, err := web.NewHostPolicy(g.cfg.HTTP.Addr, g.cfg.HTTP.AllowedHosts)
	if err != nil { // validated with the config; a policy of the bind address alone is stricter
		hosts, _ = web.NewHostPolicy(g.cfg.HTTP.Addr, nil)
	}
	bodyTimeout := time.Duration(g.cfg.HTTP.BodyTimeout)
	if bodyTimeout <= 0 {
		bodyTimeout = defaultBodyTimeout
	}
	return web.BodyDeadline(hosts.Guard(auth.Guard(mux), open...), bodyTimeout)
}

// readiness checks storage, the channels and the MCP servers: ok is false when storage does not
// answer or a channel is not connected; detail names each part and its state.
func (g *gateway) readiness(ctx context.Context) (ok bool, detail map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	detail = map[string]string{}
	ok = true
	if g.draining.Load() {
		ok = false
		detail["shutdown"] = "draining: shutting down, send new work to another replica"
	}
	if err := g.store.Ping(ctx); err != nil {
		ok = false
		detail["storage"] = "unavailable: " + err.Error()
	} else {
		detail["storage"] = "ok (" + g.backend + ")"
	}
	for _, ch := range g.channels {
		if err := g.stopped.get(ch.Name()); err != nil {
			ok = false
			detail[ch.Name()] = stoppedDetail(err)
			continue
		}
		h, is := ch.(channels.Health)
		if !is {
			detail[ch.Name()] = "ok"
			continue
		}
		ready, d := h.Ready()
		if !ready {
			ok = false
			d = "not ready: " + d
		}
		detail[ch.Name()] = d
	}
	if g.mcp != nil {
		// MCP servers are reported but never fail readiness: a turn goes on without their tools.
		up, all := 0, 0
		for _, s := range g.mcp.Status() {
			all++
			if s.Connected {
				up++
			}
			detail["mcp:"+s.Name] = mcpStatusText(s)
		}
		detail["mcp"] = fmt.Sprintf("%d of %d servers connected", up, all)
	}
	return ok, detail
}

// readyz answers the probe: 200 {"status":"ready"} or 503 {"status":"not ready"}, nothing more.
// The reasons (storage errors, channel states, MCP servers' errors and stderr) are for the
// operator: the log, when they change, and GET /api/ready behind the token.
func (g *gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ok, detail := g.readiness(r.Context())
	g.readyLog.note(g, ok, detail)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"not ready"}` + "\n"))
		return
	}
	_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
}

// handleReady is GET /api/ready: /readyz's status code with every part's detail.
func (g *gateway) handleReady(w http.ResponseWriter, r *http.Request) {
	ok, detail := g.readiness(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(detail)
}

// readyLog logs why the gateway is not ready when the reasons change, and when it is ready
// again, so that probes every few seconds do not repeat the same line.
type readyLog struct {
	mu   sync.Mutex
	last string // the reasons last logged; "" when ready
}

func (l *readyLog) note(g *gateway, ok bool, detail map[string]string) {
	reasons := ""
	if !ok {
		keys := make([]string, 0, len(detail))
		for k := range detail {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s; ", k, detail[k])
		}
		reasons = strings.TrimSuffix(b.String(), "; ")
	}
	l.mu.Lock()
	changed := reasons != l.last
	l.last = reasons
	l.mu.Unlock()
	switch {
	case !changed:
	case ok:
		g.log.Info("readiness: ready")
	default:
		g.log.Warn("readiness: not ready (GET /api/ready shows the details)", "reasons", reasons)
	}
}
