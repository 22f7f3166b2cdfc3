package main

import (
	"github.com/echogate/echogate/admin"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/router"
	"github.com/echogate/echogate/tools"
)

// The web console's hooks into the running gateway: what the admin API needs beyond the store.
// They read the gateway's parts (pipeline, tool registry, model, config) and never change them.

// toolBreakers lists every registered tool with its breaker state, sorted by name.
func (c *core) toolBreakers() []admin.ToolBreaker {
	if c.tools == nil {
		return []admin.ToolBreaker{}
	}
	specs := c.tools.Specs()
	out := make([]admin.ToolBreaker, 0, len(specs))
	for _, s := range specs {
		tb := admin.ToolBreaker{Tool: s.Name, Safety: s.Safety.String(), Approval: "ask", State: "none"}
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

// channelNames lists the platforms this gateway runs a channel for.
func (g *gateway) channelNames() []string {
	out := make([]string, 0, len(g.channels))
	for _, ch := range g.channels {
		out = append(out, ch.Name())
	}
	return out
}
