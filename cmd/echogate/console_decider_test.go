package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/echogate/echogate/admin"
)

// Finding 11: a decision made in the console was recorded as the first listed approver of the
// session's platform, a real person who did nothing. It is recorded as the console (with the
// operator's name when the request gives one), the prompt says the console decided, and no
// request can make the console speak for a listed person.
func TestConsoleDecisionIsRecordedAsConsole(t *testing.T) {
	p, _ := newSlackPlatform(t)
	p.vars["ECHOGATE_APPROVERS"] = "slack:U0APPROVER"
	g, _ := approvalGateway(t, p, approvalConfig)
	tag := "[console-decider]"
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, tag+" what time is it")
	c.waitPrompt(t, "current_time")
	var pending []admin.Approval
	waitFor(t, "the pending approval with its posted prompt", func() bool {
		apiGet(t, g.base+"/api/approvals", "", &pending)
		return len(pending) == 1 && !pending[0].Prompt.IsZero()
	})
	pd := pending[0]
	req := func(user string) string {
		b, _ := json.Marshal(admin.DecideRequest{Session: string(pd.Session), CallID: pd.CallID, Decision: "approve", User: user})
		return string(b)
	}
	for _, user := range []string{"slack:U0APPROVER", "slack:console-admin", "ops lead"} {
		if status, out := adminPost(t, g.base+"/api/approvals/decide", "application/json", req(user)); status != http.StatusBadRequest {
			t.Errorf("deciding with user %q = %d %v, want 400: the console decides as itself", user, status, out)
		}
	}
	status, out := adminPost(t, g.base+"/api/approvals/decide", "application/json", req("ops.lead"))
	if status != http.StatusAccepted || out["actor"] != "console:ops.lead" {
		t.Fatalf("POST /api/approvals/decide = %d %v, want 202 as console:ops.lead", status, out)
	}
	prompt := c.waitMsg(t, "Approved once by the echogate console (ops.lead)")
	if strings.Contains(prompt.Text, "U0APPROVER") {
		t.Errorf("decided prompt = %q, want no listed approver named", prompt.Text)
	}
	c.waitMsg(t, afterToolText)
	g.logs.waitLine(t, "pause resolved", "by=slack:console:ops.lead")
	if logs := g.logs.String(); strings.Contains(logs, "by=slack:U0APPROVER") {
		t.Errorf("log records the decision as %q, want by=slack:console:ops.lead and never the listed approver:\n%s",
			scanLines(logs, "pause resolved"), logs)
	}
}
