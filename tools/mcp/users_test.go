package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// loginAs runs Begin, the browser and Complete for user.
func loginAs(t *testing.T, m *Manager, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ls, err := m.Logins().Begin(ctx, "tracker", user)
	if err != nil {
		t.Fatalf("Begin(%q) = %v", user, err)
	}
	q := browse(t, ls.URL)
	if k, err := m.Logins().Complete(ctx, q.Get("state"), q.Get("code"), q.Get("iss")); err != nil || k.User != user {
		t.Fatalf("Complete for %q = %v, %v", user, k, err)
	}
}

func whoamiAs(t *testing.T, reg *tools.Registry, user string) tools.Result {
	t.Helper()
	tool, ok := reg.Get("tracker__whoami")
	if !ok {
		t.Fatalf("no tracker__whoami; have %v", names(reg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ctx = tools.WithCaller(ctx, tools.Caller{UserID: user, Session: echogate.SessionKey("s-" + user)})
	res, err := tool.Call(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("whoami as %s: %v", user, err)
	}
	return res
}

func TestOAuthPerUserTokensNeverCrossUsers(t *testing.T) {
	o := newOAuthServer(t)
	store := sealedStore()
	var mu sync.Mutex
	var asked []Authorization
	cfg := fastConfig(ServerConfig{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuthPerUser, Safety: "safe"})
	cfg.ReconnectMax = time.Hour
	cfg.Tokens, cfg.OAuthRedirectURL, cfg.Now = store, testRedirect, o.clock.Now
	cfg.Authorize = func(_ context.Context, a Authorization) {
		mu.Lock()
		asked = append(asked, a)
		mu.Unlock()
	}
	m, reg := start(t, cfg)

	// The catalogue comes from the operator's grant.
	waitFor(t, m, "needs the operator's login", needsLogin(m))
	loginAs(t, m, "")
	waitFor(t, m, "tracker__whoami", has(reg, "tracker__whoami"))
	operator, _ := store.Get(context.Background(), TokenKey{Server: "tracker"})

	// Alice has no grant: the call says authorize first, and she is to be sent a link.
	res := whoamiAs(t, reg, "slack:UALICE")
	if !res.IsError || !strings.Contains(res.Content, "authorize") || strings.Contains(res.Content, operator.AccessToken) {
		t.Fatalf("whoami as Alice before her login = %+v, want authorize first, never the operator's token", res)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Caller.UserID != "slack:UALICE" || asked[0].Tool != "tracker__whoami" || asked[0].Server != "tracker" {
		t.Errorf("Authorize calls = %+v, want one for Alice's whoami", asked)
	}
	mu.Unlock()

	loginAs(t, m, "slack:UALICE")
	loginAs(t, m, "slack:UBOB")
	alice, _ := store.Get(context.Background(), TokenKey{Server: "tracker", User: "slack:UALICE"})
	bob, _ := store.Get(context.Background(), TokenKey{Server: "tracker", User: "slack:UBOB"})
	for i := 0; i < 2; i++ {
		if res := whoamiAs(t, reg, "slack:UALICE"); res.IsError || !strings.Contains(res.Content, "token="+alice.AccessToken+"\n") {
			t.Errorf("whoami as Alice = %+v, want her token %s", res, alice.AccessToken)
		}
		if res := whoamiAs(t, reg, "slack:UBOB"); res.IsError || !strings.Contains(res.Content, "token="+bob.AccessToken+"\n") {
			t.Errorf("whoami as Bob = %+v, want his token %s", res, bob.AccessToken)
		}
	}
	if res := whoamiAs(t, reg, "slack:UCAROL"); !res.IsError {
		t.Errorf("whoami as Carol = %+v, want authorize first", res)
	}

	// Alice logs out: her calls need her login again; Bob's go on.
	if err := m.Logout(context.Background(), "tracker", "slack:UALICE"); err != nil {
		t.Fatal(err)
	}
	if res := whoamiAs(t, reg, "slack:UALICE"); !res.IsError || !strings.Contains(res.Content, "authorize") {
		t.Errorf("whoami as Alice after logout = %+v, want authorize first", res)
	}
	if res := whoamiAs(t, reg, "slack:UBOB"); res.IsError {
		t.Errorf("whoami as Bob after Alice's logout = %+v, want his token", res)
	}
	if _, err := m.Logins().Begin(context.Background(), "nosuch", "slack:UALICE"); err == nil {
		t.Error("Begin of an unknown server = nil error")
	}
}

func TestOAuthPerServerRefusesAPerUserLogin(t *testing.T) {
	o := newOAuthServer(t)
	m, _ := oauthManager(t, o, sealedStore(), o.clock)
	if _, err := m.Logins().Begin(context.Background(), "tracker", "slack:UALICE"); err == nil || !strings.Contains(err.Error(), "oauth_per_user") {
		t.Errorf("Begin(tracker, Alice) on a per-server grant = %v, want a refusal naming oauth_per_user", err)
	}
}
