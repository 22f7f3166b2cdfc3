package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrNeedsLogin is wrapped when a server with auth: oauth has no usable grant: none was
// stored yet, the server refused the token (revoked), refreshing it was refused, or the
// server asks for more scope. The server's tools are withheld until a login stores a grant.
var ErrNeedsLogin = errors.New("needs login")

// Auth modes of ServerConfig.Auth.
const (
	AuthNone  = ""
	AuthOAuth = "oauth"
	// AuthOAuthPerUser: each person authorizes the server with their own account and calls
	// carry their own token; the server's tools are listed with the operator's grant
	// (`echogate mcp login NAME`, user "").
	AuthOAuthPerUser = "oauth_per_user"
)

// refreshBefore is how long before its expiry an access token is refreshed.
const refreshBefore = time.Minute

// storeTimeout bounds one token-store access made where no context is given (oauth2's
// TokenSource has none).
const storeTimeout = 10 * time.Second

// tokenAuth is the OAuth handler of one session of a server with auth: oauth (the SDK's
// auth.OAuthHandler): it sends the stored grant's token, refreshes it before it expires and
// saves the refreshed grant (so replicas share it), and turns a refusal into "needs login"
// instead of starting a flow nobody could answer.
type tokenAuth struct {
	key    TokenKey
	store  TokenStore
	client *http.Client
	now    func() time.Time
	lost   func(reason string)             // the grant is unusable: the session ends, the server needs login
	note   func(status int, h http.Header) // records the refusal for the next login (may be nil)

	mu    sync.Mutex
	grant *Grant
}

func (a *tokenAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return a, nil }

// Token returns the access token to send, refreshing it first when it expires within
// refreshBefore.
func (a *tokenAuth) Token() (*oauth2.Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if a.grant == nil || a.expiring(a.grant) {
		// Another replica (or a login) may have stored a newer grant.
		g, err := a.store.Get(ctx, a.key)
		if errors.Is(err, ErrNoToken) || errors.Is(err, ErrBadGrant) {
			return nil, a.fail("no usable grant stored")
		}
		if err != nil {
			return nil, err
		}
		a.grant = g
	}
	if !a.expiring(a.grant) {
		return a.grant.token(), nil
	}
	expired := !a.now().Before(a.grant.Expiry)
	if a.grant.RefreshToken == "" {
		if expired {
			return nil, a.fail("the token expired and the server gave no refresh token")
		}
		return a.grant.token(), nil
	}
	g, err := a.refresh(ctx)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, a.fail("refreshing the token was refused: " + capText(re.Error(), 200))
		}
		if !expired {
			return a.grant.token(), nil // try again on the next request
		}
		return nil, fmt.Errorf("mcp: %s: refresh the token: %w", a.key.Server, err)
	}
	a.grant = g
	return g.token(), nil
}

func (a *tokenAuth) expiring(g *Grant) bool {
	return !g.Expiry.IsZero() && !a.now().Before(g.Expiry.Add(-refreshBefore))
}

// refresh trades the refresh token for a new access token and stores the new grant.
func (a *tokenAuth) refresh(ctx context.Context) (*Grant, error) {
	old := a.grant
	cctx := context.WithValue(ctx, oauth2.HTTPClient, a.client)
	tok, err := old.oauthConfig().TokenSource(cctx, &oauth2.Token{RefreshToken: old.RefreshToken}).Token()
	if err != nil {
		return nil, err
	}
	g := *old
	g.AccessToken, g.TokenType, g.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		g.RefreshToken = tok.RefreshToken
	}
	if err := a.store.Put(ctx, a.key, &g); err != nil {
		return nil, fmt.Errorf("mcp: %s: store the refreshed token: %w", a.key.Server, err)
	}
	return &g, nil
}

// Authorize is called by the transport on a 401 or 403. A grant stored since (another
// replica refreshed it, a login replaced it) is retried once; otherwise the server needs a
// new login. A 403 that is not about scope is left to the caller, as the SDK documents.
func (a *tokenAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden {
		for _, c := range challenges {
			if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
				a.noteChallenge(resp)
				return a.failLocked(fmt.Sprintf("the server asks for more scope (%s)", c.Params["scope"]))
			}
		}
		return nil
	}
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	defer a.mu.Unlock()
	g, err := a.store.Get(ctx, a.key)
	if err == nil && g.AccessToken != sent {
		a.grant = g // another replica refreshed, or a login replaced it
		return nil
	}
	if err == nil && g.RefreshToken != "" && sent != "" {
		// The access token was refused before its time: a refresh may still be granted.
		a.grant = g
		if ng, rerr := a.refresh(ctx); rerr == nil {
			a.grant = ng
			return nil
		}
	}
	a.noteChallenge(resp)
	return a.fail("the server refused the token (revoked or expired)")
}

func (a *tokenAuth) noteChallenge(resp *http.Response) {
	if a.note != nil {
		a.note(resp.StatusCode, resp.Header)
	}
}

func (a *tokenAuth) failLocked(reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fail(reason)
}

// fail reports the grant unusable; a.mu is held.
func (a *tokenAuth) fail(reason string) error {
	a.grant = nil
	a.lost(reason)
	return fmt.Errorf("mcp: %s: %w: %s", a.key.Server, ErrNeedsLogin, reason)
}

// oauthHTTPClient is the client for metadata, registration and token requests: bounded, no
// redirects beyond the standard ten.
func oauthHTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: newBaseTransport(30 * time.Second)}
}

// Logins returns the OAuth logins of the servers with auth: oauth (nil when there are none):
// Begin/Complete for `echogate mcp login` and the /oauth/callback route. A completed login
// reconnects its server at once.
func (m *Manager) Logins() *Logins { return m.logins }

// loginStored wakes a server waiting for a login; until it is connected it no longer shows
// needs login.
func (m *Manager) loginStored(k TokenKey) {
	s := m.byName[k.Server]
	if s == nil {
		return
	}
	if k.User != "" {
		s.dropUser(k.User) // the next call opens a session with the new grant
		return
	}
	s.mu.Lock()
	changed := s.needsLogin
	if s.needsLogin {
		s.needsLogin, s.lastErr = false, "logged in; connecting"
	}
	s.mu.Unlock()
	if changed {
		m.notify()
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loginLost records that the OAuth grant is unusable and ends the session (its tools are then
// withheld until a login).
func (s *server) loginLost(reason string) {
	s.mu.Lock()
	s.lost = reason
	s.mu.Unlock()
	select {
	case s.broken <- struct{}{}:
	default:
	}
}

// takeLost returns and clears why the attempt that just ended lost its grant ("" if it did
// not), marking the server as needing login.
func (s *server) takeLost() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.lost
	s.lost = ""
	s.needsLogin = r != ""
	return r
}

// startLogins builds the Logins of the servers with auth: oauth, if any.
func (m *Manager) startLogins() error {
	cfg := m.cfg
	if cfg.Tokens == nil || cfg.OAuthRedirectURL == "" {
		return nil
	}
	l, err := NewLogins(LoginConfig{Servers: cfg.Servers, Tokens: cfg.Tokens, RedirectURL: cfg.OAuthRedirectURL,
		HTTPClient: cfg.OAuthHTTPClient, Now: cfg.Now, OnStored: m.loginStored})
	if err != nil {
		return err
	}
	if len(l.Servers()) > 0 {
		m.logins = l
	} else {
		l.Close()
	}
	return nil
}

// Logout revokes the grant of (server, user) at the authorization server when it can (RFC 7009,
// see revoke) and deletes it from the store (user "": the server's own, whose session then
// ends: its tools are withheld until a new login); a grant that is not there wraps ErrNoToken.
func (m *Manager) Logout(ctx context.Context, server, user string) error {
	s := m.byName[server]
	if s == nil || !s.cfg.oauth() {
		return fmt.Errorf("%w: no MCP server %q with auth: oauth", ErrConfig, server)
	}
	key := TokenKey{Server: server, User: user}
	m.revoke(ctx, key)
	if err := m.cfg.Tokens.Delete(ctx, key); err != nil {
		return err
	}
	if user == "" {
		s.loginLost("logged out")
	} else {
		s.dropUser(user)
	}
	return nil
}

// revokeTimeout bounds asking the authorization server to revoke a grant at logout.
const revokeTimeout = 10 * time.Second

// revoke asks the authorization server to revoke key's grant (RFC 7009) when its metadata lists
// a revocation endpoint. A failure is logged: the grant is forgotten here all the same.
func (m *Manager) revoke(ctx context.Context, key TokenKey) {
	RevokeGrant(ctx, m.cfg.Tokens, key, m.cfg.OAuthHTTPClient, m.log)
}

// RevokeGrant asks the authorization server to revoke key's stored grant (RFC 7009) when its
// metadata lists a revocation endpoint, and reports whether it did; a failure is logged (log
// may be nil). It leaves the grant in tokens: the caller deletes it. hc nil: a bounded client.
// `echogate mcp logout` beside a stopped gateway uses it; Manager.Logout otherwise.
func RevokeGrant(ctx context.Context, tokens TokenStore, key TokenKey, hc *http.Client, log *slog.Logger) bool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if hc == nil {
		hc = oauthHTTPClient()
	}
	g, err := tokens.Get(ctx, key)
	if err != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	found, err := revokeGrant(rctx, hc, g)
	switch {
	case err != nil:
		log.Warn("mcp: logout: the authorization server did not revoke the grant; it is forgotten here", "mcp_server", key.Server, "err", err)
		return false
	case found:
		log.Info("mcp: logout: grant revoked at the authorization server", "mcp_server", key.Server)
	}
	return found
}
