package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/channels/slack"
	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/skills"
)

// AccessConf is the `access:` section: who may use the gateway at all (SPEC "Access and
// agents"). Empty lists allow everyone.
type AccessConf struct {
	Users      []string `yaml:"users"`      // slack:U123, discord:4567 (globs allowed: slack:*)
	Channels   []string `yaml:"channels"`   // slack:C0123, discord:8910, discord:guild:111
	Workspaces []string `yaml:"workspaces"` // slack:T0123 (Slack workspace), discord:111 (Discord server)
	DMs        *bool    `yaml:"dms"`        // DMs from allowed users; default true
	Refusal    string   `yaml:"refusal"`    // sent to a refused user at most once an hour; "" = silence
}

// AgentProfileConf is one entry of `agents:`.
type AgentProfileConf struct {
	Name           string        `yaml:"name"`
	Match          []string      `yaml:"match"`
	SystemPrompt   string        `yaml:"system_prompt"`
	Model          string        `yaml:"model"` // a model, or the name of a models.routes entry
	Tools          []string      `yaml:"tools"` // allow-list globs; unset = every tool, [] = none
	RequireMention *bool         `yaml:"require_mention"`
	Knowledge      *bool         `yaml:"knowledge"`
	Memory         *bool         `yaml:"memory"`
	MemoryScope    string        `yaml:"memory_scope"` // user | channel (needs memory.channel_memories)
	Budgets        BudgetsConfig `yaml:"budgets"`
	Approvers      []string      `yaml:"approvers"`
	Skills         []string      `yaml:"skills"` // allow-list globs of installed skills; unset = every skill, [] = none (skills_wiring.go)
}

// placePrefixes are the platforms a place name or id may start with.
var placePrefixes = []string{"slack:", "discord:"}

func hasPlatform(s string, extra ...string) bool {
	if slices.Contains(extra, s) {
		return true
	}
	for _, p := range placePrefixes {
		if strings.HasPrefix(s, p) && len(s) > len(p) {
			return true
		}
	}
	return false
}

// validateAgentsAccess checks `access:` and `agents:` on their own (the tools and models they
// name are checked against the running gateway by buildAgents).
func (c *Config) validateAgentsAccess() error {
	bad := badKey
	for _, l := range []struct {
		key  string
		vals []string
		form string
	}{
		{"access.users", c.Access.Users, "slack:U123 or discord:4567 (platform:user id)"},
		{"access.channels", c.Access.Channels, "slack:C0123, discord:8910 or discord:guild:111"},
		{"access.workspaces", c.Access.Workspaces, "slack:T0123 (workspace id) or discord:111 (server id)"},
	} {
		for _, v := range l.vals {
			if !hasPlatform(v) || !access.ValidGlob(v) {
				return bad(l.key, "%q: write entries as %s", v, l.form)
			}
		}
	}
	seen := map[string]bool{pipeline.DefaultAgent: true}
	for i, a := range c.Agents {
		key := fmt.Sprintf("agents[%d]", i)
		if a.Name == "" {
			return bad(key+".name", "every agent needs a name (it is shown in the console and /api/turns)")
		}
		key = "agents." + a.Name
		if seen[a.Name] {
			return bad(key+".name", "%q is used twice: agent names must be unique (%q is the top-level agent)", a.Name, pipeline.DefaultAgent)
		}
		seen[a.Name] = true
		if len(a.Match) == 0 {
			return bad(key+".match", "list the places the agent serves, e.g. [slack:C0123, slack:dm, discord:guild:111, discord:dm, web]")
		}
		for _, m := range a.Match {
			if !hasPlatform(m, "web", "console") || !access.ValidGlob(m) {
				return bad(key+".match", "%q is not a place: use slack:<channel>, slack:dm, slack:team:<id>, discord:<channel>, discord:dm, discord:guild:<id>, web or console", m)
			}
		}
		for _, tp := range a.Tools {
			if tp == "" || !access.ValidGlob(tp) {
				return bad(key+".tools", "%q is not a tool name or glob (e.g. current_time, pager__*)", tp)
			}
		}
		if err := skills.ValidateAllow(a.Skills); err != nil {
			return bad(key+".skills", "%v", err)
		}
		for _, ap := range a.Approvers {
			plat, id, ok := strings.Cut(ap, ":")
			if !ok || id == "" || (plat != "slack" && plat != "discord" && plat != "web" && plat != "console") {
				return bad(key+".approvers", "%q: write approvers as slack:U123, discord:123456 (platform:user id)", ap)
			}
		}
		switch a.MemoryScope {
		case "", "user":
		case "channel":
			if !c.Memory.ChannelMemories {
				return bad(key+".memory_scope", "channel needs memory.channel_memories: true (the channel's shared memories are off)")
			}
		default:
			return bad(key+".memory_scope", "%q: use user (the user's own memories) or channel (also the channel's shared ones)", a.MemoryScope)
		}
		if err := a.limits().Validate(); err != nil {
			return bad(key+".budgets", "%v", err)
		}
	}
	return nil
}

func (a AgentProfileConf) limits() cost.Limits {
	b := a.Budgets
	return cost.Limits{PerTurnUSD: b.PerTurnUSD, PerSessionUSD: b.PerSessionUSD, PerUserDayUSD: b.PerUserDayUSD,
		PerChannelDayUSD: b.PerChannelDayUSD, PerDayUSD: b.PerDayUSD, PerMonthUSD: b.PerMonthUSD}
}

// accessRules are the pipeline's access rules of `access:`.
func (c *Config) accessRules() access.Rules {
	return access.Rules{Users: c.Access.Users, Channels: c.Access.Channels, Workspaces: c.Access.Workspaces,
		DMs: c.Access.DMs == nil || *c.Access.DMs, Refusal: c.Access.Refusal}
}

// agentModels are the models the agents name that are not routes, so the router serves them.
func (c *Config) agentModels() []string {
	routes := map[string]bool{}
	for _, r := range c.Models.Routes {
		routes[r.Name] = true
	}
	var out []string
	for _, a := range c.Agents {
		if a.Model != "" && !routes[a.Model] {
			out = append(out, a.Model)
		}
	}
	return out
}

// agentCatalog is what buildAgents checks names against: the gateway's tools and models.
type agentCatalog struct {
	tools      []string               // registered tool names
	mcpServers []string               // configured MCP servers (their tools register later)
	routes     []string               // models.routes names
	knownModel func(name string) bool // nil: any model name is served (demo, catch-all provider)
	models     []string               // the models known by name, for the error message
	ledger     cost.Ledger            // the agents' own budgets read spend from it
	prices     cost.Table
	modelFor   func(agent.Request) string // the router's choice, to price a call's estimate
}

// configModels says which models the configuration serves: the models providers list, the
// default and the routes' models. A name no provider lists goes to the first provider, so the
// question is decided only when that provider lists its models; a first provider without a
// models list may serve any name (only it can say), and so may the demo model: nil, any name.
func (c *Config) configModels() func(string) bool {
	if c.demoMode() || len(c.Models.Providers) == 0 || len(c.Models.Providers[0].Models) == 0 {
		return nil
	}
	known := map[string]bool{c.Models.Default: true}
	for _, p := range c.Models.Providers {
		for _, m := range p.Models {
			known[m] = true
		}
	}
	for _, r := range c.Models.Routes {
		known[r.Model] = true
		for _, f := range r.Fallback {
			known[f] = true
		}
	}
	return func(m string) bool { return known[m] }
}

// validateAgentNames checks the tools and models the agents name before anything starts,
// against the built-in tools, the MCP servers, the routes and the models the configuration
// decides (configModels). The running gateway checks again against the tools it registered.
func (c *Config) validateAgentNames() error {
	_, err := c.buildAgents(c.staticAgentCatalog())
	return err
}

// staticAgentCatalog is what the configuration alone says the agents may name.
func (c *Config) staticAgentCatalog() agentCatalog {
	cat := agentCatalog{tools: c.staticToolNames(), knownModel: c.configModels(), models: c.listedModels()}
	for _, s := range c.MCP.Servers {
		cat.mcpServers = append(cat.mcpServers, s.Name)
	}
	for _, r := range c.Models.Routes {
		cat.routes = append(cat.routes, r.Name)
	}
	return cat
}

// buildAgents resolves `agents:` against the gateway: a tool pattern must match a tool (or an
// MCP server's tools), a model must be served, a route must exist. Errors name the key.
func (c *Config) buildAgents(cat agentCatalog) (pipeline.Agents, error) {
	out := pipeline.Agents{Default: pipeline.Profile{Name: pipeline.DefaultAgent}} // the top-level agent: Config's own settings
	for _, a := range c.Agents {
		key := "agents." + a.Name
		p := pipeline.Profile{Name: a.Name, Match: a.Match, SystemPrompt: a.SystemPrompt, Tools: a.Tools,
			Knowledge: a.Knowledge, Memory: a.Memory, MemoryScope: a.MemoryScope, Approvers: a.Approvers, Skills: a.Skills}
		for _, tp := range a.Tools {
			if !toolPatternMatches(tp, cat) {
				return pipeline.Agents{}, &ConfigError{Key: key + ".tools", Msg: fmt.Sprintf("%q matches no tool: the tools are %s (MCP tools are <server>__<tool> of mcp.servers)",
					tp, strings.Join(cat.tools, ", "))}
			}
		}
		switch {
		case a.Model == "":
		case slices.Contains(cat.routes, a.Model):
			p.Route = a.Model
		case cat.knownModel == nil || cat.knownModel(a.Model):
			p.Model = a.Model
		default:
			return pipeline.Agents{}, &ConfigError{Key: key + ".model", Msg: unknownAgentModel(a.Model, cat)}
		}
		if l := a.limits(); l != (cost.Limits{}) && cat.ledger != nil { // no ledger: doctor, checking only
			tr, err := cost.New(cost.Config{Agent: a.Name, Limits: l, Prices: cat.prices, ModelFor: cat.modelFor}, cat.ledger, nil)
			if err != nil {
				return pipeline.Agents{}, &ConfigError{Key: key + ".budgets", Msg: err.Error()}
			}
			p.Budget = tr
		}
		out.List = append(out.List, p)
	}
	if err := out.Validate(); err != nil {
		return pipeline.Agents{}, &ConfigError{Key: "agents", Msg: err.Error()}
	}
	return out, nil
}

// toolPatternMatches reports whether a tool pattern names a registered tool, or the tools of a
// configured MCP server (pattern <server>__…).
func toolPatternMatches(pat string, cat agentCatalog) bool {
	for _, t := range cat.tools {
		if access.Glob(pat, t) {
			return true
		}
	}
	server, _, ok := strings.Cut(pat, "__")
	if !ok {
		return false
	}
	for _, s := range cat.mcpServers {
		if access.Glob(server, s) {
			return true
		}
	}
	return false
}

// unmappedMentions lists the agents' places whose require_mention cannot be applied (all but
// Slack channels named by id), as "agent: place" for a start-up warning.
func (c *Config) unmappedMentions() []string {
	var out []string
	for _, a := range c.Agents {
		if a.RequireMention == nil {
			continue
		}
		for _, m := range a.Match {
			if id, ok := strings.CutPrefix(m, "slack:"); !ok || strings.ContainsAny(id, "*?[:") || id == access.DM {
				out = append(out, a.Name+": "+m)
			}
		}
	}
	return out
}

// slackChannels maps the agents' require_mention onto the Slack channels they name by id
// (slack:C…, first agent first), where the Slack adapter decides what reaches the gateway.
// Globs, slack:dm and slack:team:… keep slack.require_mention. Read at start only.
func (c *Config) slackChannels() map[string]slack.ChannelConfig {
	out := map[string]slack.ChannelConfig{}
	for _, a := range c.Agents {
		for _, m := range a.Match {
			id, ok := strings.CutPrefix(m, "slack:")
			if !ok || a.RequireMention == nil || strings.ContainsAny(id, "*?[:") || id == access.DM {
				continue
			}
			if _, set := out[id]; !set {
				out[id] = slack.ChannelConfig{RequireMention: a.RequireMention}
			}
		}
	}
	return out
}

// addAgentMentions adds the agents' per-channel require_mention (slackChannels) to the Slack
// adapter's configuration; a channel's own slack.channels entry wins.
func (c *Config) addAgentMentions(sc *slack.Config) {
	for id, cc := range c.slackChannels() {
		if own, ok := sc.Channels[id]; ok && own.RequireMention != nil {
			continue
		}
		if sc.Channels == nil {
			sc.Channels = map[string]slack.ChannelConfig{}
		}
		sc.Channels[id] = cc
	}
}

// unknownAgentModel says that an agent's model is neither served nor a route, and what is.
func unknownAgentModel(model string, cat agentCatalog) string {
	msg := fmt.Sprintf("%q is neither a model a provider serves nor a route name: add it to a provider's models: list (a model new to the running gateway needs a restart)", model)
	if len(cat.models) > 0 {
		msg += "; the models are " + strings.Join(cat.models, ", ")
	}
	if len(cat.routes) > 0 {
		return msg + "; the routes: " + strings.Join(cat.routes, ", ")
	}
	return msg + ", or define a models.routes entry of that name"
}

// listedModels are the default and the models the providers list, sorted.
func (c *Config) listedModels() []string {
	seen := map[string]bool{c.Models.Default: true}
	for _, p := range c.Models.Providers {
		for _, m := range p.Models {
			seen[m] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// staticToolNames are the built-in tools the configuration can register: those not turned off
// under tools.<name>.enabled, the memory tools only with memory.enabled and knowledge_search
// only with knowledge.enabled. The others (run_command, read_file, schedule, the skill tools)
// depend on more than the configuration; the running gateway checks them against what it
// registered.
func (c *Config) staticToolNames() []string {
	var out []string
	for _, n := range builtinToolNames {
		if t, ok := c.Tools[n]; ok && t.Enabled != nil && !*t.Enabled {
			continue
		}
		switch n {
		case "remember", "recall", "forget":
			if !optIn(c.Memory.Enabled) {
				continue
			}
		case "knowledge_search":
			if !optIn(c.Knowledge.Enabled) {
				continue
			}
		}
		out = append(out, n)
	}
	return out
}
