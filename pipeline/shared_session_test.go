package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// shared is a message in a shared conversation (a channel thread several people reply in):
// not a DM, so the conversation is not one person.
func shared(session, user, text string) echogate.InboundEvent {
	ev := msg(session, user, text)
	ev.Kind, ev.Conversation.DM = echogate.KindMention, false
	ev.Actor.Name = user
	return ev
}

func sharedReaction(session, user, emoji string, target echogate.MessageRef) echogate.InboundEvent {
	ev := shared(session, user, "")
	ev.Kind, ev.Reaction, ev.Target = echogate.KindReaction, emoji, target
	return ev
}

// waitFor waits until the turn or command answering ev finished, passing over others.
func (h *harness) waitFor(ev echogate.InboundEvent) echogate.TurnEvent {
	h.t.Helper()
	for {
		if d := h.waitDone(); d.EventID == ev.ID {
			return d
		}
	}
}

// promptsPosted counts the approval prompts posted so far.
func promptsPosted(h *harness) int {
	n := 0
	for _, p := range h.rep.Posts() {
		if p.Out.Kind == echogate.OutApprovalPrompt {
			n++
		}
	}
	return n
}

// newestPrompt is the newest approval prompt posted.
func newestPrompt(t *testing.T, h *harness) echogate.MessageRef {
	t.Helper()
	posts := h.rep.Posts()
	for i := len(posts) - 1; i >= 0; i-- {
		if posts[i].Out.Kind == echogate.OutApprovalPrompt {
			return posts[i].Ref
		}
	}
	t.Fatalf("no approval prompt posted; posts: %q", h.rep.Texts())
	return echogate.MessageRef{}
}

// anyText reports whether some post or finished turn's text contains all of parts.
func anyText(h *harness, parts ...string) bool {
	texts := h.rep.Texts()
	for _, e := range h.rep.Events() {
		if e.Type == echogate.TurnDone {
			texts = append(texts, e.Text)
		}
	}
	for _, s := range texts {
		if containsAll(s, parts...) {
			return true
		}
	}
	return false
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Finding 2 (second half): after UA's 🔁, UB's call of the same tool in the same thread ran with
// no prompt, because the session grant covered everyone. A grant is that person's, for that tool.
func TestSessionGrantIsPerPerson(t *testing.T) {
	lookup := newTool("lookup", tools.Sensitive, "found")
	h := start(t, opts{tools: []tools.Tool{lookup}},
		agenttest.CallTool("lookup", `{"q":"a"}`), agenttest.Reply("UA's first"),
		agenttest.CallTool("lookup", `{"q":"b"}`), agenttest.Reply("UA's second"),
		agenttest.CallTool("lookup", `{"q":"c"}`), agenttest.Reply("UB's"))
	h.submit(shared("t1", "UA", "look up a"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("UA's first turn = %+v, want paused for approval", d)
	}
	h.submit(sharedReaction("t1", "UA", echogate.ReactionApproveSession, newestPrompt(t, h)))
	h.waitDone()
	h.submit(shared("t1", "UA", "look up b"))
	if d := h.waitDone(); d.Status != "done" || d.Text != "UA's second" {
		t.Fatalf("UA's second call after UA's 🔁 = %+v, want it run without a prompt", d)
	}
	h.submit(shared("t1", "UB", "look up c"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Errorf("UB's call after UA's 🔁 = %+v (tool calls %d), want paused: UA's grant is not UB's", d, lookup.calls.Load())
	}
	if got := promptsPosted(h); got != 2 {
		t.Errorf("prompts posted = %d, want 2 (UA's first, UB's)", got)
	}
}

// Finding 2: the requester approved their own dangerous call. A destructive tool (or one with
// approvers_only) needs an approver; the requester's ✅ or 🔁 does not decide it.
func TestRequesterCannotApproveOwnDestructiveCall(t *testing.T) {
	for name, tc := range map[string]struct {
		tool   *funcTool
		cfg    pipeline.Config
		decide func(prompt echogate.MessageRef) echogate.InboundEvent
	}{
		"destructive, ✅": {newTool("run_command", tools.Destructive, "ran"), pipeline.Config{},
			func(p echogate.MessageRef) echogate.InboundEvent {
				return sharedReaction("t1", "UA", echogate.ReactionApprove, p)
			}},
		"destructive, 🔁": {newTool("run_command", tools.Destructive, "ran"), pipeline.Config{},
			func(p echogate.MessageRef) echogate.InboundEvent {
				return sharedReaction("t1", "UA", echogate.ReactionApproveSession, p)
			}},
		"destructive, text approve": {newTool("run_command", tools.Destructive, "ran"), pipeline.Config{},
			func(echogate.MessageRef) echogate.InboundEvent { return shared("t1", "UA", "approve") }},
		"approvers_only, button": {newTool("deploy", tools.Sensitive, "ran"), pipeline.Config{ApproversOnly: []string{"deploy"}},
			func(p echogate.MessageRef) echogate.InboundEvent {
				ev := sharedReaction("t1", "UA", echogate.ReactionApprove, p)
				ev.ID = "button:" + ev.ID
				return ev
			}},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Approvers = []string{"web:BOSS"}
			h := start(t, opts{tools: []tools.Tool{tc.tool}, cfg: tc.cfg},
				agenttest.CallTool(tc.tool.spec.Name, `{"cmd":"cat /proc/1/environ"}`), agenttest.Reply("done"))
			h.submit(shared("t1", "UA", "run it"))
			if d := h.waitDone(); d.Status != "paused" {
				t.Fatalf("turn = %+v, want paused", d)
			}
			prompt := newestPrompt(t, h)
			if text := promptOf(t, h).Text; !strings.Contains(text, "Only an approver (BOSS) can approve `"+tc.tool.spec.Name+"`") {
				t.Errorf("prompt = %q, want it to say only an approver (BOSS, a web user named by the id they typed) can approve", text)
			}
			h.submit(tc.decide(prompt))
			marker := shared("t1", "UA", "!help") // handled after the decision
			h.submit(marker)
			h.waitFor(marker)
			if n := tc.tool.calls.Load(); n != 0 {
				t.Fatalf("%s ran %d times on the requester's own approval, want 0", tc.tool.spec.Name, n)
			}
			if !anyText(h, "approver", "(BOSS)") {
				t.Errorf("no answer naming who can approve; posts: %q", h.rep.Texts())
			}
			h.submit(sharedReaction("t1", "BOSS", echogate.ReactionApprove, prompt))
			if d := h.waitDone(); d.Status != "done" || tc.tool.calls.Load() != 1 {
				t.Errorf("after the approver's ✅: %+v, tool calls %d; want done and 1 call", d, tc.tool.calls.Load())
			}
		})
	}
}

// With no approver configured a destructive call is refused at once, saying how to fix it,
// rather than left waiting for a decision nobody may make.
func TestDestructiveWithoutApproverIsDenied(t *testing.T) {
	rc := newTool("run_command", tools.Destructive, "ran")
	h := start(t, opts{tools: []tools.Tool{rc}}, agenttest.CallTool("run_command", `{}`), agenttest.Reply("could not"))
	h.submit(shared("t1", "UA", "run it"))
	if d := h.waitDone(); d.Status != "done" || rc.calls.Load() != 0 {
		t.Fatalf("turn = %+v, tool calls %d; want done without running it", d, rc.calls.Load())
	}
	tr := h.transcript("t1")
	if len(tr) < 3 || !containsAll(tr[2], "approval.approvers", "run_command") {
		t.Errorf("tool result = %q, want a denial naming run_command and approval.approvers", tr)
	}
}

// A grant the requester gave themselves (before an upgrade, or before the operator set
// approvers_only on the tool) does not cover a call that needs an approver; an approver's does.
func TestSelfGrantDoesNotCoverApproverOnlyCall(t *testing.T) {
	for name, tc := range map[string]struct {
		by   string
		asks bool
	}{
		"granted by the requester": {"web:UA", true},
		"granted by an approver":   {"web:BOSS", false},
	} {
		t.Run(name, func(t *testing.T) {
			rc := newTool("run_command", tools.Destructive, "ran")
			store := pipelinetest.NewMemStore()
			if err := store.GrantTool(context.Background(), "web:t1", "web:UA", "run_command", tc.by, time.Time{}); err != nil {
				t.Fatal(err)
			}
			h := start(t, opts{store: store, tools: []tools.Tool{rc}, cfg: pipeline.Config{Approvers: []string{"web:BOSS"}}},
				agenttest.CallTool("run_command", `{}`), agenttest.Reply("done"))
			h.submit(shared("t1", "UA", "run it"))
			if d := h.waitDone(); (d.Status == "paused") != tc.asks {
				t.Errorf("UA's call with a grant %s = %+v (runs %d), want asked = %v", name, d, rc.calls.Load(), tc.asks)
			}
		})
	}
}
