package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate/tools"
)

// auth: oauth_per_user. The server's tools are listed by the supervised session, with the
// operator's grant (user ""); each person's calls go through a session of their own that
// carries their own token. Sessions are opened on a person's first call, kept while used, and
// bounded: past maxUserSessions the least recently used is closed, and one idle for
// userSessionIdle is closed when another is opened.

const (
	maxUserSessions = 64
	userSessionIdle = 10 * time.Minute
)

// Authorization tells that a person's call needs their login first.
type Authorization struct {
	Server string
	Tool   string // registry name of the call
	Caller tools.Caller
	Reason string // "no grant stored yet", "the server refused the token", …
}

type userSession struct {
	cs        *sdk.ClientSession
	closeIdle func()
	used      time.Time
}

// callAsUser calls the tool with the caller's own session.
func (t *remoteTool) callAsUser(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	s := t.srv
	defer s.closeRetired()
	caller, ok := tools.CallerFrom(ctx)
	if !ok {
		return tools.Errorf("tool %s acts for a person with their own account, and this call acts for nobody", t.spec.Name), nil
	}
	cs, err := s.userSession(ctx, caller.UserID)
	var reason string
	switch {
	case errors.Is(err, ErrNeedsLogin):
		reason = err.Error()
	case err != nil:
		return tools.Errorf("tool %s is unavailable: MCP server %s: %s; try again later", t.spec.Name, s.cfg.Name, capText(s.scrub(err.Error()), 300)), nil
	default:
		done := s.track(t.spec.Name, ctx)
		res, cerr := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
		done()
		switch {
		case cerr == nil && res != nil:
			return tools.Result{Content: renderResult(s.cfg.Name, res, s.maxOutput), IsError: res.IsError}, nil
		case cerr == nil:
			return tools.Result{}, tools.Failure(tools.Errorf("tool %s failed: MCP server %s sent an empty result", t.spec.Name, s.cfg.Name))
		case ctx.Err() != nil:
			return tools.Result{}, fmt.Errorf("mcp: %s: call %s: %w", s.cfg.Name, t.remote, ctx.Err())
		case errors.Is(cerr, ErrNeedsLogin):
			reason = cerr.Error()
		default:
			if errors.Is(cerr, sdk.ErrConnectionClosed) {
				s.dropUser(caller.UserID)
			}
			return t.callFailed(cs, cerr)
		}
	}
	if f := s.m.cfg.Authorize; f != nil {
		f(ctx, Authorization{Server: s.cfg.Name, Tool: t.spec.Name, Caller: caller, Reason: reason})
	}
	return tools.Errorf("tool %s needs you to authorize MCP server %s with your own account first (a private link is on its way); "+
		"ask again once you have", t.spec.Name, s.cfg.Name), nil
}

// userSession returns the person's live session, opening one with their stored grant. No
// usable grant wraps ErrNeedsLogin.
func (s *server) userSession(ctx context.Context, user string) (*sdk.ClientSession, error) {
	now := time.Now()
	s.mu.Lock()
	if us := s.users[user]; us != nil {
		us.used = now
		s.mu.Unlock()
		return us.cs, nil
	}
	s.mu.Unlock()

	key := TokenKey{Server: s.cfg.Name, User: user}
	if _, err := s.m.cfg.Tokens.Get(ctx, key); errors.Is(err, ErrNoToken) || errors.Is(err, ErrBadGrant) {
		return nil, fmt.Errorf("mcp: %s: %w: no usable grant of %s", s.cfg.Name, ErrNeedsLogin, user)
	} else if err != nil {
		return nil, err
	}
	ht, hc := newHTTPTransport(s.cfg, s.m.cfg.ConnectTimeout)
	ht.OAuthHandler = &tokenAuth{key: key, store: s.m.cfg.Tokens, client: s.m.cfg.OAuthHTTPClient, now: s.m.cfg.Now,
		lost: func(string) { s.dropUser(user) }}
	cctx, cancel := withTimeout(ctx, s.m.cfg.ConnectTimeout)
	defer cancel()
	cs, err := s.newClient(nil).Connect(cctx, ht, nil)
	if err != nil {
		hc.CloseIdleConnections()
		if errors.Is(err, ErrNeedsLogin) {
			return nil, err
		}
		return nil, fmt.Errorf("connect for %s: %w", user, err)
	}
	us := &userSession{cs: cs, closeIdle: hc.CloseIdleConnections, used: now}
	var stale []*userSession
	s.mu.Lock()
	if other := s.users[user]; other != nil { // a concurrent call of the same person won
		s.mu.Unlock()
		us.close()
		return other.cs, nil
	}
	stale = s.evictUsersLocked(now)
	s.users[user] = us
	s.mu.Unlock()
	for _, o := range stale {
		o.close()
	}
	return cs, nil
}

// evictUsersLocked removes idle sessions and, at the bound, the least recently used one;
// the caller closes them outside s.mu.
func (s *server) evictUsersLocked(now time.Time) []*userSession {
	var out []*userSession
	var lru string
	for u, us := range s.users {
		if now.Sub(us.used) > userSessionIdle {
			out = append(out, us)
			delete(s.users, u)
			continue
		}
		if lru == "" || us.used.Before(s.users[lru].used) {
			lru = u
		}
	}
	if len(s.users) >= maxUserSessions && lru != "" {
		out = append(out, s.users[lru])
		delete(s.users, lru)
	}
	return out
}

// dropUser retires the person's session (their grant changed or was refused): the next call
// opens a new one. It may run inside the session's own request, so the session is closed
// later, by closeRetired.
func (s *server) dropUser(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if us := s.users[user]; us != nil {
		s.retired = append(s.retired, us)
		delete(s.users, user)
	}
}

// closeRetired closes the sessions dropUser retired.
func (s *server) closeRetired() {
	s.mu.Lock()
	r := s.retired
	s.retired = nil
	s.mu.Unlock()
	for _, us := range r {
		us.close()
	}
}

// closeUsers closes every person's session (the server stops).
func (s *server) closeUsers() {
	s.mu.Lock()
	for u, us := range s.users {
		s.retired = append(s.retired, us)
		delete(s.users, u)
	}
	s.mu.Unlock()
	s.closeRetired()
}

func (us *userSession) close() {
	_ = us.cs.Close()
	us.closeIdle()
}
