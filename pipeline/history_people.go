package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/echogate/echogate"
)

// A conversation may have many people (a Slack thread, a Discord channel): the transcript is
// the conversation's, but what a per-person tool returned is its requester's. Replaying the
// history to one person, the results of another person's per-person tools (every tool whose
// Spec is not Shareable: memory, files, commands, MCP tools) become a placeholder, and those
// calls lose their arguments, which hold the same kind of data ("passport X123"). The calls
// stay, each answered, so the sequence is one every provider accepts. Direct messages have one
// person and are replayed as stored.

// turnOwnersMax bounds the turns whose requester is remembered (about 1.5 MiB when full); a full
// table starts afresh (the store is asked again). Only turns of shared conversations are kept.
const turnOwnersMax = 1 << 14

// turnOwners remembers the requester (qualified user id) of recent turns, so that telling one
// person's tool results from another's needs no store read per turn.
type turnOwners struct {
	mu sync.Mutex
	m  map[string]string
}

func (o *turnOwners) get(turn string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	u, ok := o.m[turn]
	return u, ok
}

func (o *turnOwners) put(turn, user string) {
	if turn == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) >= turnOwnersMax {
		o.m = make(map[string]string)
	}
	o.m[turn] = user
}

// scopeHistory returns hist as t's person may see it (see above). hist may be the history
// cache's own slice: it is never modified; the entries that change are in a copy.
func (p *Pipeline) scopeHistory(ctx context.Context, t *Turn, hist []echogate.StoredMessage) []echogate.StoredMessage {
	if t.ev.Conversation.DM {
		return hist
	}
	owners := &p.hist.owners
	owners.put(t.id, t.userID)
	var out []echogate.StoredMessage // a copy, from the first entry that changes
	loaded := false
	for i, sm := range hist {
		if !p.personal(sm.Message) {
			continue
		}
		user, ok := owners.get(sm.Turn)
		if !ok && !loaded {
			p.loadOwners(ctx, t)
			loaded = true
			user, ok = owners.get(sm.Turn)
		}
		if ok && user == t.userID {
			continue // the person's own (unknown turns are treated as someone else's)
		}
		if out == nil {
			out = slices.Clone(hist)
		}
		out[i].Message = p.withheld(sm.Message)
	}
	if out == nil {
		return hist
	}
	return out
}

// loadOwners reads the requesters of the session's recent turns (as many as the history window
// has messages, at most one turn each). A failure is logged; the turns stay unknown.
func (p *Pipeline) loadOwners(ctx context.Context, t *Turn) {
	recs, err := p.d.Store.ListTurns(ctx, t.key, max(p.cfg.HistoryMessages, 1))
	if err != nil {
		t.log.Warn("pipeline: read the requesters of the session's turns; their per-person tool results are withheld", "err", err)
		return
	}
	for _, r := range recs {
		p.hist.owners.put(r.ID, r.UserID)
	}
}

// shareable reports whether the tool named name is declared Shareable. A tool that is no longer
// registered (an MCP server gone) is per person.
func (p *Pipeline) shareable(name string) bool {
	tool, ok := p.d.Tools.Get(name)
	return ok && tool.Spec().Shareable
}

// personal reports whether m is a per-person tool's result or holds a per-person tool's call.
func (p *Pipeline) personal(m echogate.Message) bool {
	switch m.Role {
	case echogate.RoleTool:
		return !p.shareable(m.Name)
	case echogate.RoleAssistant:
		return slices.ContainsFunc(m.ToolCalls, func(c echogate.ToolCall) bool { return !p.shareable(c.Name) })
	}
	return false
}

// withheld is m as replayed to another person: a per-person result becomes a placeholder, a
// per-person call keeps its id and name without its arguments.
func (p *Pipeline) withheld(m echogate.Message) echogate.Message {
	if m.Role == echogate.RoleTool {
		name := m.Name
		if name == "" {
			name = "a tool"
		}
		return echogate.Message{Role: echogate.RoleTool, ToolCallID: m.ToolCallID, Name: m.Name,
			Content: fmt.Sprintf("[result of %s for another participant omitted]", name)}
	}
	calls := slices.Clone(m.ToolCalls)
	for i, c := range calls {
		if !p.shareable(c.Name) {
			calls[i].Arguments = "{}"
		}
	}
	m.ToolCalls = calls
	return m
}
