package main

import (
	"context"
	"crypto/rand"
	"net/http"
	"slices"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/router"
	"github.com/echogate/echogate/channels/web"
	"github.com/echogate/echogate/tools"
)

// The web console's hooks into the running gateway: what the admin API needs beyond the store.
// They read the gateway's parts (pipeline, tool registry, model, config) and never change them.

// consoleUser is the console's identity when it decides an approval: on a session of platform P
// the console acts as "P:console-admin" when that id is listed in approval.approvers (for example
// ECHOGATE_APPROVERS=slack:console-admin,discord:console-admin,web:console-admin).
const consoleUser = web.ConsoleUser

// consoleAuthenticated reports whether a console request proved who sent it: with an auth token
// every request that reached a handler did (auth ran first); without one, only a request from
// this machine that names it by a loopback name or address (web.LocalRequest).
func consoleAuthenticated(token string) func(*http.Request) bool {
	if token != "" {
		return func(*http.Request) bool { return true }
	}
	return web.LocalRequest
}

// toolBreaker is one tool's circuit breaker as GET /api/breakers shows it.
type toolBreaker struct {
	Tool   string `json:"tool"`
	Safety string `json:"safety"`
	// Approval is the effective policy: tools.<name>.approval, else allow for safe tools and ask
	// for the others.
	Approval string `json:"approval"`
	// State is "closed", "half-open" or "open"; "none" when the tool has no breaker.
	State string `json:"state"`
}

// toolBreakers lists every registered tool with its breaker state, sorted by name.
func (c *core) toolBreakers() []toolBreaker {
	if c.tools == nil {
		return []toolBreaker{}
	}
	specs := c.tools.Specs()
	out := make([]toolBreaker, 0, len(specs))
	for _, s := range specs {
		tb := toolBreaker{Tool: s.Name, Safety: s.Safety.String(), Approval: "ask", State: "none"}
		if s.Safety == tools.Safe {
			tb.Approval = "allow"
		}
		if a := c.cfg.Tools[s.Name].Approval; a != "" {
			tb.Approval = a
		}
		if t, ok := c.tools.Get(s.Name); ok {
			if b := findBreaker(t); b != nil {
				tb.State = b.State()
			}
		}
		out = append(out, tb)
	}
	return out
}

// findBreaker unwraps decorators until it finds the tool's breaker.
func findBreaker(t tools.Tool) *tools.Breaker {
	for range 16 { // decorators nest a few levels at most; the bound guards a cyclic Unwrap
		if b, ok := t.(*tools.Breaker); ok {
			return b
		}
		u, ok := t.(interface{ Unwrap() tools.Tool })
		if !ok {
			return nil
		}
		t = u.Unwrap()
	}
	return nil
}

// modelBreakers lists the model router's breakers; empty when the model is not routed.
func (c *core) modelBreakers() []router.BreakerStatus {
	type breakers interface{ Breakers() []router.BreakerStatus }
	m := c.model
	for range 16 {
		if b, ok := m.(breakers); ok {
			return b.Breakers()
		}
		u, ok := m.(interface{ Unwrap() agent.Model })
		if !ok {
			break
		}
		m = u.Unwrap()
	}
	return []router.BreakerStatus{}
}

// memoryOn and knowledgeOn report whether long-term memory and the knowledge base are enabled.
func (c *core) memoryOn() bool    { return c.memkb != nil && c.memkb.mem != nil }
func (c *core) knowledgeOn() bool { return c.memkb != nil && c.memkb.kb != nil }

// channelNames lists the platforms this gateway runs a channel for.
func (g *gateway) channelNames() []string {
	out := make([]string, 0, len(g.channels))
	for _, ch := range g.channels {
		out = append(out, ch.Name())
	}
	return out
}

// submit hands an event to the pipeline, as a channel would. It returns quickly; see
// pipeline.Pipeline.Submit for its errors.
func (g *gateway) submit(ctx context.Context, ev echogate.InboundEvent) error {
	return g.pipeline.Submit(ctx, ev)
}

// consoleActor resolves who decides an approval from the console for a session of platform.
// requested is the "user" of the request: a qualified id ("slack:U123") or a bare id on the
// session's platform; empty picks the console's identity. It returns the qualified id and the
// actor, or an HTTP status and a message saying what is wrong and how to fix it.
//
// The pipeline accepts a decision from the user who started the turn or a listed approver, and
// qualifies the actor with the session's platform. So the console decides as a listed approver of
// that platform: "P:console-admin" when listed, else the first listed approver of P. For web
// sessions, whose users are not authenticated anyway, the requester is accepted too.
func (c *core) consoleActor(platform, requested string, pend echogate.PendingTurn) (string, int, string) {
	approvers := c.cfg.Approval.Approvers
	allowed := func(q string) bool {
		return slices.Contains(approvers, q) || platform == echogate.PlatformWeb && q == pend.RequestedBy
	}
	if requested = strings.TrimSpace(requested); requested != "" {
		q := requested
		if p, _, ok := strings.Cut(requested, ":"); !ok {
			q = platform + ":" + requested
		} else if p != platform {
			return "", http.StatusBadRequest, "user " + requested + " is a " + p + " identity but session " + string(pend.Session) +
				" is on " + platform + ": name a " + platform + " approver (e.g. " + platform + ":" + consoleUser + ") or leave user empty"
		}
		if !allowed(q) {
			return "", http.StatusForbidden, q + " may not decide approvals of " + platform + " sessions: add it to approval.approvers " +
				"(ECHOGATE_APPROVERS), or leave user empty to decide as the console (" + platform + ":" + consoleUser + ")"
		}
		return q, 0, ""
	}
	if q := platform + ":" + consoleUser; slices.Contains(approvers, q) {
		return q, 0, ""
	}
	for _, a := range approvers {
		if strings.HasPrefix(a, platform+":") {
			return a, 0, ""
		}
	}
	if platform == echogate.PlatformWeb && pend.RequestedBy != "" {
		return pend.RequestedBy, 0, ""
	}
	return "", http.StatusForbidden, "no approver is configured for " + platform + " sessions, so the console cannot decide for them: add " +
		platform + ":" + consoleUser + " (the console's identity) to approval.approvers (ECHOGATE_APPROVERS), then retry"
}

// consoleEventID returns a fresh id for an event the console submits.
func consoleEventID() string { return "console." + rand.Text() }
