package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// approvalConfig makes current_time (a safe tool) need approval.
const approvalConfig = "tools:\n  current_time: {approval: ask}\n"

// platforms builds the Slack and Discord fakes; each approval test runs through both real
// adapters.
var platforms = []struct {
	name string
	make func(t *testing.T) *platform
}{
	{"slack", func(t *testing.T) *platform { p, _ := newSlackPlatform(t); return p }},
	{"discord", func(t *testing.T) *platform { p, _ := newDiscordPlatform(t); return p }},
}

// approvalGateway starts a gateway for p with the scripted model and the given YAML, and waits
// until the platform is connected.
func approvalGateway(t *testing.T, p *platform, yaml string) (*e2eGateway, *scriptedModel) {
	t.Helper()
	model := newScriptedModel(t)
	vars := model.vars()
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, yaml)
	waitReadyz(t, g.base, http.StatusOK, p.readyEntry, func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
	return g, model
}

// approvalEnv is what one scenario gets.
type approvalEnv struct {
	p     *platform
	g     *e2eGateway
	model *scriptedModel
}

// TestE2EApprovals drives every approval behaviour of issue 5 through the real Slack and Discord
// adapters: one gateway per platform, one conversation (session) per scenario, scenarios in
// parallel.
func TestE2EApprovals(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, e approvalEnv, tag string)
	}{
		{"stranger ignored then requester approves once", scenarioApproveOnce},
		{"approve for the session", scenarioApproveSession},
		{"deny", scenarioDeny},
		{"text fallback approve", scenarioTextApprove},
		{"new message while paused", scenarioNewMessageWhilePaused},
		{"stranger cannot stop or decide", scenarioStrangerCannotDecide},
		{"stranger's message is their own turn", scenarioStrangerOwnTurn},
		{"ask_user round trip", scenarioAskUser},
		{"stop reaction", func(t *testing.T, e approvalEnv, tag string) { scenarioStop(t, e, tag, true) }},
		{"stop message", func(t *testing.T, e approvalEnv, tag string) { scenarioStop(t, e, tag, false) }},
	}
	for _, pl := range platforms {
		t.Run(pl.name, func(t *testing.T) {
			p := pl.make(t)
			g, model := approvalGateway(t, p, approvalConfig)
			e := approvalEnv{p: p, g: g, model: model}
			// The parallel scenarios run inside this group, so the gateway outlives them.
			t.Run("group", func(t *testing.T) {
				for i, sc := range scenarios {
					tag := fmt.Sprintf("[%s-%d]", pl.name, i)
					t.Run(sc.name, func(t *testing.T) {
						t.Parallel()
						sc.run(t, e, tag)
					})
				}
			})
		})
	}
}

// toolResult waits for the single current_time result the model received in the conversation
// and returns it.
func singleToolResult(t *testing.T, e approvalEnv, tag, tool string) string {
	t.Helper()
	res := e.model.toolResults(tag, tool)
	if len(res) != 1 {
		t.Fatalf("%s results the model received = %d, want exactly 1: %v", tool, len(res), res)
	}
	for _, v := range res {
		return v
	}
	return ""
}

// scenarioApproveOnce: the prompt names the tool and its arguments and carries ✅ 🔁 ❌; a ✅ from a
// stranger does nothing; the requester's ✅ runs the tool once and the answer follows.
func scenarioApproveOnce(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	prompt := c.waitPrompt(t, "current_time")
	if !strings.Contains(prompt.Text, "UTC") {
		t.Errorf("prompt %q does not show the arguments", prompt.Text)
	}

	p.react(t, c, prompt.ID, p.stranger, echogate.ReactionApprove)
	e.g.logs.waitLine(t, "approval reaction ignored", p.qualified(p.stranger), c.ch)
	if res := e.model.toolResults(tag, "current_time"); len(res) != 0 {
		t.Fatalf("the stranger's ✅ ran the tool: %v", res)
	}
	if !hasPending(t, e, c) {
		t.Fatalf("the pause is gone after the stranger's ✅; pending: %v", pendingApprovals(t, e.g.base))
	}

	p.react(t, c, prompt.ID, p.requester, echogate.ReactionApprove)
	c.waitMsg(t, afterToolText)
	res := singleToolResult(t, e, tag, "current_time")
	if strings.Contains(res, "not approved") || !strings.Contains(res, "UTC") {
		t.Errorf("current_time result = %q, want the tool's output", res)
	}
	assertOnce(t, c, "Approval needed")
	assertOnce(t, c, afterToolText)
	if hasPending(t, e, c) {
		t.Errorf("a pause is still pending after the approval")
	}
}

// scenarioApproveSession: 🔁 lets the next call of that tool in that session run without a
// prompt; another session still gets a prompt.
func scenarioApproveSession(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	prompt := c.waitPrompt(t, "current_time")
	p.react(t, c, prompt.ID, p.requester, echogate.ReactionApproveSession)
	c.waitMsg(t, afterToolText)

	p.say(t, c, p.requester, "and what time is it now? "+tag)
	c.waitMsgs(t, 2, afterToolText)
	if n := len(e.model.toolResults(tag, "current_time")); n != 2 {
		t.Errorf("current_time runs = %d, want 2", n)
	}
	assertOnce(t, c, "Approval needed")

	other := p.newConv(t, tag+"-other")
	p.open(t, other, p.requester, "what time is it? "+tag+"-other")
	op := other.waitPrompt(t, "current_time")
	// Deny it so the test leaves nothing pending.
	p.react(t, other, op.ID, p.requester, echogate.ReactionDeny)
	other.waitMsg(t, afterToolText)
}

// scenarioDeny: ❌ gives the model a denial as the tool result and the user an answer.
func scenarioDeny(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	prompt := c.waitPrompt(t, "current_time")
	p.react(t, c, prompt.ID, p.requester, echogate.ReactionDeny)
	c.waitMsg(t, afterToolText)
	res := singleToolResult(t, e, tag, "current_time")
	who := p.qualified(p.requester) // Slack's fake does not know this user's name
	if p.name == echogate.PlatformDiscord {
		who = "ann" // the author's name on the Discord message
	}
	if !strings.Contains(res, "not approved") || !strings.Contains(res, who+" denied it") {
		t.Errorf("current_time result = %q, want the denial naming who denied it", res)
	}
	assertOnce(t, c, afterToolText)
}

// scenarioTextApprove: replying "approve" works like ✅.
func scenarioTextApprove(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	c.waitPrompt(t, "current_time")
	p.say(t, c, p.requester, "approve")
	c.waitMsg(t, afterToolText)
	if res := singleToolResult(t, e, tag, "current_time"); strings.Contains(res, "not approved") || !strings.Contains(res, "UTC") {
		t.Errorf("current_time result = %q, want the tool's output", res)
	}
	assertOnce(t, c, afterToolText)
}

// scenarioNewMessageWhilePaused: a new message denies the pending call and is answered.
func scenarioNewMessageWhilePaused(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "what time is it? "+tag)
	c.waitPrompt(t, "current_time")
	p.say(t, c, p.requester, "never mind, say hello "+tag)
	c.waitMsg(t, echoText+"never mind, say hello "+tag)
	res := singleToolResult(t, e, tag, "current_time")
	if !strings.Contains(res, "not approved: user sent a new message") {
		t.Errorf("current_time result = %q, want the supersede denial", res)
	}
	if hasPending(t, e, c) {
		t.Errorf("a pause is still pending after the new message")
	}
	if n := len(c.find(afterToolText)); n != 0 {
		t.Errorf("answers after the tool = %d, want 0 (the new message is answered instead):\n%s", n, c.transcript())
	}
}

// scenarioAskUser: the model calls ask_user, the question is posted, the next message answers it.
func scenarioAskUser(t *testing.T, e approvalEnv, tag string) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "ask me something "+tag)
	c.waitMsg(t, askQuestion)
	if n := len(c.find("Approval needed")); n != 0 {
		t.Errorf("ask_user posted an approval prompt:\n%s", c.transcript())
	}
	p.say(t, c, p.requester, "Paris")
	c.waitMsg(t, afterToolText+"Paris")
	if res := singleToolResult(t, e, tag, "ask_user"); !strings.Contains(res, "Paris") {
		t.Errorf("ask_user result = %q, want the user's answer", res)
	}
	assertOnce(t, c, askQuestion)
}

// scenarioStop: 🛑 on the streaming reply (or the message "stop") aborts the turn within a second;
// the partial text stays, marked stopped.
func scenarioStop(t *testing.T, e approvalEnv, tag string, reaction bool) {
	p := e.p
	c := p.newConv(t, tag)
	p.open(t, c, p.requester, "tell me a long story "+tag)
	partial := c.waitMsg(t, "Once")
	start := time.Now()
	if reaction {
		p.react(t, c, partial.ID, p.requester, echogate.ReactionStop)
	} else {
		p.say(t, c, p.requester, "stop")
	}
	// The running model call ends (the gateway logs it as failed: cancelled or stopped): that is
	// the abort. Measured generously, from before the stop was sent until the log line was
	// written. Nothing else makes this conversation's model call fail.
	e.g.logs.waitLine(t, "model call failed", c.ch)
	aborted := time.Since(start)
	if aborted > time.Second {
		t.Errorf("the turn aborted %s after the stop, want within 1s", aborted)
	}
	final := c.waitMsg(t, "Once", "(stopped)")
	t.Logf("stop → turn aborted within %s, stopped answer visible after %s", aborted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if strings.Contains(final.Text, "and then it stopped.") {
		t.Errorf("final %q holds the whole story; want the partial text", final.Text)
	}
	if final.ID != partial.ID {
		t.Errorf("the stopped answer is message %s, want the streamed message %s marked:\n%s", final.ID, partial.ID, c.transcript())
	}
	assertOnce(t, c, "Once")
}

// hasPending reports whether /api/approvals lists a pause in c's session.
func hasPending(t *testing.T, e approvalEnv, c *conv) bool {
	t.Helper()
	for _, pa := range pendingApprovals(t, e.g.base) {
		if s, _ := pa["session"].(string); strings.Contains(s, c.ch) {
			return true
		}
	}
	return false
}

// assertOnce checks that exactly one bot message of c contains text.
func assertOnce(t *testing.T, c *conv, text string) {
	t.Helper()
	if n := len(c.find(text)); n != 1 {
		t.Errorf("bot messages with %q = %d, want 1:\n%s", text, n, c.transcript())
	}
}

// TestE2EApprovalTimeout: nobody decides within approval.timeout, so the call is denied, the user
// told, and the model answers with the denial.
func TestE2EApprovalTimeout(t *testing.T) {
	for _, pl := range platforms {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			p := pl.make(t)
			g, model := approvalGateway(t, p, approvalConfig+"approval:\n  timeout: 1s\n  check_interval: 50ms\n")
			e := approvalEnv{p: p, g: g, model: model}
			tag := "[timeout-" + pl.name + "]"
			c := p.newConv(t, tag)
			p.open(t, c, p.requester, "what time is it? "+tag)
			c.waitPrompt(t, "current_time")
			c.waitMsg(t, "Nobody approved", "current_time")
			c.waitMsg(t, afterToolText)
			if res := singleToolResult(t, e, tag, "current_time"); !strings.Contains(res, "not approved: nobody approved within 1s") {
				t.Errorf("current_time result = %q, want the timeout denial", res)
			}
			if hasPending(t, e, c) {
				t.Errorf("a pause is still pending after the timeout")
			}
			assertOnce(t, c, afterToolText)
		})
	}
}

// TestE2EApprovalSurvivesKill: the real binary is killed with SIGKILL between the prompt and the
// reaction; started again on the same data dir, the reaction resumes the turn, which answers once.
func TestE2EApprovalSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	binaryPath(t) // build before the subtests run in parallel
	for _, tc := range []struct {
		name     string
		platform int
		// early kills as soon as the prompt message exists, while its reactions are still
		// being added (Slack spaces them by its per-channel budget): the crash lands before
		// the prompt's reference is saved and before the event is completed, so the event is
		// replayed at the next start and must not supersede its own pause.
		early bool
	}{
		{"slack", 0, false}, {"slack while posting the prompt", 0, true},
		{"discord", 1, false}, {"discord while posting the prompt", 1, true},
	} {
		pl := platforms[tc.platform]
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := pl.make(t)
			model := newScriptedModel(t)
			vars := model.vars()
			for k, v := range p.vars {
				vars[k] = v
			}
			vars["ECHOGATE_DATA_DIR"] = t.TempDir()
			cfg := writeConfig(t, approvalConfig)
			e := approvalEnv{p: p, model: model}

			g1 := startBinaryGateway(t, vars, cfg)
			waitReadyz(t, g1.base, http.StatusOK, p.readyEntry, func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
			tag := fmt.Sprintf("[kill-%s-%v]", pl.name, tc.early)
			c := p.newConv(t, tag)
			p.open(t, c, p.requester, "what time is it? "+tag)
			var prompt botMsg
			if tc.early {
				prompt = c.waitMsg(t, "Approval needed", "current_time")
			} else {
				prompt = c.waitPrompt(t, "current_time")
			}
			g1.kill()

			g2 := startBinaryGateway(t, vars, cfg)
			e.g = g2
			waitReadyz(t, g2.base, http.StatusOK, p.readyEntry, func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
			p.reconnected(t, 2)
			if !hasPending(t, e, c) {
				t.Fatalf("the pause did not survive the kill; pending: %v", pendingApprovals(t, g2.base))
			}
			p.react(t, c, prompt.ID, p.requester, echogate.ReactionApprove)
			c.waitMsg(t, afterToolText)
			if res := singleToolResult(t, e, tag, "current_time"); strings.Contains(res, "not approved") || !strings.Contains(res, "UTC") {
				t.Errorf("current_time result = %q, want the tool's output", res)
			}
			if lines := scanLines(g2.logs.String(), "replayed event had already paused its turn"); len(lines) > 0 {
				t.Logf("the paused turn's event was replayed after the kill: %s", lines[0])
			}
			// Stop gracefully: a duplicate answer (e.g. a replayed event) would be posted by then.
			g2.stop()
			assertOnce(t, c, afterToolText)
			assertOnce(t, c, "Approval needed")
		})
	}
}
