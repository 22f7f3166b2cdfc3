package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

// scenarioStrangerCannotDecide: in a conversation where the requester's call waits for approval,
// a stranger's "stop", "approve", "deny" and 🛑/❌ change nothing (U999's "stop" cancelled U123's
// call before); the requester's ✅ still runs it.
func scenarioStrangerCannotDecide(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	prompt := c.waitPrompt(t, "current_time")

	for _, word := range []string{"stop", "approve", "deny"} {
		p.say(t, c, p.stranger, word)
		// A stop that comes while the requester's turn is still finishing is refused at once.
		e.g.logs.waitMatch(t, "the stranger's "+word+" ignored", func(l string) bool {
			return containsAll(l, p.qualified(p.stranger), c.ch) &&
				(strings.Contains(l, "approval message ignored") || word == "stop" && strings.Contains(l, "stop refused"))
		})
	}
	// "!new" would forget the conversation and the requester's pause with it.
	p.say(t, c, p.stranger, "!new")
	if p.private != nil { // told privately where the platform can
		p.waitFor(t, "a private answer to the stranger's !new", func() bool {
			return slices.ContainsFunc(p.private(c, p.stranger), func(s string) bool { return strings.Contains(s, "can't be cleared now") })
		})
	} else {
		c.waitMsg(t, "can't be cleared now")
	}
	for _, emoji := range []string{echogate.ReactionStop, echogate.ReactionDeny} {
		p.react(t, c, prompt.ID, p.stranger, emoji)
	}
	e.g.logs.waitMatch(t, "two ignored stranger reactions", func(string) bool {
		return len(scanLines(e.g.logs.String(), "approval reaction ignored", p.qualified(p.stranger), c.ch)) >= 2
	})
	if n := len(c.find("pending tool call was not run")); n != 0 {
		t.Fatalf("a stranger stopped the requester's call:\n%s", c.transcript())
	}
	if res := e.model.toolResults(tag, "current_time"); len(res) != 0 {
		t.Fatalf("a stranger decided the requester's call: %v", res)
	}
	if !hasPending(t, e, c) {
		t.Fatalf("the pause is gone after the stranger's events")
	}

	p.react(t, c, prompt.ID, p.requester, echogate.ReactionApprove)
	c.waitMsg(t, afterToolText)
	if res := singleToolResult(t, e, tag, "current_time"); strings.Contains(res, "not approved") {
		t.Errorf("current_time result = %q, want the tool's output", res)
	}
}

// scenarioStrangerOwnTurn: a stranger's new message in that conversation is answered as the
// stranger's own turn, recorded under the stranger's id, and the requester's pause stays (any
// message from U999 superseded U123's call before, and was recorded as U123's).
func scenarioStrangerOwnTurn(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	prompt := c.waitPrompt(t, "current_time")

	p.say(t, c, p.stranger, "say hello "+tag)
	c.waitMsg(t, echoText, "say hello "+tag)
	if !hasPending(t, e, c) {
		t.Fatalf("the stranger's message removed the requester's pause:\n%s", c.transcript())
	}
	// The stranger's turn sees the requester's call as not run yet; nothing else.
	for id, res := range e.model.toolResults(tag, "current_time") {
		if !strings.HasPrefix(res, "(no result") {
			t.Fatalf("the stranger's message decided the requester's call %s: %q", id, res)
		}
	}
	var turns []echogate.TurnRecord
	getJSON(t, e.g.base+"/api/turns?limit=500", &turns)
	users := map[string]int{}
	for _, tr := range turns {
		if strings.Contains(string(tr.Session), c.ch) {
			users[tr.UserID]++
		}
	}
	if users[p.qualified(p.stranger)] != 1 || users[p.qualified(p.requester)] != 1 {
		t.Errorf("turns of the conversation by user = %v, want one of %s and one of %s", users, p.qualified(p.requester), p.qualified(p.stranger))
	}

	p.react(t, c, prompt.ID, p.requester, echogate.ReactionApprove)
	c.waitMsg(t, afterToolText)
	if res := singleToolResult(t, e, tag, "current_time"); strings.Contains(res, "not approved") {
		t.Errorf("current_time result = %q, want the tool's output", res)
	}
	assertOnce(t, c, "Approval needed")
}
