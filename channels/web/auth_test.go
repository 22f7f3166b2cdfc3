package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Finding 7: one rule admits a request, the same on every guarded path.
func TestAuthGuard(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	withToken := NewAuth("tok-1", map[string]string{"/metrics": "scrape-1"}, "/healthz")
	noToken := NewAuth("", map[string]string{"/metrics": "scrape-1"}, "/healthz")
	for _, tt := range []struct {
		name   string
		a      *Auth
		path   string
		remote string
		header []string
		want   int
	}{
		{"bearer", withToken, "/api/info", "192.0.2.7:1", []string{"Authorization", "Bearer tok-1"}, http.StatusTeapot},
		{"basic password", withToken, "/", "192.0.2.7:1", []string{"Authorization", "Basic eDp0b2stMQ=="}, http.StatusTeapot}, // x:tok-1
		{"no token sent", withToken, "/api/info", "127.0.0.1:1", nil, http.StatusUnauthorized},
		{"wrong token", withToken, "/api/info", "127.0.0.1:1", []string{"Authorization", "Bearer tok-2"}, http.StatusUnauthorized},
		{"prefix of the token", withToken, "/api/info", "127.0.0.1:1", []string{"Authorization", "Bearer tok-"}, http.StatusUnauthorized},
		{"open path", withToken, "/healthz", "192.0.2.7:1", nil, http.StatusTeapot},
		{"open is exact", withToken, "/healthz/x", "192.0.2.7:1", nil, http.StatusUnauthorized},
		{"metrics token on metrics", withToken, "/metrics", "192.0.2.7:1", []string{"Authorization", "Bearer scrape-1"}, http.StatusTeapot},
		{"auth token on metrics", withToken, "/metrics", "192.0.2.7:1", []string{"Authorization", "Bearer tok-1"}, http.StatusTeapot},
		{"metrics token elsewhere", withToken, "/api/info", "192.0.2.7:1", []string{"Authorization", "Bearer scrape-1"}, http.StatusUnauthorized},
		{"local, no token configured", noToken, "/api/info", "127.0.0.1:1", nil, http.StatusTeapot},
		{"remote, no token configured", noToken, "/api/info", "192.0.2.7:1", nil, http.StatusForbidden},
		{"forwarded, no token configured", noToken, "/api/info", "127.0.0.1:1", []string{"X-Forwarded-For", "192.0.2.7"}, http.StatusForbidden},
		{"Forwarded, no token configured", noToken, "/api/info", "127.0.0.1:1", []string{"Forwarded", "for=192.0.2.7"}, http.StatusForbidden},
		{"metrics token, no auth token", noToken, "/metrics", "192.0.2.7:1", []string{"Authorization", "Bearer scrape-1"}, http.StatusTeapot},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+tt.path, nil)
		r.RemoteAddr = tt.remote
		for i := 0; i+1 < len(tt.header); i += 2 {
			r.Header.Set(tt.header[i], tt.header[i+1])
		}
		w := httptest.NewRecorder()
		tt.a.Guard(next).ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s: GET %s = %d %s, want %d", tt.name, tt.path, w.Code, w.Body.String(), tt.want)
		}
		if w.Code != http.StatusTeapot && !strings.Contains(w.Body.String(), "http.auth_token") {
			t.Errorf("%s: refusal %q does not name http.auth_token", tt.name, w.Body.String())
		}
	}
}
