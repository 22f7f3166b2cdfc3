package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

// TestE2ESlackRefusedAppTokenStopsOnlySlack: the fake Slack refuses the app token at a
// reconnect after a first connection. Only the Slack channel stops: /api/ready names it with
// the reason (and is 503: the gateway is not fully ready), while the process keeps serving the
// web chat and Discord.
func TestE2ESlackRefusedAppTokenStopsOnlySlack(t *testing.T) {
	model := newScriptedModel(t)
	p, srv := newSlackPlatform(t)
	d, _ := newDiscordPlatform(t)
	vars := model.vars()
	for k, v := range p.vars {
		vars[k] = v
	}
	for k, v := range d.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, "")
	waitReadyz(t, g.base, http.StatusOK, "slack", func(s string) bool { return strings.Contains(s, "connected (socket mode)") })
	waitReadyz(t, g.base, http.StatusOK, "discord", func(s string) bool { return strings.HasPrefix(s, "connected") })

	srv.Fail("apps.connections.open", slacktest.Failure{Error: "invalid_auth"})
	srv.DropConnections()
	body := waitReadyz(t, g.base, http.StatusServiceUnavailable, "slack", func(s string) bool {
		return strings.Contains(s, "permanent failure") && strings.Contains(s, "invalid_auth")
	})
	t.Logf("/api/ready slack = %q", body["slack"])
	if !strings.Contains(body["slack"], "SLACK_APP_TOKEN") {
		t.Errorf("/api/ready slack = %q, want the fix to name SLACK_APP_TOKEN", body["slack"])
	}
	if !strings.HasPrefix(body["discord"], "connected") {
		t.Errorf("/api/ready discord = %q, want it still connected", body["discord"])
	}
	if !strings.HasPrefix(body["storage"], "ok") {
		t.Errorf("/api/ready storage = %q, want ok", body["storage"])
	}
	if strings.Contains(g.logs.String(), "shutting down after a permanent failure") {
		t.Errorf("the gateway shut down after Slack's failure:\n%s", g.logs.String())
	}

	// The web chat still answers.
	evs := postChat(t, g.base, "after-slack-failure", "still there?")
	var done bool
	for _, e := range evs {
		if e.Event == "done" {
			done = true
		}
	}
	if !done {
		t.Errorf("POST /api/chat after Slack stopped: events %v, want a done event", evs)
	}
	// And Discord still answers.
	c := d.newConv(t, "[after-slack]")
	d.open(t, c, d.requester, "still there? [after-slack]")
	c.waitMsg(t, echoText+"still there? [after-slack]")
}
