package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// runSession connects, registers the tools and serves the session until it ends or ctx ends.
// established reports whether the session got as far as listing its tools.
func (s *server) runSession(ctx context.Context) (established bool, err error) {
	cctx, cancel := withTimeout(ctx, s.m.cfg.ConnectTimeout)
	defer cancel()
	cs, proc, closeIdle, err := s.connect(cctx)
	if closeIdle != nil {
		defer closeIdle()
	}
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.session = cs
	s.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	// end closes the session and waits for it (and a stdio process) to finish.
	end := func(cause error) error {
		s.mu.Lock()
		if s.session == cs {
			s.session = nil
		}
		s.mu.Unlock()
		closeErr := cs.Close()
		<-done
		if proc != nil {
			if closeErr == nil || !strings.Contains(closeErr.Error(), "unresponsive") {
				if d := proc.exitDetail(); d != "" {
					cause = fmt.Errorf("%w (%s)", cause, d)
				}
			}
			proc.cleanup()
		}
		return cause
	}

	// The first listing marks the server connected together with its tools (see apply).
	if err := s.refresh(cctx, cs); err != nil {
		return false, end(fmt.Errorf("mcp: %s: list tools: %w", s.cfg.Name, err))
	}
	cancel()
	s.mu.Lock()
	n := len(s.registered)
	s.mu.Unlock()
	s.log.Info("mcp: server connected", "transport", s.cfg.Transport(), "tools", n)

	var tick <-chan time.Time
	if s.m.cfg.PingInterval > 0 {
		t := time.NewTicker(s.m.cfg.PingInterval)
		defer t.Stop()
		tick = t.C
	}
	pingFails := 0
	for {
		select {
		case <-ctx.Done():
			return true, end(ctx.Err())
		case werr := <-done:
			done <- werr // end reads it again
			if werr == nil {
				werr = errors.New("closed by the server")
			}
			return true, end(fmt.Errorf("mcp: %s: session ended: %w", s.cfg.Name, werr))
		case <-s.broken:
			return true, end(fmt.Errorf("mcp: %s: connection lost during a tool call", s.cfg.Name))
		case <-s.relist:
			if err := s.relistTools(ctx, cs); err != nil {
				return true, end(err)
			}
		case <-tick:
			if err := s.ping(ctx, cs, &pingFails); err != nil {
				return true, end(err)
			}
		}
	}
}

// connect opens a session with the server over its transport. proc is the stdio server's
// process (nil over HTTP); closeIdle, when not nil, releases the HTTP transport's connections
// and is for the caller to run when the session is over, also after an error.
func (s *server) connect(ctx context.Context) (cs *sdk.ClientSession, proc *stdioProcess, closeIdle func(), err error) {
	client := s.newClient(func(context.Context, *sdk.ToolListChangedRequest) { s.requestRelist() })
	var transport sdk.Transport
	if s.cfg.URL != "" {
		ht, hc := newHTTPTransport(s.cfg, s.m.cfg.ConnectTimeout)
		closeIdle = hc.CloseIdleConnections
		if s.cfg.oauth() {
			a, err := s.oauth(ctx)
			if err != nil {
				return nil, nil, closeIdle, err
			}
			ht.OAuthHandler = a
		}
		transport = ht
	} else {
		transport, proc = newStdioTransport(s.cfg, func(line string) {
			s.log.Debug("mcp: server stderr", "line", line)
		})
	}
	// Drain stale signals of an earlier session.
	select {
	case <-s.relist:
	default:
	}
	select {
	case <-s.broken:
	default:
	}

	cs, err = client.Connect(ctx, transport, nil)
	if err == nil {
		return cs, proc, closeIdle, nil
	}
	if proc != nil {
		if proc.cmd.Process != nil && proc.cmd.ProcessState == nil {
			_ = proc.cmd.Process.Kill()
			_ = proc.cmd.Wait()
		}
		proc.cleanup()
		if d := proc.exitDetail(); d != "" {
			return nil, nil, closeIdle, fmt.Errorf("mcp: %s: connect: %w (%s)", s.cfg.Name, err, d)
		}
	}
	return nil, nil, closeIdle, fmt.Errorf("mcp: %s: connect to %s: %w", s.cfg.Name, s.target(), err)
}

// newClient builds the SDK client of a session: no roots or sampling; elicitation when an
// Elicitor is configured.
func (s *server) newClient(onListChanged func(context.Context, *sdk.ToolListChangedRequest)) *sdk.Client {
	opts := &sdk.ClientOptions{
		Logger:                 s.log,
		Capabilities:           &sdk.ClientCapabilities{},
		ToolListChangedHandler: onListChanged,
	}
	if s.m.cfg.Elicit != nil {
		opts.Capabilities.Elicitation = &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}
		opts.ElicitationHandler = s.elicit
	}
	return sdk.NewClient(&sdk.Implementation{Name: "echogate", Version: version()}, opts)
}

// oauth returns the session's OAuth handler after checking a grant is stored: without one the
// attempt ends at once, needing login, without asking the server.
func (s *server) oauth(ctx context.Context) (*tokenAuth, error) {
	key := TokenKey{Server: s.cfg.Name}
	if _, err := s.m.cfg.Tokens.Get(ctx, key); err != nil {
		switch {
		case errors.Is(err, ErrNoToken):
			s.loginLost("no grant stored yet")
			return nil, fmt.Errorf("mcp: %s: %w", s.cfg.Name, ErrNeedsLogin)
		case errors.Is(err, ErrBadGrant):
			s.loginLost("the stored grant cannot be opened (was ECHOGATE_SECRET_KEY changed?)")
			return nil, fmt.Errorf("mcp: %s: %w: %w", s.cfg.Name, ErrNeedsLogin, err)
		}
		return nil, fmt.Errorf("mcp: %s: read the OAuth grant: %w", s.cfg.Name, err)
	}
	a := &tokenAuth{key: key, store: s.m.cfg.Tokens, client: s.m.cfg.OAuthHTTPClient, now: s.m.cfg.Now, lost: s.loginLost}
	if l := s.m.logins; l != nil {
		a.note = func(status int, h http.Header) { l.noteChallenge(key, status, h) }
	}
	return a, nil
}

// relistTools lists the tools again after the server said they changed. A failure keeps the
// previous list and is shown as the server's last error; the error returned (the session's
// end) is for a closed connection or ctx ending.
func (s *server) relistTools(ctx context.Context, cs *sdk.ClientSession) error {
	rctx, rcancel := withTimeout(ctx, s.m.cfg.ConnectTimeout)
	err := s.refresh(rctx, cs)
	rcancel()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, sdk.ErrConnectionClosed):
		return fmt.Errorf("mcp: %s: list tools: %w", s.cfg.Name, err)
	}
	msg := s.scrub(err.Error())
	s.log.Warn("mcp: re-listing tools failed; keeping the previous list", "err", msg)
	s.mu.Lock()
	s.lastErr = "list tools: " + msg
	s.mu.Unlock()
	s.m.notify()
	return nil
}

// ping checks the session is alive. One slow answer is tolerated (fails counts them); a
// second failure in a row, a closed connection or ctx ending returns the session's end.
func (s *server) ping(ctx context.Context, cs *sdk.ClientSession, fails *int) error {
	timeout := min(s.m.cfg.PingInterval, 10*time.Second)
	pctx, pcancel := context.WithTimeout(ctx, timeout)
	err := cs.Ping(pctx, nil)
	pcancel()
	if err == nil {
		*fails = 0
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	*fails++
	if *fails >= 2 || errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("mcp: %s: ping: %w", s.cfg.Name, err)
	}
	s.log.Warn("mcp: ping failed", "err", s.scrub(err.Error()))
	return nil
}
