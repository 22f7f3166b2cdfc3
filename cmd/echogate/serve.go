package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate/channels"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/pipeline"
)

// gateway is a running `echogate serve`.
type gateway struct {
	*core
	web      *web.Channel
	channels []channels.Channel
	extra    map[string]http.Handler // platform HTTP endpoints (/slack/events)
	// operator is the one authentication rule (web.Auth): what the console counts as its
	// operator (routes.go guards every route with it).
	operator *web.Auth
	readyLog readyLog
	// stopped holds the channels that ended with a permanent failure (channel name → error):
	// the rest of the gateway keeps serving and readiness names them (channel_failure.go).
	stopped stoppedChannels
	// draining is set when shutdown begins: readiness answers 503 from then on, first of all.
	draining atomic.Bool
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
	if err := checkConfigFile(cfg.source.path); err != nil { // config_trust.go
		var foreign *foreignOwnerError
		if !errors.As(err, &foreign) {
			fmt.Fprintln(e.stderr, "echogate serve:", err)
			return 1
		}
		log.Warn("configuration file owned by another user: serving it, but reloads of it will be refused", "file", cfg.source.path, "err", err)
	}
	applyRuntime(cfg.Runtime, log)
	hardenProcess(log) // children cannot read our environment or memory (harden_linux.go)
	g, err := newGateway(ctx, cfg, log)
	if ce, ok := err.(*ConfigError); ok { // a check only the running gateway can make (its registered tools)
		fmt.Fprintln(e.stderr, "echogate:", cfg.source.origins.locate(ce))
		return 2
	}
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
	g := &gateway{core: c, extra: map[string]http.Handler{}}
	c.addMemTrim()
	c.addGCPace(os.Getenv)
	g.operator = web.NewAuth(cfg.HTTP.AuthToken, nil)
	g.web, err = web.New(web.Config{Authenticated: g.operator.Allows, Stored: g.webStored, StoredPrompt: storedPrompt(c.store)}, log) // webhistory_wiring.go
	if err != nil {
		c.Close()
		return nil, err
	}
	g.channels = append(g.channels, g.web)
	if err := g.addPlatformChannels(); err != nil {
		c.Close()
		return nil, err
	}
	c.schedClock = scheduleClockOf(ctx) // a test's (schedule_wiring.go)
	c.webhookTLS, _ = ctx.Value(webhookTLSKey{}).(*tls.Config)
	repliers := map[string]pipeline.Replier{}
	for _, ch := range g.channels {
		repliers[ch.Name()] = ch
	}
	if err := c.newPipeline(repliers); err != nil {
		c.Close()
		return nil, err
	}
	c.addScheduler() // schedule_wiring.go
	return g, nil
}

// serve runs everything until ctx ends, then shuts down in order: inbound channels stop, running
// turns drain (bounded by agent.drain_timeout), the HTTP server closes.
func (g *gateway) serve(ctx context.Context) error {
	ln, err := g.listen()
	if err != nil {
		return err
	}
	srv := newHTTPServer(g.routes(), time.Duration(g.cfg.HTTP.IdleTimeout), g.log)
	g.logServing(ln.Addr().String())

	stopBackground := g.startBackground(ctx)
	defer stopBackground()
	stopReload := g.startReload(ctx)
	defer stopReload()
	// The replay of unfinished turns and the first new ones are offered the MCP tools.
	g.waitMCP(ctx)
	stopPipeline := g.startPipeline(ctx)
	defer stopPipeline()

	// Channels deliver only once the pipeline accepts events: a Submit before Run is refused,
	// and a platform that does not redeliver (Discord, Socket Mode) would lose the event.
	select {
	case <-g.pipeline.Started():
	case <-ctx.Done():
	}
	stopChannels := g.startChannels(ctx)
	defer stopChannels()
	errc := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("http: %w", err)
		}
	}()

	var runErr error
	select {
	case <-ctx.Done():
		g.draining.Store(true)
		if d := time.Duration(g.cfg.HTTP.ShutdownDelay); d > 0 {
			g.log.Info("shutting down: readiness is false; still serving for http.shutdown_delay", "delay", d)
			<-time.After(d)
		}
		g.log.Info("shutting down: draining running turns")
	case runErr = <-errc:
		g.draining.Store(true)
		g.log.Error("shutting down: the HTTP server failed", "err", runErr)
	}
	stopChannels()
	stopPipeline()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	g.log.Info("echogate stopped")
	return runErr
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
