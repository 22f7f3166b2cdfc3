package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// A conversation may have many people (a Slack thread, a Discord channel): the transcript is
// the conversation's, but what a per-person tool returned is its requester's. Replaying the
// history to one person, the results of another person's per-person tools (every tool whose
// Spec is not Shareable: memory, files, commands, MCP tools) become a placeholder, and those
// calls lose their arguments, which hold the same kind of data ("passport X123"). The calls
// stay, each answered, so the sequence is one every provider accepts. Direct messages have one
// person and are replayed as stored.
//
// A compaction summary (checkpoint) of a shared conversation is replayed to everyone, so it is
// conversation-level: the summarizer sees every per-person call without its arguments and every
// per-person result as the same placeholder, whoever's they are, and not the turn's note (the
// per-turn context of one person). The messages kept after a checkpoint are stored ones,
// replayed to each person through scopeHistory. A checkpoint written otherwise (while the
// session was a DM's, or by an older version) is not replayed in a shared conversation: its
// turns start from the whole history window, and the next compaction writes a scoped one
// (context.go, rebuild).

// people tells one person's tool results from another's in a shared conversation: the
// ContextStage replays the history through it (scopeHistory), the InferenceStage compacts
// through it (compactor).
type people struct {
	tools *tools.Registry
	turns interface {
		ListTurns(context.Context, echogate.SessionKey, int) ([]echogate.TurnRecord, error)
	}
	owners    *turnOwners   // the history cache's (histcache.go)
	compactor compactorCaps // the Compactor with its optional capabilities (caps.go)
	window    int           // Config.HistoryMessages
}

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
func (pp *people) scopeHistory(ctx context.Context, t *Turn, hist []echogate.StoredMessage) []echogate.StoredMessage {
	if t.ev.Conversation.DM {
		return hist
	}
	owners := pp.owners
	owners.put(t.id, t.userID)
	var out []echogate.StoredMessage // a copy, from the first entry that changes
	loaded := false
	for i, sm := range hist {
		if !pp.personal(sm.Message) {
			continue
		}
		user, ok := owners.get(sm.Turn)
		if !ok && !loaded {
			pp.loadOwners(ctx, t)
			loaded = true
			user, ok = owners.get(sm.Turn)
		}
		if ok && user == t.userID {
			continue // the person's own (unknown turns are treated as someone else's)
		}
		if out == nil {
			out = slices.Clone(hist)
		}
		out[i].Message = pp.withheld(sm.Message)
	}
	if out == nil {
		return hist
	}
	return out
}

// loadOwners reads the requesters of the session's recent turns (as many as the history window
// has messages, at most one turn each). A failure is logged; the turns stay unknown.
func (pp *people) loadOwners(ctx context.Context, t *Turn) {
	recs, err := pp.turns.ListTurns(ctx, t.key, max(pp.window, 1))
	if err != nil {
		t.log.Warn("pipeline: read the requesters of the session's turns; their per-person tool results are withheld", "err", err)
		return
	}
	for _, r := range recs {
		pp.owners.put(r.ID, r.UserID)
	}
}

// shareable reports whether the tool named name is declared Shareable. A tool that is no longer
// registered (an MCP server gone) is per person.
func (pp *people) shareable(name string) bool {
	tool, ok := pp.tools.Get(name)
	return ok && tool.Spec().Shareable
}

// personal reports whether m is a per-person tool's result or holds a per-person tool's call.
func (pp *people) personal(m echogate.Message) bool {
	switch m.Role {
	case echogate.RoleTool:
		return !pp.shareable(m.Name)
	case echogate.RoleAssistant:
		return slices.ContainsFunc(m.ToolCalls, func(c echogate.ToolCall) bool { return !pp.shareable(c.Name) })
	}
	return false
}

// withheld is m as replayed to another person: a per-person result becomes a placeholder, a
// per-person call keeps its id and name without its arguments.
func (pp *people) withheld(m echogate.Message) echogate.Message {
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
		if !pp.shareable(c.Name) {
			calls[i].Arguments = "{}"
		}
	}
	m.ToolCalls = calls
	return m
}

// scopedCompactor is an optional capability of a Compactor (agent/compress has it): Compact
// whose summary sees the summarized messages through scrub (a message as the summary may see it,
// and whether to keep it); the kept messages are returned as given.
type scopedCompactor interface {
	CompactScrubbed(ctx context.Context, session echogate.SessionKey, msgs []echogate.Message,
		report func(echogate.Usage), scrub func(echogate.Message) (echogate.Message, bool)) ([]echogate.Message, bool, error)
}

// compact returns the agent loop's Compact for t (nil without a Compactor). In a shared
// conversation a Compactor with the scopedCompactor capability summarizes through
// summaryScrub; one without it cannot be kept from summarizing per-person results, so in a
// shared conversation it is not run (a warning says so once per turn).
func (pp *people) compact(t *Turn) func(context.Context, []echogate.Message) ([]echogate.Message, bool, error) {
	comp := pp.compactor.compactor
	if comp == nil {
		return nil
	}
	if t.ev.Conversation.DM {
		return func(ctx context.Context, msgs []echogate.Message) ([]echogate.Message, bool, error) {
			return comp.Compact(ctx, t.key, msgs, t.reportUsage)
		}
	}
	sc := pp.compactor.scrubbed
	if sc == nil {
		t.log.Warn("pipeline: the Compactor cannot withhold per-person tool results from its summary; no compression in this shared conversation")
		return nil
	}
	return func(ctx context.Context, msgs []echogate.Message) ([]echogate.Message, bool, error) {
		return sc.CompactScrubbed(ctx, t.key, msgs, t.reportUsage, pp.summaryScrub)
	}
}

// summaryScrub is a message of a shared conversation as its compaction summary may see it: a
// per-person result or call withheld as from another participant (whoever's it is), and no
// system message (the turn's note).
func (pp *people) summaryScrub(m echogate.Message) (echogate.Message, bool) {
	if m.Role == echogate.RoleSystem {
		return m, false
	}
	if pp.personal(m) {
		return pp.withheld(m), true
	}
	return m, true
}
