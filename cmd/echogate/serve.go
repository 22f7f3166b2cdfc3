package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/internal/names"
	"github.com/echogate/echogate/pipeline"
)

// gateway is a running `echogate serve`.
type gateway struct {
	*core
	web      *web.Channel
	channels []channels.Channel
	extra    map[string]http.Handler // platform HTTP endpoints (/slack/events)
	names    *names.Directory        // display names seen on inbound events (names_wiring.go)
}

func cmdServe(ctx context.Context, e env, cfg *Config, log *slog.Logger, args []string) int {
	prof, err := parseServeFlags(args, e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate serve:", err)
		return 2
	}
	defer func() {
		if err := prof.stop(); err != nil {
			fmt.Fprintln(e.stderr, "echogate serve:", err)
		}
	}()
	applyRuntime(cfg.Runtime, log)
	hardenProcess(log) // children cannot read our environment or memory (harden_linux.go)
	g, err := newGateway(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(e.stderr, "echogate serve:", err)
		return 1
	}
	defer g.Close()
	if err := g.serve(ctx); err != nil {
		fmt.Fprintln(e.stderr, "echogate serve:", err)
		return 1
	}
	return 0
}

func newGateway(ctx context.Context, cfg *Config, log *slog.Logger) (*gateway, error) {
	c, err := newCore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	g := &gateway{core: c, extra: map[string]http.Handler{}, names: names.New(0)}
	c.addMemTrim()
	c.addGCPace(os.Getenv)
	g.web, err = web.New(web.Config{Authenticated: consoleAuthenticated(cfg.HTTP.AuthToken)}, log)
	if err != nil {
		c.Close()
		return nil, err
	}
	g.channels = append(g.channels, g.web)
	if err := g.addPlatformChannels(); err != nil {
		c.Close()
		return nil, err
	}
	repliers := map[string]pipeline.Replier{}
	for _, ch := range g.channels {
		repliers[ch.Name()] = ch
	}
	if err := c.newPipeline(repliers); err != nil {
		c.Close()
		return nil, err
	}
	return g, nil
}

// serve runs everything until ctx ends, then shuts down in order: inbound channels stop, running
// turns drain (bounded by agent.drain_timeout), the HTTP server closes.
func (g *gateway) serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", g.cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (http.addr / ECHOGATE_HTTP_ADDR): %w", g.cfg.HTTP.Addr, err)
	}
	srv := newHTTPServer(g.routes(), time.Duration(g.cfg.HTTP.IdleTimeout), g.log)
	names := make([]string, 0, len(g.channels))
	for _, ch := range g.channels {
		names = append(names, ch.Name())
	}
	g.log.Info("echogate serving: open "+consoleURL(ln.Addr().String()), "addr", ln.Addr().String(), "store", g.backend, "model", g.cfg.Models.Default,
		"demo", g.cfg.demoMode(), "channels", strings.Join(names, ","), "version", version)

	stopBackground := g.startBackground(ctx)
	defer stopBackground()
	rctx, stopReload := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		g.watchReload(rctx) // SIGHUP: reload access and agents (reload.go)
	}()
	defer func() { stopReload(); rwg.Wait() }()
	// The replay of unfinished turns and the first new ones are offered the MCP tools.
	g.waitMCP(ctx)
	pctx, stopPipeline := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPipeline()
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		_ = g.pipeline.Run(pctx)
	}()

	// Channels deliver only once the pipeline accepts events: a Submit before Run is refused,
	// and a platform that does not redeliver (Discord, Socket Mode) would lose the event.
	select {
	case <-g.pipeline.Started():
	case <-ctx.Done():
	}
	chctx, stopChannels := context.WithCancel(ctx)
	defer stopChannels()
	var cwg sync.WaitGroup
	errc := make(chan error, len(g.channels)+1)
	for _, ch := range g.channels {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			if err := ch.Run(chctx, g.observeNames(g.pipeline.Submit)); err != nil && chctx.Err() == nil {
				errc <- fmt.Errorf("channel %s: %w", ch.Name(), err)
			}
		}()
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("http: %w", err)
		}
	}()

	var runErr error
	select {
	case <-ctx.Done():
		g.log.Info("shutting down: draining running turns")
	case runErr = <-errc:
		g.log.Error("shutting down after a permanent failure", "err", runErr)
	}
	stopChannels()
	cwg.Wait()
	stopPipeline()
	pwg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	g.log.Info("echogate stopped")
	return runErr
}

func (g *gateway) routes() http.Handler {
	mux := http.NewServeMux()
	protect := g.auth
	mux.Handle("/", protect(g.web.Handler()))
	mux.Handle("/api/", protect(g.adminAPI()))
	mux.Handle("PUT /api/budgets", protect(http.HandlerFunc(g.putBudgets)))
	mux.Handle("/api/chat", protect(g.web.Handler()))
	mux.Handle("/api/chat/", protect(g.web.Handler()))
	mux.Handle("GET /metrics", g.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	for path, h := range g.extra {
		mux.Handle(path, h)
	}
	hosts, err := web.NewHostPolicy(g.cfg.HTTP.Addr, g.cfg.HTTP.AllowedHosts)
	if err != nil { // validated with the config; a policy of the bind address alone is stricter
		hosts, _ = web.NewHostPolicy(g.cfg.HTTP.Addr, nil)
	}
	return hosts.Guard(mux, "/slack/events", "/healthz", "/readyz")
}

// readyz is 200 only when storage answers and every channel is connected.
func (g *gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	body := map[string]string{}
	ok := true
	if err := g.store.Ping(ctx); err != nil {
		ok = false
		body["storage"] = "unavailable: " + err.Error()
	} else {
		body["storage"] = "ok (" + g.backend + ")"
	}
	for _, ch := range g.channels {
		h, is := ch.(channels.Health)
		if !is {
			body[ch.Name()] = "ok"
			continue
		}
		ready, detail := h.Ready()
		if !ready {
			ok = false
			detail = "not ready: " + detail
		}
		body[ch.Name()] = detail
	}
	if g.mcp != nil {
		// MCP servers are reported but never fail readiness: a turn goes on without their tools.
		// Each server is listed as "mcp:<name>".
		up, all := 0, 0
		for _, s := range g.mcp.Status() {
			all++
			detail := fmt.Sprintf("ok (%d tools)", len(s.Tools))
			switch {
			case s.Connected:
				up++
			case s.Attempts == 0:
				detail = "connecting"
			default:
				detail = fmt.Sprintf("not connected: %s (%d attempts; tools unavailable until it reconnects)", s.LastError, s.Attempts)
			}
			body["mcp:"+s.Name] = detail
		}
		body["mcp"] = fmt.Sprintf("%d of %d servers connected", up, all)
	}
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// auth protects the console and admin API with http.auth_token (Bearer, or Basic with the token
// as password, so a browser can log in). Without a token (loopback only) it lets everything pass.
func (g *gateway) auth(next http.Handler) http.Handler {
	token := g.cfg.HTTP.AuthToken
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := ""
		if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			got = strings.TrimPrefix(h, "Bearer ")
		} else if _, pw, ok := r.BasicAuth(); ok {
			got = pw
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="echogate"`)
			http.Error(w, `{"error":"authentication required: send Authorization: Bearer <http.auth_token>"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// consoleURL is the address to open in a browser for a listener on addr: a wildcard bind is
// opened as localhost.
func consoleURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// Timeouts of serve's HTTP server. A keep-alive connection that carries no request for the
// idle timeout (http.idle_timeout) is closed: each one holds a goroutine and its read and
// write buffers (~20 KB), and a thousand clients that went quiet would otherwise keep theirs
// until they hang up. The default is longer than a chat page's gap between a turn's end and
// its next POST in an active conversation. A streaming response (SSE) is not idle: the
// timeout applies only between requests.
const (
	httpReadHeaderTimeout  = 10 * time.Second
	defaultHTTPIdleTimeout = 30 * time.Second
)

// newHTTPServer is serve's http.Server for h; idle 0 means defaultHTTPIdleTimeout.
func newHTTPServer(h http.Handler, idle time.Duration, log *slog.Logger) *http.Server {
	if idle <= 0 {
		idle = defaultHTTPIdleTimeout
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, IdleTimeout: idle,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}
