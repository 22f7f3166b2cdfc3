package main

import (
	"strings"
	"testing"
)

// TestSlackSocketLimitWarning: start-up warns when replicas.expected × slack.socket_connections
// may pass Slack's 10 Socket Mode connections per app, naming both keys, and not when it fits.
func TestSlackSocketLimitWarning(t *testing.T) {
	for name, tt := range map[string]struct {
		yaml string
		warn bool
	}{
		"4 replicas × 3":  {"replicas: {expected: 4}\nslack: {socket_connections: 3}\n", true},
		"11 replicas × 1": {"replicas: {expected: 11}\n", true},
		"3 replicas × 3":  {"replicas: {expected: 3}\nslack: {socket_connections: 3}\n", false},
		"the defaults":    {"", false},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newSlackPlatform(t)
			g := startGateway(t, p.vars, tt.yaml)
			waitReadyz(t, g.base, 200, "slack", func(s string) bool { return strings.HasPrefix(s, "connected") })
			got := len(scanLines(g.logs.String(), "Slack allows 10 Socket Mode connections per app")) > 0
			if got != tt.warn {
				t.Errorf("warned = %v, want %v; log:\n%s", got, tt.warn, g.logs.String())
			}
			if got && !strings.Contains(g.logs.String(), "replicas.expected") {
				t.Errorf("the warning does not name replicas.expected")
			}
		})
	}
}
