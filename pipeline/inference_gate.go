package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

// grantCache is a turn's view of the session's "approve this tool for the session" grants,
// read from the store at the turn's first ask.
type grantCache struct {
	mu     sync.Mutex
	loaded bool
	tools  map[string]bool
}

// authorize is the ApprovalGate: policy override, then safety class; an ask is satisfied by a
// session grant or by an auto-approving event.
func (t *Turn) authorize(ctx context.Context, call echogate.ToolCall, spec tools.Spec) agent.Decision {
	v, ok := t.p.policy[call.Name]
	if !ok {
		if spec.Safety == tools.Safe {
			v = agent.Allow
		} else {
			v = agent.Ask
		}
	}
	switch v {
	case agent.Allow:
		return agent.Decision{Verdict: agent.Allow}
	case agent.Deny:
		t.p.d.Metrics.ToolCall(call.Name, "denied", 0)
		return agent.Decision{Verdict: agent.Deny, Reason: fmt.Sprintf("not allowed: the gateway's policy denies tool %s (tools.%s.approval: deny)", call.Name, call.Name)}
	}
	if t.ev.AutoApprove || t.granted(ctx, call.Name) {
		return agent.Decision{Verdict: agent.Allow}
	}
	if t.pauseHeld {
		return agent.Decision{Verdict: agent.Deny, Reason: "not run: another user's tool call waits for approval in this conversation; ask again once it is decided"}
	}
	return agent.Decision{Verdict: agent.Ask}
}

// granted reports whether the session holds a grant for tool.
func (t *Turn) granted(ctx context.Context, tool string) bool {
	g := &t.grants
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		g.loaded = true
		g.tools = map[string]bool{}
		gs, err := t.p.d.Store.Grants(ctx, t.key)
		if err != nil {
			t.log.Warn("pipeline: load session grants", "err", err)
		}
		for _, name := range gs {
			g.tools[name] = true
		}
	}
	return g.tools[tool]
}
