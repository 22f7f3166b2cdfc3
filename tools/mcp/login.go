package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// LoginTTL is how long an authorization URL stays usable: its state expires after it.
const LoginTTL = 10 * time.Minute

// maxPendingLogins bounds the logins waiting for their redirect.
const maxPendingLogins = 64

// ErrLoginState is wrapped by Complete when the state is unknown (forged), already used, or
// expired.
var ErrLoginState = errors.New("mcp: login state unknown, already used or expired; start the login again")

// LoginConfig configures Logins.
type LoginConfig struct {
	// Servers are the configured servers; only those with auth: oauth can log in.
	Servers []ServerConfig
	// Tokens receives the grants.
	Tokens TokenStore
	// RedirectURL is where the authorization server sends the browser back with the code: the
	// gateway's /oauth/callback, or a loopback listener of `echogate mcp login`.
	RedirectURL string
	// HTTPClient makes the metadata, registration and token requests (default: bounded
	// timeouts).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnStored (may be nil) is called after a grant was stored, e.g. to reconnect the server.
	OnStored func(TokenKey)
}

// LoginStart is a login waiting for its redirect.
type LoginStart struct {
	Key TokenKey
	// URL is the authorization URL to open in a browser (or to send to the person).
	URL string
	// State is the random value the redirect carries back; Complete takes it.
	State   string
	Expires time.Time
}

// Logins runs OAuth authorization-code logins (PKCE, RFC 8707 resource, RFC 9207 iss,
// protected resource and authorization server metadata discovery, client registration by
// Client ID Metadata Document, a pre-registered client_id, or dynamic registration), on the
// Go SDK's auth.AuthorizationCodeHandler, split in two steps for a gateway: Begin returns the
// URL, Complete takes the redirect's code. Each pending login is one goroutine that ends
// when Complete finishes it, when it expires (LoginTTL), or at Close.
type Logins struct {
	cfg     LoginConfig
	servers map[string]ServerConfig
	base    context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	pending map[string]*loginFlow // by state
	// challenges holds the last refusal a session met (a 401, or a 403 asking for more
	// scope) per grant: the next Begin starts from it, so a step-up asks for that scope.
	challenges map[TokenKey]challenge
}

type challenge struct {
	status int
	header http.Header
}

type loginFlow struct {
	key     TokenKey
	expires time.Time
	cancel  context.CancelFunc
	result  chan *auth.AuthorizationResult // buffered 1: Complete never blocks on it
	done    chan struct{}                  // closed when the SDK's flow returned
	err     error                          // set before done is closed
	grant   *Grant                         // set before done is closed, on success
	iss     string                         // the redirect's issuer (RFC 9207), when it named one
}

// NewLogins validates cfg and returns Logins; call Close when done.
func NewLogins(cfg LoginConfig) (*Logins, error) {
	if cfg.Tokens == nil {
		return nil, fmt.Errorf("%w: OAuth logins need a token store", ErrConfig)
	}
	u, err := url.Parse(cfg.RedirectURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: OAuth redirect URL %q: want an absolute URL such as https://gateway.example.com/oauth/callback", ErrConfig, cfg.RedirectURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = oauthHTTPClient()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Logins{cfg: cfg, servers: map[string]ServerConfig{}, pending: map[string]*loginFlow{}, challenges: map[TokenKey]challenge{}}
	for _, sc := range cfg.Servers {
		if sc.oauth() {
			l.servers[sc.Name] = sc
		}
	}
	l.base, l.stop = context.WithCancel(context.Background())
	return l, nil
}

// Close ends every pending login and waits for their goroutines.
func (l *Logins) Close() {
	l.stop()
	l.wg.Wait()
}

// Servers lists the servers that log in with OAuth, sorted.
func (l *Logins) Servers() []string {
	out := make([]string, 0, len(l.servers))
	for n := range l.servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Begin starts a login for server (user "" for the server's own grant): it asks the server
// for authorization, discovers its authorization server, registers the client when needed
// and returns the URL to open. The state in it is random, bound to (server, user), single use
// and valid for LoginTTL.
func (l *Logins) Begin(ctx context.Context, server, user string) (LoginStart, error) {
	sc, ok := l.servers[server]
	if !ok {
		return LoginStart{}, fmt.Errorf("%w: no MCP server %q with auth: oauth (servers that log in: %v)", ErrConfig, server, l.Servers())
	}
	if user != "" && sc.Auth != AuthOAuthPerUser {
		return LoginStart{}, fmt.Errorf("%w: MCP server %q has one grant for everyone (auth: oauth); log in without a user, or set auth: oauth_per_user", ErrConfig, server)
	}
	l.mu.Lock()
	n := len(l.pending)
	l.mu.Unlock()
	if n >= maxPendingLogins {
		return LoginStart{}, fmt.Errorf("mcp: %d logins are waiting for their redirect; finish one or wait %s", n, LoginTTL)
	}
	fctx, cancel := context.WithTimeout(l.base, LoginTTL)
	f := &loginFlow{key: TokenKey{server, user}, cancel: cancel,
		result: make(chan *auth.AuthorizationResult, 1), done: make(chan struct{})}
	urls := make(chan string, 1)
	var granted []string
	if g, err := l.cfg.Tokens.Get(ctx, f.key); err == nil {
		granted = g.Scopes // a step-up keeps what was granted (SEP-2350)
	}
	h, err := l.handler(sc, f, urls, granted)
	if err != nil {
		cancel()
		return LoginStart{}, fmt.Errorf("mcp: %s: %w", server, err)
	}
	req, resp, err := l.challenge(ctx, sc, f.key)
	if err != nil {
		cancel()
		return LoginStart{}, err
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer cancel()
		f.err = h.Authorize(fctx, req, resp)
		if f.err == nil && f.grant == nil {
			f.err = errors.New("the authorization server returned no token")
		}
		close(f.done)
		l.mu.Lock()
		for st, p := range l.pending {
			if p == f {
				delete(l.pending, st)
			}
		}
		l.mu.Unlock()
	}()
	select {
	case u := <-urls:
		pu, _ := url.Parse(u)
		state := pu.Query().Get("state")
		f.expires = l.cfg.Now().Add(LoginTTL)
		l.mu.Lock()
		l.pending[state] = f
		l.mu.Unlock()
		return LoginStart{Key: f.key, URL: u, State: state, Expires: f.expires}, nil
	case <-f.done:
		return LoginStart{}, fmt.Errorf("mcp: %s: start login: %w", server, f.err)
	case <-ctx.Done():
		cancel()
		return LoginStart{}, ctx.Err()
	}
}

// Complete finishes the login that state belongs to with the redirect's code and iss (RFC
// 9207; empty when the redirect had none): the SDK checks the state and the issuer and trades
// the code (with the PKCE verifier) for a token, which is stored. A forged, replayed or
// expired state is refused with ErrLoginState.
func (l *Logins) Complete(ctx context.Context, state, code, iss string) (TokenKey, error) {
	l.mu.Lock()
	f := l.pending[state]
	delete(l.pending, state)
	l.mu.Unlock()
	if f == nil || state == "" {
		return TokenKey{}, ErrLoginState
	}
	if !l.cfg.Now().Before(f.expires) {
		f.cancel()
		return TokenKey{}, ErrLoginState
	}
	if code == "" {
		f.cancel()
		return f.key, fmt.Errorf("mcp: %s: the redirect carried no authorization code (was access denied?); start the login again", f.key.Server)
	}
	f.result <- &auth.AuthorizationResult{Code: code, State: state, Iss: iss}
	select {
	case <-f.done:
	case <-ctx.Done():
		f.cancel()
		return f.key, ctx.Err()
	}
	if f.err != nil {
		return f.key, fmt.Errorf("mcp: %s: login failed: %w", f.key.Server, f.err)
	}
	if err := l.cfg.Tokens.Put(ctx, f.key, f.grant); err != nil {
		return f.key, fmt.Errorf("mcp: %s: store the token: %w", f.key.Server, err)
	}
	if l.cfg.OnStored != nil {
		l.cfg.OnStored(f.key)
	}
	return f.key, nil
}

// handler builds the SDK's authorization-code handler of one login.
func (l *Logins) handler(sc ServerConfig, f *loginFlow, urls chan<- string, granted []string) (*auth.AuthorizationCodeHandler, error) {
	hc := &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{l.cfg.RedirectURL}, ClientName: "echogate",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		RedirectURL:         l.cfg.RedirectURL,
		RequestRefreshToken: true,
		Client:              l.cfg.HTTPClient,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			urls <- args.URL
			select {
			case r := <-f.result:
				f.iss = r.Iss // read by NewTokenSource, next on this goroutine
				return r, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("login not completed within %s: %w", LoginTTL, ctx.Err())
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			f.grant = &Grant{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.TokenType,
				Expiry: t.Expiry, ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.Endpoint.TokenURL,
				AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes, Issuer: f.iss}
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if sc.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: sc.ClientMetadataURL}
	}
	if sc.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: sc.ClientID}
		if sc.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: sc.ClientSecret}
		}
	}
	hc.ScopeFilter = func(discovered []string) []string {
		want := discovered
		if len(sc.Scopes) > 0 {
			want = sc.Scopes
		}
		return unionScopes(granted, want)
	}
	return auth.NewAuthorizationCodeHandler(hc)
}

// noteChallenge records the refusal a session of key met, for the next Begin.
func (l *Logins) noteChallenge(key TokenKey, status int, h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.challenges[key] = challenge{status: status, header: h.Clone()}
}

// challenge returns the refusal discovery starts from: the one a session recorded, else the
// server's answer to a request without a token. A server that answers that without refusing
// (it checks tokens on later requests only) gets a bare 401: discovery then goes by the
// well-known metadata URLs.
func (l *Logins) challenge(ctx context.Context, sc ServerConfig, key TokenKey) (*http.Request, *http.Response, error) {
	l.mu.Lock()
	c, ok := l.challenges[key]
	delete(l.challenges, key)
	l.mu.Unlock()
	if !ok {
		return l.probe(ctx, sc)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sc.URL, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: %s: %w", sc.Name, err)
	}
	return req, &http.Response{StatusCode: c.status, Header: c.header, Body: http.NoBody, Request: req}, nil
}

// probe sends an initialize request without a token: the server's 401 (or 403) and its
// WWW-Authenticate header start the discovery.
func (l *Logins) probe(ctx context.Context, sc ServerConfig) (*http.Request, *http.Response, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"echogate","version":"` + version() + `"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sc.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: %s: %w", sc.Name, err)
	}
	for k, v := range sc.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := l.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: %s: reach %s: %w", sc.Name, redactURL(sc.URL), err)
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp.Body.Close()
		resp = &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}
	}
	// The SDK reads the request's URL (the resource) and the response's headers; the body
	// was consumed.
	req.Body = nil
	return req, resp, nil
}

// unionScopes returns a's scopes followed by those of b not in a.
func unionScopes(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
