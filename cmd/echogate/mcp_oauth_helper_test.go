package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// protectedMCP is a protected MCP server at /mcp with its authorization server on the same
// host (the minimum of tools/mcp's oauthserver_test.go): protected resource and authorization
// server metadata, dynamic registration, an authorization endpoint that approves at once, and
// a token endpoint checking PKCE. Its tool "whoami" answers with the bearer token it got.
type protectedMCP struct {
	*httptest.Server
	mu     sync.Mutex
	n      int
	codes  map[string]string // code → PKCE challenge
	access map[string]bool
	// revoked are the tokens posted to /revoke (RFC 7009).
	revoked []string
}

func newProtectedMCP(t *testing.T) *protectedMCP {
	t.Helper()
	o := &protectedMCP{codes: map[string]string{}, access: map[string]bool{}}
	mux := http.NewServeMux()
	o.Server = httptest.NewServer(mux)
	t.Cleanup(o.Close)
	srv := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Description: "the token this call carried"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			tok := ""
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				tok, _ = req.Extra.TokenInfo.Extra["token"].(string)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "token=" + tok}}}, nil, nil
		})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.access[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Extra: map[string]any{"token": tok}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	prm := o.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: o.URL + "/mcp", AuthorizationServers: []string{o.URL}}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		o.json(w, http.StatusOK, map[string]any{"issuer": o.URL, "authorization_endpoint": o.URL + "/authorize",
			"token_endpoint": o.URL + "/token", "registration_endpoint": o.URL + "/register", "revocation_endpoint": o.URL + "/revoke",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
			"authorization_response_iss_parameter_supported": true,
			"token_endpoint_auth_methods_supported":          []string{"none"}})
	})
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		o.mu.Lock()
		defer o.mu.Unlock()
		tok := r.PostForm.Get("token")
		o.revoked = append(o.revoked, tok)
		delete(o.access, tok)
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var meta map[string]any
		_ = json.NewDecoder(r.Body).Decode(&meta)
		o.json(w, http.StatusCreated, map[string]any{"client_id": "client-1", "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		o.mu.Lock()
		o.n++
		code := fmt.Sprintf("code-%d", o.n)
		o.codes[code] = q.Get("code_challenge")
		o.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		bq.Set("iss", o.URL)
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		o.mu.Lock()
		defer o.mu.Unlock()
		ch, ok := o.codes[r.PostForm.Get("code")]
		delete(o.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
			o.json(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		o.n++
		at := fmt.Sprintf("at-%d", o.n)
		o.access[at] = true
		o.json(w, http.StatusOK, map[string]any{"access_token": at, "refresh_token": fmt.Sprintf("rt-%d", o.n), "token_type": "Bearer", "expires_in": 3600})
	})
	return o
}

func (o *protectedMCP) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// tokens lists the access tokens issued so far.
func (o *protectedMCP) tokens() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for t := range o.access {
		out = append(out, t)
	}
	return out
}

// authRedirect plays the browser at the authorization server: it opens the URL and returns
// where it was sent back to (not followed).
func authRedirect(t *testing.T, authURL string) string {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatalf("GET authorization URL: %v", err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.Contains(loc, "/oauth/callback?") {
		t.Fatalf("authorization endpoint = %s to %q, want 302 to the gateway's /oauth/callback", resp.Status, loc)
	}
	return loc
}

// revokedTokens lists the tokens the gateway revoked at /revoke, in order.
func (o *protectedMCP) revokedTokens() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.revoked...)
}
