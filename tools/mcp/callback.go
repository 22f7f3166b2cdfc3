package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CallbackPath is where the gateway's HTTP server receives authorization redirects.
const CallbackPath = "/oauth/callback"

// CallbackHandler serves the redirect back from an authorization server: it completes the
// login its state belongs to with the code and iss of the query, and answers the browser with a
// short page (never the code or a token). A redirect carrying error= (access denied), a
// forged, replayed or expired state, or a failed exchange gets a 400 page saying to start the
// login again. done (may be nil) is told the outcome. The caller mounts it (GET only) behind
// the gateway's Host guard.
func CallbackHandler(l *Logins, done func(TokenKey, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		var key TokenKey
		var err error
		if e := q.Get("error"); e != "" {
			err = fmt.Errorf("mcp: the authorization server answered %q (%s)", capText(e, 64), capText(q.Get("error_description"), 200))
			key, _ = l.Complete(ctx, q.Get("state"), "", "") // ends the waiting login
		} else {
			key, err = l.Complete(ctx, q.Get("state"), q.Get("code"), q.Get("iss"))
		}
		if done != nil {
			done(key, err)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			msg := "This login link is unknown, already used or expired."
			if !errors.Is(err, ErrLoginState) {
				msg = "The login failed: " + err.Error()
			}
			fmt.Fprintf(w, "<!doctype html><title>echogate</title><p>%s</p><p>Start the login again.</p>\n", html.EscapeString(msg))
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>echogate</title><p>Logged in to MCP server %s. You can close this page.</p>\n", html.EscapeString(key.Server))
	})
}

// LoginLoopback logs in to server without a running gateway: it listens on 127.0.0.1 (a random
// port), uses http://127.0.0.1:PORT/oauth/callback as the redirect URL, hands the
// authorization URL to show (print it), and returns when the redirect came back and the grant
// is stored, or ctx ends. cfg.RedirectURL is set by it.
func LoginLoopback(ctx context.Context, cfg LoginConfig, server, user string, show func(url string)) (TokenKey, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return TokenKey{}, fmt.Errorf("mcp: listen for the login redirect: %w", err)
	}
	cfg.RedirectURL = fmt.Sprintf("http://%s%s", ln.Addr(), CallbackPath)
	l, err := NewLogins(cfg)
	if err != nil {
		ln.Close()
		return TokenKey{}, err
	}
	defer l.Close()
	type outcome struct {
		key TokenKey
		err error
	}
	result := make(chan outcome, 1)
	mux := http.NewServeMux()
	mux.Handle(CallbackPath, CallbackHandler(l, func(k TokenKey, err error) {
		if errors.Is(err, ErrLoginState) {
			return // a stray or replayed redirect: keep waiting for the real one
		}
		select {
		case result <- outcome{k, err}:
		default:
		}
	}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	defer func() {
		_ = hs.Close()
		<-served
	}()
	start, err := l.Begin(ctx, server, user)
	if err != nil {
		return TokenKey{}, err
	}
	show(start.URL)
	lctx, cancel := context.WithDeadline(ctx, start.Expires)
	defer cancel()
	select {
	case o := <-result:
		return o.key, o.err
	case <-lctx.Done():
		return start.Key, fmt.Errorf("mcp: %s: no login within %s: %w", server, LoginTTL, lctx.Err())
	}
}

// CompleteURL completes a login from the whole URL the browser was sent back to, pasted by
// the person: for a headless host, where the redirect to a loopback listener cannot load in
// the person's browser but its address bar holds the code. An error= redirect ends the login.
func (l *Logins) CompleteURL(ctx context.Context, redirected string) (TokenKey, error) {
	u, err := url.Parse(strings.TrimSpace(redirected))
	if err != nil || u.RawQuery == "" {
		return TokenKey{}, fmt.Errorf("mcp: %q is not the URL the browser was sent back to (it has ?code=…&state=…)", capText(redirected, 80))
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		key, _ := l.Complete(ctx, q.Get("state"), "", "")
		return key, fmt.Errorf("mcp: the authorization server answered %q (%s)", capText(e, 64), capText(q.Get("error_description"), 200))
	}
	return l.Complete(ctx, q.Get("state"), q.Get("code"), q.Get("iss"))
}
