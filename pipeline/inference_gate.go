package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

// grantCache is a turn's view of its user's "approve this tool for the session" grants, read
// from the store at the turn's first ask.
type grantCache struct {
	mu     sync.Mutex
	loaded bool
	by     map[string]string // tool → who granted it
}

// authorize is the ApprovalGate: policy override, then safety class; an ask is satisfied by
// the user's own grant or by an auto-approving event. A tool that fetches outside content runs
// without asking only while the turn's input is the requester's own (tainted). A call that
// needs an approver (needsApprover) is refused at once when the agent has none.
func (t *Turn) authorize(ctx context.Context, call echogate.ToolCall, spec tools.Spec) agent.Decision {
	if spec.SafetyOf != nil {
		spec.Safety = spec.SafetyOf(json.RawMessage(call.Arguments)) // this call's class
	}
	v, ok := t.tools.policy[call.Name]
	if !ok {
		switch {
		case spec.Safety != tools.Safe:
			v = agent.Ask
		case spec.Fetches && t.tainted():
			v = agent.Ask // text of others or fetched pages could steer it to carry data out
		default:
			v = agent.Allow
		}
	}
	switch v {
	case agent.Allow:
		return agent.Decision{Verdict: agent.Allow}
	case agent.Deny:
		t.metrics.ToolCall(call.Name, "denied", 0)
		return agent.Decision{Verdict: agent.Deny, Reason: fmt.Sprintf("not allowed: the gateway's policy denies tool %s (tools.%s.approval: deny)", call.Name, call.Name)}
	}
	if d, ok := t.unattendedDecision(call.Name); ok {
		return d // a scheduled run (scheduled.go)
	}
	if t.ev.AutoApprove || t.granted(ctx, call.Name) {
		return agent.Decision{Verdict: agent.Allow}
	}
	if len(t.prof.approvers) == 0 && t.tools.needsApprover(call.Name) {
		t.metrics.ToolCall(call.Name, "denied", 0)
		return agent.Decision{Verdict: agent.Deny, Reason: fmt.Sprintf("not run: %s needs an approver's decision and none is configured; "+
			"the operator can list people under approval.approvers (or the agent's approvers)", call.Name)}
	}
	if t.pauseHeld {
		return agent.Decision{Verdict: agent.Deny, Reason: "not run: another user's tool call waits for approval in this conversation; ask again once it is decided"}
	}
	return agent.Decision{Verdict: agent.Ask}
}

// threadContextHead starts a user message that carries earlier thread messages of others
// (withThreadContext).
const threadContextHead = "[Earlier messages in this thread"

// tainted reports whether the turn's input carries text from other authors or fetched content:
// thread context by others, another person's (or an unnamed author's) message in a shared
// conversation's history (a DM has one person), a fetching tool's result in the history, or a
// fetch earlier in this turn.
func (t *Turn) tainted() bool {
	if t.fetched.Load() {
		return true
	}
	me := t.ev.Actor
	for _, m := range t.ev.ThreadContext {
		if !m.IsBot && m.Author != me.Name && m.Author != me.ID {
			return true
		}
	}
	for _, m := range t.in.Messages {
		switch m.Role {
		case echogate.RoleUser:
			// An unnamed author is unknown: in a shared conversation it may be anyone.
			if !t.ev.Conversation.DM && (m.Name == "" || m.Name != me.Name || strings.HasPrefix(m.Content, threadContextHead)) {
				return true
			}
		case echogate.RoleTool:
			if tool, ok := t.tools.reg.Get(m.Name); ok && tool.Spec().Fetches {
				return true
			}
		}
	}
	return false
}

// granted reports whether the turn's user holds a grant for tool in the session (🔁 is that
// person's, for that tool). A call that needs an approver counts only a grant an approver of
// the turn's agent gave: not one the user gave themselves (made before an upgrade, or before
// the tool was made approvers_only).
func (t *Turn) granted(ctx context.Context, tool string) bool {
	g := &t.grants
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		g.loaded = true
		gs, err := t.store.Grants(ctx, t.key, t.userID) // the turn's user's own grants
		if err != nil {
			t.log.Warn("pipeline: load session grants", "err", err)
		}
		g.by = gs
	}
	by, ok := g.by[tool]
	return ok && (t.prof.approvers[by] || !t.tools.needsApprover(tool))
}
