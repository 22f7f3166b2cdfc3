package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

func loadYAML(t *testing.T, yaml string) (*Config, error) {
	t.Helper()
	return loadConfig(writeConfig(t, yaml), func(string) string { return "" })
}

// Config-level mistakes in access: and agents: are errors naming the key.
func TestAgentsAccessConfigErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		yaml string
		want string
	}{
		"user without platform":  {"access: {users: [U123]}", `access.users: "U123": write entries as slack:U123`},
		"channel without id":     {"access: {channels: ['slack:']}", `access.channels: "slack:"`},
		"bad workspace":          {"access: {workspaces: [T1]}", "access.workspaces"},
		"agent without name":     {"agents: [{match: [web]}]", "agents[0].name: every agent needs a name"},
		"duplicate agent":        {"agents: [{name: a, match: [web]}, {name: a, match: [slack:dm]}]", `agents.a.name: "a" is used twice`},
		"agent named default":    {"agents: [{name: default, match: [web]}]", `agents.default.name: "default" is used twice`},
		"agent without match":    {"agents: [{name: a}]", "agents.a.match: list the places"},
		"place without platform": {"agents: [{name: a, match: [C0123]}]", `agents.a.match: "C0123" is not a place`},
		"bad approver":           {"agents: [{name: a, match: [web], approvers: [U9]}]", `agents.a.approvers: "U9"`},
		"negative budget":        {"agents: [{name: a, match: [web], budgets: {per_day_usd: -1}}]", "agents.a.budgets"},
		"unknown agent key":      {"agents: [{name: a, match: [web], prompt: hi}]", `unknown key "prompt"`},
	} {
		_, err := loadYAML(t, tt.yaml)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: loadConfig = %v, want an error containing %q", name, err, tt.want)
		}
	}
	cfg, err := loadYAML(t, "access: {users: ['slack:U1', 'discord:*'], dms: false, refusal: no}\nagents: [{name: ops, match: ['slack:C1', 'discord:guild:111', web]}]")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.accessRules(); r.DMs || r.Refusal != "no" || !slices.Equal(r.Users, []string{"slack:U1", "discord:*"}) {
		t.Errorf("accessRules = %+v, want DMs off, the refusal text and both users", r)
	}
	cfg, err = loadYAML(t, "agents: [{name: none, match: [web], tools: []}, {name: all, match: [web]}]")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].Tools == nil || len(cfg.Agents[0].Tools) != 0 || cfg.Agents[1].Tools != nil {
		t.Errorf("tools: [] = %#v, unset = %#v; want an empty list (no tools) and nil (every tool)", cfg.Agents[0].Tools, cfg.Agents[1].Tools)
	}
	cfg, err = loadYAML(t, "agent: {max_iterations: 4}")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.accessRules(); !r.Open() {
		t.Errorf("accessRules without access: = %+v, want everyone allowed", r)
	}
}

// The names an agent uses are checked against the gateway's tools, MCP servers, routes and
// models.
func TestBuildAgents(t *testing.T) {
	cat := agentCatalog{tools: []string{"ask_user", "current_time", "http_fetch"}, mcpServers: []string{"pager"},
		routes: []string{"smart"}, knownModel: func(m string) bool { return m == "gpt-4o" || m == "gpt-4o-mini" }}
	for name, tt := range map[string]struct {
		agent AgentProfileConf
		want  string // error text; "" = ok
	}{
		"every tool":              {AgentProfileConf{Name: "a", Match: []string{"web"}}, ""},
		"builtin and mcp globs":   {AgentProfileConf{Name: "a", Match: []string{"web"}, Tools: []string{"current_time", "http_*", "pager__*"}}, ""},
		"pattern matching none":   {AgentProfileConf{Name: "a", Match: []string{"web"}, Tools: []string{"pagr__*"}}, `agents.a.tools: "pagr__*" matches no tool`},
		"misspelled tool":         {AgentProfileConf{Name: "a", Match: []string{"web"}, Tools: []string{"curent_time"}}, `"curent_time" matches no tool`},
		"known model":             {AgentProfileConf{Name: "a", Match: []string{"web"}, Model: "gpt-4o"}, ""},
		"route":                   {AgentProfileConf{Name: "a", Match: []string{"web"}, Model: "smart"}, ""},
		"unknown model":           {AgentProfileConf{Name: "a", Match: []string{"web"}, Model: "gpt-9"}, `agents.a.model: "gpt-9" is neither a model`},
		"budget needs no catalog": {AgentProfileConf{Name: "a", Match: []string{"web"}, Budgets: BudgetsConfig{PerDayUSD: 1}}, ""},
	} {
		cfg := &Config{Agents: []AgentProfileConf{tt.agent}}
		cat := cat
		cat.ledger = nopLedger{}
		got, err := cfg.buildAgents(cat)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: buildAgents = %v, want nil", name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: buildAgents = %v, want an error containing %q", name, err, tt.want)
		case tt.want == "" && len(got.List) != 1:
			t.Errorf("%s: buildAgents = %+v, want one agent", name, got)
		}
	}
	cfg := &Config{Agents: []AgentProfileConf{{Name: "r", Match: []string{"web"}, Model: "smart"}, {Name: "m", Match: []string{"web"}, Model: "gpt-4o"}}}
	got, err := cfg.buildAgents(cat)
	if err != nil || got.List[0].Route != "smart" || got.List[0].Model != "" || got.List[1].Model != "gpt-4o" {
		t.Errorf("buildAgents = %+v, %v; want a route for r and a model for m", got.List, err)
	}
}

// An agent naming a model no provider serves stops `serve` with the key in the error.
func TestServeRefusesUnknownAgentModel(t *testing.T) {
	model := newScriptedModel(t)
	yaml := `models:
  default: gpt-4o-mini
  providers: [{name: openai, base_url: ` + model.fake.URL() + `, api_key: sk-e2e, models: [gpt-4o-mini, gpt-4o]}]
agents:
  - {name: oncall, match: ['slack:C1'], model: gpt-5-typo}
`
	vars := map[string]string{"ECHOGATE_DATA_DIR": t.TempDir(), "ECHOGATE_HTTP_ADDR": freeAddr(t)}
	e, _, stderr := testEnv(vars, "--config", writeConfig(t, yaml), "serve")
	if code := run(context.Background(), e); code != 2 || !strings.Contains(stderr.String(), `echogate.yaml, line 5: agents.oncall.model: "gpt-5-typo" is neither a model`) {
		t.Errorf("serve = exit %d, stderr %q; want exit 2 naming the line and agents.oncall.model", code, stderr.String())
	}
}

type nopLedger struct{}

func (nopLedger) SumUsage(context.Context, echogate.UsageFilter) (echogate.Usage, error) {
	return echogate.Usage{}, nil
}

// doctor lists which agent serves which place, and names an agent's bad tool pattern.
func TestDoctorListsAgents(t *testing.T) {
	vars := map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()}
	e, stdout, _ := testEnv(vars, "--config", writeConfig(t, agentsYAML), "doctor")
	code := run(context.Background(), e)
	out := stdout.String()
	for _, want := range []string{
		"ok  agent oncall       oncall serves slack:C0OPS (model gpt-4o; tools current_time)",
		"ok  agent support      support serves slack:C0SUP (tools http_fetch; own budgets)",
		"ok  agent dm           dm serves discord:dm (model gpt-4o)",
		"ok  agent default      default serves every other place (model gpt-4o-mini)",
		"ok  access             users slack:U0REQUEST, discord:500000000000000001; channels slack:C0OPS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("doctor = exit %d, want 0:\n%s", code, out)
	}
	bad := strings.Replace(agentsYAML, "tools: [current_time]", "tools: [pagr__*]", 1)
	// A pattern that matches no built-in tool nor MCP server is a configuration mistake: doctor
	// stops on it as every command does, with the file and line.
	e, _, stderr := testEnv(vars, "--config", writeConfig(t, bad), "doctor")
	if code := run(context.Background(), e); code != 2 || !strings.Contains(stderr.String(), `echogate: config: `) || !strings.Contains(stderr.String(), `agents.oncall.tools: "pagr__*" matches no tool`) {
		t.Errorf("doctor with a bad tool pattern = exit %d:\n%s\nwant exit 2 naming agents.oncall.tools", code, stderr.String())
	}
}

// The terminal's agent (place console) is checked against every tool, read_file included, and
// only its tools reach the model (the demo model names what it got).
func TestChatWithConsoleAgent(t *testing.T) {
	yaml := "agents:\n  - {name: term, match: [console], system_prompt: \"You are the terminal helper.\", tools: [read_file]}\n"
	e, stdout, stderr := testEnv(map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()}, "--config", writeConfig(t, yaml), "chat", "-m", "hi")
	if code := run(context.Background(), e); code != 0 {
		t.Fatalf("chat = exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "1 tool: read_file.") {
		t.Errorf("chat output = %q, want the demo model to report only read_file (plan is not in the agent's tools)", out)
	}
}

// require_mention reaches the Slack adapter for channels named by id; other places are listed
// for the start-up warning.
func TestAgentRequireMention(t *testing.T) {
	off, on := false, true
	cfg := &Config{Agents: []AgentProfileConf{
		{Name: "a", Match: []string{"slack:C1", "slack:dm", "discord:9"}, RequireMention: &off},
		{Name: "b", Match: []string{"slack:C1", "slack:C2"}, RequireMention: &on},
		{Name: "c", Match: []string{"slack:C3"}},
	}}
	got := cfg.slackChannels()
	if len(got) != 2 || *got["C1"].RequireMention != false || *got["C2"].RequireMention != true {
		t.Errorf("slackChannels = %+v, want C1 off (first agent wins), C2 on", got)
	}
	if um := cfg.unmappedMentions(); !slices.Equal(um, []string{"a: slack:dm", "a: discord:9"}) {
		t.Errorf("unmappedMentions = %q, want a's slack:dm and discord:9", um)
	}
}
