package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// openRoutes are the only paths served without authentication: the probes, and the Slack
// endpoint, which checks its own signature, and the OAuth callback of MCP logins, whose
// random single-use state is its authentication (it stays Host-guarded). A new route is
// guarded unless it is added here.
var openRoutes = []string{"/healthz", "/readyz", "/slack/events", "/oauth/callback"}

// walkRequests returns the requests that reach a registered pattern ("GET /api/info",
// "/api/chat", "/assets/"): its method, or GET and POST when it names none, on a path the
// pattern matches.
func walkRequests(pattern string) []*http.Request {
	methods := []string{"GET", "POST"}
	path := pattern
	if m, p, ok := strings.Cut(pattern, " "); ok {
		methods, path = []string{m}, p
	}
	path = strings.ReplaceAll(path, "{$}", "")
	for strings.Contains(path, "{") {
		i, j := strings.Index(path, "{"), strings.Index(path, "}")
		path = path[:i] + "x" + path[j+1:]
	}
	if strings.HasSuffix(path, "/") && path != "/" {
		path += "x"
	}
	var out []*http.Request
	for _, m := range methods {
		r := httptest.NewRequest(m, "http://127.0.0.1:8080"+path, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		out = append(out, r)
	}
	return out
}

// testGateway builds (does not run) a gateway from vars, with the Slack Events API on so that
// /slack/events is registered.
func testGateway(t *testing.T, vars map[string]string) *gateway {
	t.Helper()
	all := map[string]string{"ECHOGATE_DATA_DIR": t.TempDir(), "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
		"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "signing-secret", "SLACK_API_URL": "http://127.0.0.1:9/api/"}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := loadConfig("", func(k string) string { return all[k] })
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGateway(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// Finding 7: one rule guards every route. The test walks every pattern the server registers
// (its own, the admin API's and the web channel's), so a new route cannot be left open by
// forgetting a wrapper: only openRoutes answer without authentication.
func TestEveryRouteIsGuarded(t *testing.T) {
	const token = "walk-token"
	for name, tt := range map[string]struct {
		vars    map[string]string
		refuse  func(*http.Request) // makes the request unauthenticated
		allow   func(*http.Request) // makes it authenticated
		refused int
	}{
		"with a token": {map[string]string{"ECHOGATE_HTTP_AUTH_TOKEN": token, "ECHOGATE_HTTP_ALLOWED_HOSTS": "chat.example.test"},
			func(*http.Request) {}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, http.StatusUnauthorized},
		"loopback, no token": {nil,
			func(r *http.Request) { r.Header.Set("X-Forwarded-For", "203.0.113.7") }, func(*http.Request) {}, http.StatusForbidden},
	} {
		g := testGateway(t, tt.vars)
		mux := g.register()
		h := g.handler(mux)
		patterns := mux.patterns
		if len(patterns) < 30 {
			t.Fatalf("%s: %d registered patterns, want every route (the server's, the admin API's and the web channel's): %v", name, len(patterns), patterns)
		}
		open := map[string]bool{}
		for _, p := range patterns {
			for _, r := range walkRequests(p) {
				isOpen := slices.Contains(openRoutes, r.URL.Path)
				tt.refuse(r)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				guarded := w.Code == tt.refused && strings.Contains(w.Body.String(), "http.auth_token")
				switch {
				case isOpen && guarded:
					t.Errorf("%s: %s %s (pattern %q) = %d %q, want it open", name, r.Method, r.URL.Path, p, w.Code, w.Body.String())
				case !isOpen && !guarded:
					t.Errorf("%s: %s %s (pattern %q) unauthenticated = %d %q, want %d naming http.auth_token", name, r.Method, r.URL.Path, p, w.Code, oneLine(w.Body.String(), 200), tt.refused)
				}
				if isOpen {
					open[r.URL.Path] = true
					continue
				}
				r2 := walkRequests(p)[0]
				r2.Method = r.Method
				tt.allow(r2)
				w = httptest.NewRecorder()
				h.ServeHTTP(w, r2)
				if w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden && strings.Contains(w.Body.String(), "http.auth_token") {
					t.Errorf("%s: %s %s (pattern %q) authenticated = %d %q, want it served", name, r2.Method, r2.URL.Path, p, w.Code, oneLine(w.Body.String(), 200))
				}
			}
		}
		for _, p := range openRoutes {
			if !open[p] {
				t.Errorf("%s: open route %s is not registered (patterns %v)", name, p, patterns)
			}
		}
	}
}

// /readyz keeps its reasons for the log: written when they change, not on every probe.
func TestReadyzLogsReasonsWhenTheyChange(t *testing.T) {
	var buf syncBuffer
	g := &gateway{core: &core{log: slog.New(slog.NewTextHandler(&buf, nil))}}
	down := map[string]string{"storage": "unavailable: disk on fire", "web": "ok"}
	for _, step := range []struct {
		ok     bool
		detail map[string]string
	}{{true, nil}, {false, down}, {false, down}, {false, map[string]string{"storage": "ok", "web": "not ready: stopped"}}, {true, nil}, {true, nil}} {
		g.readyLog.note(g, step.ok, step.detail)
	}
	lines := scanLines(buf.String(), "readiness")
	want := []string{"disk on fire", "web: not ready: stopped", "readiness: ready"}
	if len(lines) != len(want) {
		t.Fatalf("readiness log lines = %q, want %d (one per change)", lines, len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("readiness log line %d = %q, want it to name %q", i, lines[i], w)
		}
	}
}
