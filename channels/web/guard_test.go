package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostPolicyAllows(t *testing.T) {
	for _, tt := range []struct {
		bind    string
		allowed []string
		host    string
		want    bool
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", true},
		{"127.0.0.1:8080", nil, "localhost:8080", true},
		{"127.0.0.1:8080", nil, "LOCALHOST.", true},
		{"127.0.0.1:8080", nil, "app.localhost:8080", true},
		{"127.0.0.1:8080", nil, "[::1]:8080", true},
		{"127.0.0.1:8080", nil, "127.8.9.10", true},
		{"127.0.0.1:8080", nil, "rebind.attacker.example:8080", false},
		{"127.0.0.1:8080", nil, "localhost.attacker.example", false},
		{"127.0.0.1:8080", nil, "", false},
		{"127.0.0.1:8080", nil, "10.0.0.5:8080", false},
		{"10.0.0.5:8080", nil, "10.0.0.5:8080", true},
		{"10.0.0.5:8080", nil, "10.0.0.6:8080", false},
		{"0.0.0.0:8080", nil, "10.0.0.6:8080", true},
		{"[::]:8080", nil, "[2001:db8::1]:8080", true},
		{":8080", nil, "192.0.2.1", true},
		{":8080", nil, "gateway.internal", false},
		{"0.0.0.0:8080", []string{"chat.example.com"}, "chat.example.com", true},
		{"0.0.0.0:8080", []string{"chat.example.com"}, "CHAT.example.com:443", true},
		{"0.0.0.0:8080", []string{"chat.example.com"}, "evil-chat.example.com", false},
		{"0.0.0.0:8080", []string{"*.example.com"}, "a.b.example.com", true},
		{"0.0.0.0:8080", []string{"*.example.com"}, "example.com", false},
		{"0.0.0.0:8080", []string{"*.example.com"}, "badexample.com", false},
		{"gateway.lan:8080", nil, "gateway.lan:8080", true},
	} {
		p, err := NewHostPolicy(tt.bind, tt.allowed)
		if err != nil {
			t.Fatalf("NewHostPolicy(%q, %q) = %v", tt.bind, tt.allowed, err)
		}
		if got := p.Allows(tt.host); got != tt.want {
			t.Errorf("HostPolicy(%s, %q).Allows(%q) = %v, want %v", tt.bind, tt.allowed, tt.host, got, tt.want)
		}
	}
}

func TestNewHostPolicyRefusesBadNames(t *testing.T) {
	for _, bad := range []string{"https://chat.example.com", "chat.example.com/x", "*.", "a..b", "-a.com", "chat.example.com:443"} {
		if _, err := NewHostPolicy("127.0.0.1:8080", []string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("NewHostPolicy(allowed %q) = %v, want an error naming it", bad, err)
		}
	}
}

func TestHostGuard(t *testing.T) {
	p, _ := NewHostPolicy("127.0.0.1:8080", nil)
	h := p.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }), "/healthz")
	for _, tt := range []struct {
		path, host string
		want       int
	}{
		{"/api/chat", "localhost:8080", http.StatusTeapot},
		{"/api/chat", "rebind.example:8080", http.StatusMisdirectedRequest},
		{"/healthz", "rebind.example:8080", http.StatusTeapot},
		{"/healthz/x", "rebind.example:8080", http.StatusMisdirectedRequest},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://x"+tt.path, nil)
		r.Host = tt.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("GET %s Host %s = %d, want %d", tt.path, tt.host, w.Code, tt.want)
		}
	}
}

func TestLocalRequest(t *testing.T) {
	for _, tt := range []struct {
		remote, host string
		want         bool
	}{
		{"127.0.0.1:5000", "127.0.0.1:8080", true},
		{"127.0.0.1:5000", "localhost:8080", true},
		{"[::1]:5000", "[::1]:8080", true},
		{"127.0.0.1:5000", "rebind.example:8080", false},
		{"10.0.0.2:5000", "127.0.0.1:8080", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr, r.Host = tt.remote, tt.host
		if got := LocalRequest(r); got != tt.want {
			t.Errorf("LocalRequest(remote %s, Host %s) = %v, want %v", tt.remote, tt.host, got, tt.want)
		}
	}
}

// The console's identity (an approver when listed) is refused on requests that did not prove
// who sent them; other users are taken as given, as before.
func TestConsoleUserNeedsAuthentication(t *testing.T) {
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := ch.Handler()
	for _, tt := range []struct {
		remote, user string
		want         int
	}{
		{"192.0.2.7:5000", "console-admin", http.StatusForbidden},
		{"192.0.2.7:5000", "Console-Admin", http.StatusForbidden},
		{"127.0.0.1:5000", "console-admin", http.StatusNotFound}, // allowed; no such session
		{"192.0.2.7:5000", "alice", http.StatusNotFound},
		// The names the console's own decisions are recorded under are the console's too.
		{"192.0.2.7:5000", "console", http.StatusForbidden},
		{"192.0.2.7:5000", "console:ops", http.StatusForbidden},
		{"127.0.0.1:5000", "console:ops", http.StatusNotFound},
		{"192.0.2.7:5000", "consoleфан", http.StatusNotFound},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/api/chat/approve",
			strings.NewReader(`{"session":"s","user":"`+tt.user+`","call_id":"c","decision":"approve"}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = tt.remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("approve as %s from %s = %d %s, want %d", tt.user, tt.remote, w.Code, w.Body.String(), tt.want)
		}
	}
}
