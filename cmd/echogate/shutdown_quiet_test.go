package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestShutdownIsQuiet: stopping a gateway connected to Slack over Socket Mode (SIGTERM's
// context cancellation) logs no warning or error: closing the websocket on purpose is not a
// read error ("use of closed network connection").
func TestShutdownIsQuiet(t *testing.T) {
	model := newScriptedModel(t)
	p, _ := newSlackPlatform(t)
	vars := model.vars()
	for k, v := range p.vars {
		vars[k] = v
	}
	for round := 0; round < 3; round++ { // the read error races the shutdown: give it chances
		g := startGateway(t, vars, "")
		waitReadyz(t, g.base, http.StatusOK, "slack", func(s string) bool { return strings.Contains(s, "connected (socket mode)") })
		mark := len(g.logs.String())
		g.stop()
		for _, l := range strings.Split(g.logs.String()[mark:], "\n") {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
				t.Errorf("shutdown logged %q, want no warning", l)
			}
		}
	}
}
