package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/tools/skills"
)

// DefaultAgent is the name of the profile built from the top-level `agent:` settings.
const DefaultAgent = "default"

// Profile is one agent (`agents:`): what serves the places it matches. Empty fields mean the
// gateway's own settings (Config).
type Profile struct {
	Name string
	// Match lists place names or globs (internal/access.Places): slack:C0123, slack:dm,
	// discord:guild:111, discord:8910, discord:dm, web, console.
	Match        []string
	SystemPrompt string
	// Model is a model name, pinned for the agent's turns (a /model choice still wins); Route
	// names a route of the model router instead. At most one is set.
	Model string
	Route string
	// Tools allow-list the tools offered to the model and callable, as globs; nil means every
	// tool.
	Tools []string
	// Knowledge and Memory switch the knowledge-base hits and the long-term memory (snapshot and
	// tools) off for the agent when false; nil keeps the gateway's setting.
	Knowledge *bool
	Memory    *bool
	// MemoryScope "user" keeps the memory snapshot to the user's own memories (no channel-shared
	// ones); "" or "channel" leaves the memory provider's setting.
	MemoryScope string
	// Budget holds the agent's own limits, checked after the gateway's; nil means none.
	Budget Budget
	// Approvers may decide the approvals of the agent's turns, besides Config.Approvers.
	Approvers []string
	// Skills allow-lists the installed skills the agent may see and load (agents[].skills), as
	// globs: nil means every installed skill, an empty list none (skills.go).
	Skills []string
}

// Agents is an ordered set of profiles: the first whose Match fits a conversation serves it,
// else Default.
type Agents struct {
	Default Profile
	List    []Profile
}

// Validate reports duplicate names and malformed patterns, naming them.
func (a Agents) Validate() error {
	def := a.Default.Name
	if def == "" {
		def = DefaultAgent
	}
	seen := map[string]bool{def: true}
	for i, p := range a.List {
		if p.Name == "" {
			return fmt.Errorf("agents[%d]: give the agent a name", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("agents[%d]: the name %q is used twice: agent names must be unique (%q is the top-level agent)", i, p.Name, def)
		}
		seen[p.Name] = true
		if len(p.Match) == 0 {
			return fmt.Errorf("agents[%d] (%s): match is empty: list the places it serves, e.g. slack:C0123, slack:dm, discord:dm, web", i, p.Name)
		}
		for _, pat := range append(slices.Clone(p.Match), p.Tools...) {
			if !access.ValidGlob(pat) {
				return fmt.Errorf("agents[%d] (%s): %q is not a valid pattern", i, p.Name, pat)
			}
		}
		if err := skills.ValidateAllow(p.Skills); err != nil {
			return fmt.Errorf("agents[%d] (%s): %w", i, p.Name, err)
		}
		if p.Model != "" && p.Route != "" {
			return fmt.Errorf("agents[%d] (%s): set a model or a route, not both", i, p.Name)
		}
		if p.MemoryScope != "" && p.MemoryScope != "user" && p.MemoryScope != "channel" {
			return fmt.Errorf("agents[%d] (%s): memory_scope %q: use user or channel", i, p.Name, p.MemoryScope)
		}
	}
	return nil
}

// Serving returns the name of the agent that serves a conversation.
func (a Agents) Serving(c echogate.ConversationRef) string {
	places := access.Places(c)
	for _, p := range a.List {
		if access.AnyGlob(p.Match, places) {
			return p.Name
		}
	}
	return a.Default.Name
}

// profile is a Profile with the gateway's defaults filled in, as a turn reads it. It is never
// changed after it was made: a running turn keeps the one it started with across a reload.
type profile struct {
	Profile
	approvers map[string]bool // Config.Approvers and the agent's own
	memoryOff bool
	kbOff     bool
	pinned    bool       // Model was set by the agent, not inherited
	budget    budgetCaps // Budget with its optional capability (caps.go)
}

// agentSet is the resolved Agents the pipeline serves with.
type agentSet struct {
	src  Agents
	def  *profile
	list []*profile
}

func (p *Pipeline) resolveAgents(a Agents) (*agentSet, error) {
	if a.Default.Name == "" {
		a.Default.Name = DefaultAgent
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	mk := func(pr Profile) *profile {
		pinned := pr.Model != ""
		if pr.SystemPrompt == "" {
			pr.SystemPrompt = p.cfg.SystemPrompt
		}
		if pr.Model == "" {
			pr.Model = p.cfg.Model // with a Route, the request's model when the route is gone
		}
		out := &profile{Profile: pr, approvers: map[string]bool{},
			memoryOff: pr.Memory != nil && !*pr.Memory, kbOff: pr.Knowledge != nil && !*pr.Knowledge, pinned: pinned,
			budget: budgetCapsOf(pr.Budget)}
		for id := range p.approvers { // approval.approvers decide every agent's approvals
			out.approvers[id] = true
		}
		for _, id := range pr.Approvers {
			out.approvers[id] = true
		}
		return out
	}
	set := &agentSet{src: a, def: mk(a.Default)}
	for _, pr := range a.List {
		set.list = append(set.list, mk(pr))
	}
	return set, nil
}

// initAgentsAccess installs Config.Agents and Config.Access (New).
func (p *Pipeline) initAgentsAccess() error {
	set, err := p.resolveAgents(p.cfg.Agents)
	if err != nil {
		return err
	}
	p.agents.Store(set)
	p.gate.rules = access.Rules{DMs: true}
	if p.cfg.Access != nil {
		p.gate.rules = *p.cfg.Access
	}
	return nil
}

// SetAgents replaces the agent profiles (a configuration reload). Turns that run keep the
// profile they started with; the next turn of every session uses the new set. An invalid set
// is refused with an error naming what is wrong, and the old one stays.
func (p *Pipeline) SetAgents(a Agents) error {
	set, err := p.resolveAgents(a)
	if err != nil {
		return err
	}
	p.agents.Store(set)
	return nil
}

// Agents returns the profiles the pipeline serves with.
func (p *Pipeline) Agents() Agents { return p.agents.Load().src }

// profileFor returns the profile serving the event's conversation.
func (p *Pipeline) profileFor(ev echogate.InboundEvent) *profile {
	set := p.agents.Load()
	places := access.Places(ev.Conversation)
	for _, pr := range set.list {
		if access.AnyGlob(pr.Match, places) {
			return pr
		}
	}
	return set.def
}

// profileOfTurn returns the profile that served a turn (a paused one, resuming): the agent
// of the same name in the current set, else the one serving the place now (the agent was
// renamed or removed by a reload, or the record cannot be read).
func (p *Pipeline) profileOfTurn(ctx context.Context, turnID string, ev echogate.InboundEvent) *profile {
	if set := p.agents.Load(); len(set.list) == 0 {
		return set.def // one agent: nothing to look up
	}
	if rec, err := p.d.Store.GetTurn(ctx, turnID); err == nil && rec.Agent != "" {
		set := p.agents.Load()
		if set.def.Name == rec.Agent {
			return set.def
		}
		for _, pr := range set.list {
			if pr.Name == rec.Agent {
				return pr
			}
		}
	}
	return p.profileFor(ev)
}

// withProfile makes the turn run under pr (a resumed turn keeps its agent).
func withProfile(pr *profile) turnOption { return func(t *turn) { t.prof = pr } }

// Names of the built-in tools that belong to long-term memory and the knowledge base, hidden
// from an agent that switches them off (SPEC: the names are stable).
var (
	memoryTools    = []string{"remember", "recall", "forget"}
	knowledgeTools = []string{"knowledge_search"}
)

// allowsTool reports whether the agent offers the tool.
func (pr *profile) allowsTool(name string) bool {
	if pr.memoryOff && slices.Contains(memoryTools, name) || pr.kbOff && slices.Contains(knowledgeTools, name) {
		return false
	}
	if pr.Tools == nil {
		return true
	}
	for _, pat := range pr.Tools {
		if access.Glob(pat, name) {
			return true
		}
	}
	return false
}

// ContextKind is implemented by context providers an agent can switch off: Kind returns
// "memory" or "knowledge". Providers without it always run.
type ContextKind interface {
	ContextKind() string
}

// contextQuery is the query a context provider gets for the agent: with MemoryScope "user",
// the memory provider is not told the channel, so it adds no channel-shared memories.
func (pr *profile) contextQuery(cp contextSource, q echogate.ContextQuery) echogate.ContextQuery {
	if cp.kind == "memory" && pr.MemoryScope == "user" {
		q.Channel = ""
	}
	return q
}

// wantsContext reports whether the agent uses the context provider's section.
func (pr *profile) wantsContext(cp contextSource) bool {
	switch cp.kind {
	case "memory":
		return !pr.memoryOff
	case "knowledge":
		return !pr.kbOff
	}
	return true
}

// hints sets the agent's model choice on routing hints: its pinned model (unless the session
// chose one with /model) or its route.
func (pr *profile) hints(h *agent.Hints) {
	if h.Override == "" && pr.pinned {
		h.Override = pr.Model
	}
	h.Route = pr.Route
}
