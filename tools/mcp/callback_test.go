package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoginLoopbackBesideAStoppedGateway(t *testing.T) {
	o := newOAuthServer(t)
	store := sealedStore()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var page string
	key, err := LoginLoopback(ctx, LoginConfig{Servers: []ServerConfig{{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth}}, Tokens: store},
		"tracker", "", func(authURL string) {
			// The person opens the link; the browser follows the redirect to the loopback listener.
			resp, err := http.Get(authURL)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			page = string(b)
		})
	if err != nil || key != (TokenKey{Server: "tracker"}) {
		t.Fatalf("LoginLoopback = %v, %v, want {tracker}, nil", key, err)
	}
	if !strings.Contains(page, "Logged in to MCP server tracker") || strings.Contains(page, "code-") {
		t.Errorf("callback page = %q, want a confirmation without the code", page)
	}
	if g, err := store.Get(ctx, key); err != nil || g.AccessToken == "" {
		t.Errorf("stored grant = %+v, %v, want one", g, err)
	}
}

func TestCallbackHandlerRefusesForgedReplayedAndDenied(t *testing.T) {
	o := newOAuthServer(t)
	l, err := NewLogins(LoginConfig{Servers: []ServerConfig{{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth}},
		Tokens: NewMemoryTokenStore(), RedirectURL: testRedirect})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var outcomes []error
	h := CallbackHandler(l, func(_ TokenKey, err error) { outcomes = append(outcomes, err) })
	get := func(query string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, CallbackPath+"?"+query, nil))
		return rec.Code, rec.Body.String()
	}
	ctx := context.Background()
	ls, err := l.Begin(ctx, "tracker", "")
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, ls.URL)
	if code, body := get("state=forged&code=" + q.Get("code")); code != http.StatusBadRequest || !strings.Contains(body, "unknown, already used or expired") {
		t.Errorf("forged state = %d %q, want 400 and start again", code, body)
	}
	if code, body := get(q.Encode()); code != http.StatusOK || !strings.Contains(body, "Logged in") {
		t.Errorf("real redirect = %d %q, want 200 logged in", code, body)
	}
	if code, _ := get(q.Encode()); code != http.StatusBadRequest {
		t.Errorf("replayed redirect = %d, want 400", code)
	}
	ls2, err := l.Begin(ctx, "tracker", "")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get("error=access_denied&error_description=%3Cb%3Eno%3C%2Fb%3E&state=" + ls2.State); code != http.StatusBadRequest ||
		!strings.Contains(body, "access_denied") || strings.Contains(body, "<b>") {
		t.Errorf("denied = %d %q, want 400 naming the error, escaped", code, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, CallbackPath, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", rec.Code)
	}
	if len(outcomes) != 4 || outcomes[1] != nil {
		t.Errorf("outcomes = %v, want 4 with the second a success", outcomes)
	}
}

func TestCompleteURLPastedFromAHeadlessBrowser(t *testing.T) {
	o := newOAuthServer(t)
	store := NewMemoryTokenStore()
	l, err := NewLogins(LoginConfig{Servers: []ServerConfig{{Name: "tracker", URL: o.URL + "/mcp", Auth: AuthOAuth}},
		Tokens: store, RedirectURL: testRedirect})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if _, err := l.CompleteURL(ctx, "not a url"); err == nil || !strings.Contains(err.Error(), "code=") {
		t.Errorf("CompleteURL(junk) = %v, want an error saying what to paste", err)
	}
	ls, err := l.Begin(ctx, "tracker", "")
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, ls.URL)
	if k, err := l.CompleteURL(ctx, "  "+testRedirect+"?"+q.Encode()+"\n"); err != nil || k.Server != "tracker" {
		t.Fatalf("CompleteURL = %v, %v, want tracker stored", k, err)
	}
	if _, err := store.Get(ctx, TokenKey{Server: "tracker"}); err != nil {
		t.Errorf("grant after CompleteURL = %v", err)
	}
}
