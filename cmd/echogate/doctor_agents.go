package main

import (
	"fmt"
	"strings"

	"github.com/echogate/echogate/agent/cost"
)

// builtinToolNames are the stable names of the built-in tools (SPEC "Built-in tools"), what
// doctor checks agents' tool patterns against without starting the tools.
var builtinToolNames = []string{"current_time", "http_fetch", "ask_user", "run_command", "read_file",
	"remember", "recall", "forget", "knowledge_search", "skill", "skill_file", "schedule"}

// doctorAgents lists which agent serves which place and checks the names the agents use:
// tool patterns against the built-in tools and MCP servers, models and routes against
// models:. The running gateway checks the tools it really registered (buildAgents).
func doctorAgents(cfg *Config) []check {
	cat := cfg.staticAgentCatalog()
	if _, err := cfg.buildAgents(cat); err != nil {
		return []check{{name: "agents", detail: err.Error(), fix: "correct the agent's entry under agents: in the configuration file (see README \"Agents and access\")"}}
	}
	var out []check
	for _, a := range cfg.Agents {
		var what []string
		if a.Model != "" {
			what = append(what, "model "+a.Model)
		}
		if a.Tools != nil {
			what = append(what, "tools "+strings.Join(a.Tools, ", "))
		}
		if a.limits() != (cost.Limits{}) {
			what = append(what, "own budgets")
		}
		detail := a.Name + " serves " + strings.Join(a.Match, ", ")
		if len(what) > 0 {
			detail += " (" + strings.Join(what, "; ") + ")"
		}
		out = append(out, check{name: "agent " + a.Name, ok: true, detail: detail})
	}
	def := "default serves every place"
	if len(cfg.Agents) > 0 {
		def = "default serves every other place"
	}
	out = append(out, check{name: "agent default", ok: true, detail: def + " (model " + cfg.Models.Default + ")"})
	out = append(out, check{name: "access", ok: true, detail: cfg.accessSummary()})
	return out
}

// accessSummary describes `access:` in one line.
func (c *Config) accessSummary() string {
	r := c.accessRules()
	if r.Open() {
		return "everyone may use the bot (no access: lists)"
	}
	list := func(name string, v []string) string {
		if len(v) == 0 {
			return name + " any"
		}
		return name + " " + strings.Join(v, ", ")
	}
	refusal := "refused users get silence"
	if r.Refusal != "" {
		refusal = fmt.Sprintf("refused users are told %q (once an hour)", r.Refusal)
	}
	dms := "DMs on"
	if !r.DMs {
		dms = "DMs off"
	}
	return strings.Join([]string{list("users", r.Users), list("channels", r.Channels), list("workspaces", r.Workspaces), dms, refusal}, "; ")
}
