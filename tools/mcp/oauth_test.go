package mcp

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/mcptoken"
	"github.com/echogate/echogate/internal/secretbox"
	"github.com/echogate/echogate/tools"
)

// testClock is an injectable clock that tests move forward.
type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

const testRedirect = "http://127.0.0.1:9/oauth/callback"

// oauthManager runs a Manager with one auth: oauth server "tracker" in front of o.
func oauthManager(t *testing.T, o *oauthServer, store TokenStore, clock *testClock) (*Manager, *tools.Registry) {
	t.Helper()
	cfg := fastConfig(ServerConfig{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth, Safety: "safe"})
	// A server needing login waits for the login, not for the backoff.
	cfg.ReconnectMax = time.Hour
	cfg.Tokens, cfg.OAuthRedirectURL, cfg.Now = store, testRedirect, clock.Now
	return start(t, cfg)
}

func needsLogin(m *Manager) func() bool {
	return func() bool {
		st := m.Status()[0]
		return st.NeedsLogin && !st.Connected && strings.Contains(st.LastError, "echogate mcp login tracker")
	}
}

// login runs Begin, the browser and Complete, and returns the state used.
func login(t *testing.T, m *Manager) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ls, err := m.Logins().Begin(ctx, "tracker", "")
	if err != nil {
		t.Fatalf("Begin = %v, want nil", err)
	}
	q := browse(t, ls.URL)
	if q.Get("state") != ls.State {
		t.Fatalf("redirect state = %q, want %q", q.Get("state"), ls.State)
	}
	if k, err := m.Logins().Complete(ctx, q.Get("state"), q.Get("code"), q.Get("iss")); err != nil || k != (TokenKey{Server: "tracker"}) {
		t.Fatalf("Complete = %v, %v, want {tracker}, nil", k, err)
	}
	return ls.State
}

// sealedStore is a SealedTokenStore over an in-memory table, as replicas share one database.
func sealedStore() *SealedTokenStore {
	box, _ := secretbox.New(bytes.Repeat([]byte{9}, 32))
	return NewSealedTokenStore(&blobStore{m: map[[2]string]mcptoken.Record{}}, box)
}

func TestOAuthServerLoginCallRefreshRevoke(t *testing.T) {
	o := newOAuthServer(t)
	store := sealedStore()
	clock := o.clock
	m, reg := oauthManager(t, o, store, clock)

	// No grant: needs login, no tools offered.
	waitFor(t, m, "needs login before any login", needsLogin(m))
	if got := names(reg); len(got) != 0 {
		t.Fatalf("tools before login = %v, want none", got)
	}

	state := login(t, m)
	waitFor(t, m, "tracker__whoami after login", has(reg, "tracker__whoami"))
	if st := m.Status()[0]; !st.Connected || st.NeedsLogin || st.LastError != "" {
		t.Errorf("status after login = %+v, want connected, no login needed, no error", st)
	}
	g, err := store.Get(context.Background(), TokenKey{Server: "tracker"})
	if err != nil || g.AccessToken == "" || g.RefreshToken == "" || g.ClientID == "" || g.TokenURL != o.URL+"/token" {
		t.Fatalf("stored grant = %+v, %v, want tokens, the registered client and the token endpoint", g, err)
	}
	if res := call(t, reg, "tracker__whoami", `{}`); res.IsError || !strings.Contains(res.Content, "token="+g.AccessToken) {
		t.Fatalf("whoami = %+v, want it to carry %s", res, g.AccessToken)
	}
	o.mu.Lock()
	for _, r := range o.resource {
		if r != o.URL+"/mcp" {
			t.Errorf("resource parameter = %q, want %q (RFC 8707)", r, o.URL+"/mcp")
		}
	}
	o.mu.Unlock()

	// A replayed or forged state is refused.
	for _, st := range []string{state, "forged-state", ""} {
		if _, err := m.Logins().Complete(context.Background(), st, "code-1", o.URL); !errors.Is(err, ErrLoginState) {
			t.Errorf("Complete(state %q) = %v, want ErrLoginState", st, err)
		}
	}

	// Near expiry the token is refreshed before use, and the new grant is stored.
	clock.Advance(time.Hour - 30*time.Second)
	res := call(t, reg, "tracker__whoami", `{}`)
	g2, _ := store.Get(context.Background(), TokenKey{Server: "tracker"})
	if g2.AccessToken == g.AccessToken || g2.RefreshToken == g.RefreshToken {
		t.Fatalf("grant after expiry = %+v, want a refreshed one (was %s)", g2, g.AccessToken)
	}
	if res.IsError || !strings.Contains(res.Content, "token="+g2.AccessToken) {
		t.Fatalf("whoami after refresh = %+v, want it to carry %s", res, g2.AccessToken)
	}

	// An access token refused before its time is refreshed once and the call goes through.
	o.revokeAccess()
	res = call(t, reg, "tracker__whoami", `{}`)
	g3, _ := store.Get(context.Background(), TokenKey{Server: "tracker"})
	if res.IsError || g3.AccessToken == g2.AccessToken || !strings.Contains(res.Content, "token="+g3.AccessToken) {
		t.Fatalf("whoami after the access token was refused = %+v (grant %s, was %s), want it refreshed and carried", res, g3.AccessToken, g2.AccessToken)
	}

	// A revoked grant: the call fails, the server needs login, its tools are withheld.
	o.revokeAll()
	tool, _ := reg.Get("tracker__whoami")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if res, err := tool.Call(ctx, []byte(`{}`)); err == nil && !res.IsError {
		t.Errorf("whoami with a revoked token = %+v, want an error", res)
	}
	waitFor(t, m, "needs login after revocation", needsLogin(m))
	waitFor(t, m, "tools withheld after revocation", lacks(reg, "tracker__whoami"))

	// A new login brings the tools back.
	login(t, m)
	waitFor(t, m, "tracker__whoami after the second login", has(reg, "tracker__whoami"))

	// Logout forgets the grant: needs login again, tools withheld.
	if err := m.Logout(context.Background(), "tracker", ""); err != nil {
		t.Fatalf("Logout = %v", err)
	}
	waitFor(t, m, "needs login after logout", needsLogin(m))
	waitFor(t, m, "tools withheld after logout", lacks(reg, "tracker__whoami"))
	if _, err := store.Get(context.Background(), TokenKey{Server: "tracker"}); !errors.Is(err, ErrNoToken) {
		t.Errorf("grant after logout = %v, want ErrNoToken", err)
	}
	if err := m.Logout(context.Background(), "tracker", ""); !errors.Is(err, ErrNoToken) {
		t.Errorf("Logout twice = %v, want ErrNoToken", err)
	}
}

func TestOAuthScopeStepUp(t *testing.T) {
	o := newOAuthServer(t)
	m, reg := oauthManager(t, o, sealedStore(), o.clock)
	waitFor(t, m, "needs login", needsLogin(m))
	login(t, m)
	waitFor(t, m, "tracker__write", has(reg, "tracker__write"))

	// The server wants more scope for this tool: the call fails, the server needs login and
	// says why.
	if res := call(t, reg, "tracker__write", `{}`); !res.IsError {
		t.Fatalf("write with scope read = %+v, want an error", res)
	}
	waitFor(t, m, "needs login for more scope", func() bool {
		st := m.Status()[0]
		return st.NeedsLogin && strings.Contains(st.LastError, "more scope (read write)")
	})
	// The next login asks for what was granted plus what the server asked for.
	login(t, m)
	waitFor(t, m, "tracker__write after the step-up", has(reg, "tracker__write"))
	if res := call(t, reg, "tracker__write", `{}`); res.IsError || !strings.Contains(res.Content, "written") {
		t.Fatalf("write after the step-up = %+v, want written", res)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.scopes) != 2 || o.scopes[0] != "read" || !sameWords(o.scopes[1], "read write") {
		t.Errorf("scopes asked for = %q, want read, then read and write", o.scopes)
	}
}

func TestOAuthReplicasShareTheGrant(t *testing.T) {
	o := newOAuthServer(t)
	store := sealedStore()
	clock := o.clock
	a, regA := oauthManager(t, o, store, clock)
	cfg := fastConfig(ServerConfig{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth, Safety: "safe"})
	cfg.Tokens, cfg.OAuthRedirectURL, cfg.Now = store, testRedirect, clock.Now // B looks at the store every 50ms
	b, regB := start(t, cfg)
	waitFor(t, b, "replica B needs login", func() bool { return b.Status()[0].NeedsLogin })

	login(t, a)
	waitFor(t, a, "tools on replica A", has(regA, "tracker__whoami"))
	waitFor(t, b, "tools on replica B, from A's login", has(regB, "tracker__whoami"))
	first := call(t, regB, "tracker__whoami", `{}`).Content

	// A refreshes near expiry; B then reads A's new grant from the store instead of using the
	// refresh token A's refresh rotated away.
	clock.Advance(time.Hour - 30*time.Second)
	resA := call(t, regA, "tracker__whoami", `{}`)
	resB := call(t, regB, "tracker__whoami", `{}`)
	if resA.IsError || resB.IsError || resA.Content != resB.Content || resA.Content == first {
		t.Fatalf("after A's refresh: A = %+v, B = %+v, want both to carry the same new token (was %q)", resA, resB, first)
	}
}

func TestOAuthGrantSealedWithAnotherKeyNeedsLogin(t *testing.T) {
	o := newOAuthServer(t)
	db := &blobStore{m: map[[2]string]mcptoken.Record{}}
	oldBox, _ := secretbox.New(bytes.Repeat([]byte{1}, 32))
	if err := NewSealedTokenStore(db, oldBox).Put(context.Background(), TokenKey{Server: "tracker"}, &Grant{AccessToken: "x", TokenURL: o.URL + "/token"}); err != nil {
		t.Fatal(err)
	}
	newBox, _ := secretbox.New(bytes.Repeat([]byte{2}, 32))
	m, _ := oauthManager(t, o, NewSealedTokenStore(db, newBox), o.clock)
	waitFor(t, m, "needs login naming the key", func() bool {
		st := m.Status()[0]
		return st.NeedsLogin && strings.Contains(st.LastError, "ECHOGATE_SECRET_KEY")
	})
}

func TestOAuthLoginStateExpires(t *testing.T) {
	o := newOAuthServer(t)
	clock := &testClock{}
	l, err := NewLogins(LoginConfig{Servers: []ServerConfig{{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth}},
		Tokens: NewMemoryTokenStore(), RedirectURL: testRedirect, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	ls, err := l.Begin(ctx, "tracker", "")
	if err != nil {
		t.Fatalf("Begin = %v", err)
	}
	if ls.State == "" || len(ls.State) < 16 {
		t.Errorf("state = %q, want a long random value", ls.State)
	}
	q := browse(t, ls.URL)
	clock.Advance(LoginTTL + time.Second)
	if _, err := l.Complete(ctx, q.Get("state"), q.Get("code"), q.Get("iss")); !errors.Is(err, ErrLoginState) {
		t.Errorf("Complete after %s = %v, want ErrLoginState", LoginTTL, err)
	}
	if _, err := l.Begin(ctx, "nosuch", ""); err == nil || !strings.Contains(err.Error(), "tracker") {
		t.Errorf("Begin(nosuch) = %v, want an error listing the servers that log in", err)
	}
}

func TestOAuthWrongIssuerRefused(t *testing.T) {
	o := newOAuthServer(t)
	store := NewMemoryTokenStore()
	l, err := NewLogins(LoginConfig{Servers: []ServerConfig{{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth}},
		Tokens: store, RedirectURL: testRedirect})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	ls, err := l.Begin(ctx, "tracker", "")
	if err != nil {
		t.Fatalf("Begin = %v", err)
	}
	q := browse(t, ls.URL)
	if _, err := l.Complete(ctx, q.Get("state"), q.Get("code"), "https://evil.example"); err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Errorf("Complete with a foreign iss = %v, want an issuer mismatch", err)
	}
	if _, err := store.Get(ctx, TokenKey{Server: "tracker"}); !errors.Is(err, ErrNoToken) {
		t.Errorf("grant after a refused login = %v, want ErrNoToken", err)
	}
}

// sameWords reports whether a and b hold the same space-separated words in any order.
func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestLogoutRevokesAtTheAuthorizationServer: logout posts the grant's refresh and access tokens
// to the revocation endpoint the authorization server's metadata lists (RFC 7009), so they stop
// working there too; without one, logout only forgets the grant.
func TestLogoutRevokesAtTheAuthorizationServer(t *testing.T) {
	for name, noRevocation := range map[string]bool{"with a revocation endpoint": false, "without one": true} {
		t.Run(name, func(t *testing.T) {
			o := newOAuthServer(t)
			o.noRevocation = noRevocation
			store := sealedStore()
			m, reg := oauthManager(t, o, store, o.clock)
			waitFor(t, m, "needs login", needsLogin(m))
			login(t, m)
			waitFor(t, m, "tracker__whoami", has(reg, "tracker__whoami"))
			g, err := store.Get(context.Background(), TokenKey{Server: "tracker"})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Logout(context.Background(), "tracker", ""); err != nil {
				t.Fatalf("Logout = %v", err)
			}
			o.mu.Lock()
			revoked := strings.Join(o.revoked, ",")
			_, liveRefresh := o.refresh[g.RefreshToken]
			_, liveAccess := o.access[g.AccessToken]
			o.mu.Unlock()
			want := g.RefreshToken + "," + g.AccessToken
			if noRevocation {
				want = ""
			}
			if revoked != want {
				t.Errorf("tokens revoked at the authorization server = %q, want %q", revoked, want)
			}
			if !noRevocation && (liveRefresh || liveAccess) {
				t.Errorf("after logout the refresh token live = %v, access token live = %v, want both revoked", liveRefresh, liveAccess)
			}
			if _, err := store.Get(context.Background(), TokenKey{Server: "tracker"}); !errors.Is(err, ErrNoToken) {
				t.Errorf("grant after logout = %v, want ErrNoToken", err)
			}
		})
	}
}
