package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// oauthServer is a protected MCP server at /mcp and its authorization server on the same
// host: protected resource metadata (RFC 9728), authorization server metadata (RFC 8414),
// dynamic registration, an authorization endpoint that redirects at once (the "browser"
// approves), and a token endpoint checking PKCE and the RFC 8707 resource. Its tool "whoami"
// answers with the bearer token it was called with.
type oauthServer struct {
	*httptest.Server
	t *testing.T
	// clock is the tests' clock: tokens expire an hour after its now (oauth2 turns expires_in
	// into an expiry by the real clock, so the answer makes up for the offset).
	clock *testClock

	mu       sync.Mutex
	n        int
	codes    map[string]codeGrant // code → what it was issued for
	access   map[string]string    // valid access tokens → their scope
	scopes   []string             // scope parameters seen at /authorize
	refresh  map[string]string    // valid refresh tokens → their scope
	resource []string             // resource parameters seen at /authorize and /token
	clients  []string             // client ids registered
	revoked  []string             // tokens posted to /revoke (RFC 7009)
	// noRevocation leaves revocation_endpoint out of the metadata.
	noRevocation bool
}

type codeGrant struct{ challenge, redirect, client, scope string }

func newOAuthServer(t *testing.T) *oauthServer {
	t.Helper()
	o := &oauthServer{t: t, clock: &testClock{}, codes: map[string]codeGrant{}, access: map[string]string{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	o.Server = httptest.NewServer(mux)
	t.Cleanup(o.Close)

	srv := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "write", Description: "needs the write scope"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "written"}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Description: "the token this call carried"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			tok := ""
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				tok, _ = req.Extra.TokenInfo.Extra["token"].(string)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "token=" + tok}}}, nil, nil
		})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		scope, ok := o.access[tok]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Scopes: strings.Fields(scope), Extra: map[string]any{"token": tok}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	// Calling "write" needs the write scope: without it, a 403 asks for it (step-up).
	stepUp := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"name":"write"`)) {
				if info := auth.TokenInfoFromContext(r.Context()); info == nil || !slices.Contains(info.Scopes, "write") {
					w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="read write", resource_metadata="`+o.URL+`/.well-known/oauth-protected-resource/mcp"`)
					http.Error(w, "insufficient scope", http.StatusForbidden)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: o.URL + "/.well-known/oauth-protected-resource/mcp"})(stepUp(mcpHandler)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: o.URL + "/mcp", AuthorizationServers: []string{o.URL}, ScopesSupported: []string{"read"}}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		revocation := o.URL + "/revoke"
		if o.noRevocation {
			revocation = ""
		}
		o.mu.Unlock()
		writeJSON(w, map[string]any{"issuer": o.URL, "authorization_endpoint": o.URL + "/authorize", "revocation_endpoint": revocation,
			"token_endpoint": o.URL + "/token", "registration_endpoint": o.URL + "/register",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
			"authorization_response_iss_parameter_supported": true,
			"token_endpoint_auth_methods_supported":          []string{"none"}})
	})
	mux.HandleFunc("/register", o.register)
	mux.HandleFunc("/authorize", o.authorize)
	mux.HandleFunc("/token", o.token)
	mux.HandleFunc("/revoke", o.revoke)
	return o
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (o *oauthServer) register(w http.ResponseWriter, r *http.Request) {
	var meta map[string]any
	_ = json.NewDecoder(r.Body).Decode(&meta)
	o.mu.Lock()
	o.n++
	id := fmt.Sprintf("client-%d", o.n)
	o.clients = append(o.clients, id)
	o.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, map[string]any{"client_id": id, "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
}

func (o *oauthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "want response_type=code and an S256 code challenge", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.n++
	code := fmt.Sprintf("code-%d", o.n)
	o.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), client: q.Get("client_id"), scope: q.Get("scope")}
	o.resource = append(o.resource, q.Get("resource"))
	o.scopes = append(o.scopes, q.Get("scope"))
	o.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	bq.Set("iss", o.URL)
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (o *oauthServer) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	o.mu.Lock()
	defer o.mu.Unlock()
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	var scope string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := o.codes[r.PostForm.Get("code")]
		delete(o.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.PostForm.Get("redirect_uri") != c.redirect {
			fail("invalid_grant")
			return
		}
		o.resource = append(o.resource, r.PostForm.Get("resource"))
		scope = c.scope
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		var ok bool
		if scope, ok = o.refresh[rt]; !ok {
			fail("invalid_grant")
			return
		}
		delete(o.refresh, rt) // rotated
	default:
		fail("unsupported_grant_type")
		return
	}
	o.n++
	at, rt := fmt.Sprintf("at-%d", o.n), fmt.Sprintf("rt-%d", o.n)
	o.access[at], o.refresh[rt] = scope, scope
	writeJSON(w, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "scope": scope,
		"expires_in": int(time.Until(o.clock.Now().Add(time.Hour)).Seconds())})
}

// revokeAccess invalidates the access tokens issued so far (refresh tokens stay valid).
func (o *oauthServer) revokeAccess() {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.access)
}

// revokeAll invalidates every token issued so far.
func (o *oauthServer) revokeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.access)
	clear(o.refresh)
}

// browse plays the browser: it opens the authorization URL and returns the query of the
// redirect back to the gateway (not followed).
func browse(t *testing.T, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatalf("GET authorization URL: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorization endpoint answered %s, want 302", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasSuffix(loc.Path, "/oauth/callback") {
		t.Fatalf("redirect to %q, want the gateway's /oauth/callback", resp.Header.Get("Location"))
	}
	return loc.Query()
}

// revoke is the RFC 7009 revocation endpoint: a public client names itself; the token stops
// working whatever its type.
func (o *oauthServer) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if r.Method != http.MethodPost || r.PostForm.Get("client_id") == "" || r.PostForm.Get("token") == "" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	tok := r.PostForm.Get("token")
	o.revoked = append(o.revoked, tok)
	delete(o.access, tok)
	delete(o.refresh, tok)
	w.WriteHeader(http.StatusOK)
}
