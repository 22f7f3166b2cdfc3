package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownTurnsReadinessFalseFirst: on SIGTERM (serve's context ends) /readyz answers 503
// at once, naming the shutdown, while the gateway still serves for http.shutdown_delay (the
// web chat still answers), so a load balancer stops sending before anything is refused.
func TestShutdownTurnsReadinessFalseFirst(t *testing.T) {
	g := startGateway(t, map[string]string{}, "http: {shutdown_delay: 3s}\n")
	code, _ := readyz(t, g.base)
	if code != http.StatusOK {
		t.Fatalf("/readyz before the shutdown = %d, want 200", code)
	}
	stopped := make(chan struct{})
	go func() { g.stop(); close(stopped) }()
	body := waitReadyz(t, g.base, http.StatusServiceUnavailable, "shutdown", func(s string) bool { return strings.HasPrefix(s, "draining") })
	resp, err := http.Get(g.base + "/api/chat/history?session=still-serving")
	if err != nil {
		t.Fatalf("GET /api/chat/history during the shutdown delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/chat/history during the shutdown delay = %d, want 200 (readiness %v)", resp.StatusCode, body)
	}
	select {
	case <-stopped:
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop within 40s")
	}
}
