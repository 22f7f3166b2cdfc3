package main

// End-to-end tests of `access:` and `agents:` through the real Slack and Discord adapters, the
// fakes of both platforms and the OpenAI-wire fake: which agent answers where (its prompt,
// model and tools in the model request), who is refused before any model call, an agent's own
// budget, /api/turns, and a SIGHUP reload.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/discord"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

const (
	opsPrompt     = "You are the on-call helper for #ops."
	supportPrompt = "You are the docs helper for #support."
	dmPrompt      = "You are the Discord DM helper."
	generalPrompt = "You are the general helper."
	refusalText   = "Sorry, this assistant is only for the ops and support teams."
)

// agentsYAML serves #ops (C0OPS) with the oncall agent, #support (C0SUP) with the support
// agent (with its own daily budget) and Discord DMs with the dm agent; access lets in two users
// in those channels, the Discord server and DMs.
const agentsYAML = `
agent: {system_prompt: "` + generalPrompt + `"}
models:
  default: gpt-4o-mini
  prices: {gpt-4o-mini: {input_per_mtok: 1.0, output_per_mtok: 0}}
access:
  users: [slack:U0REQUEST, discord:500000000000000001]
  channels: [slack:C0OPS, slack:C0SUP, slack:C0GEN, discord:guild:400000000000000001]
  refusal: "` + refusalText + `"
agents:
  - name: oncall
    match: [slack:C0OPS]
    system_prompt: "` + opsPrompt + `"
    model: gpt-4o
    tools: [current_time]
  - name: support
    match: [slack:C0SUP]
    system_prompt: "` + supportPrompt + `"
    tools: [http_fetch]
    budgets: {per_day_usd: 0.5}
  - name: dm
    match: [discord:dm]
    system_prompt: "` + dmPrompt + `"
    model: gpt-4o
`

// newAgentsModel is an OpenAI-wire fake that echoes, except that a message containing
// "expensive" is answered with a million prompt tokens reported ($1 at the configured price).
func newAgentsModel(t *testing.T) (*agenttest.FakeOpenAI, map[string]string) {
	t.Helper()
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		if strings.Contains(req.LastUser(), "expensive") {
			return agenttest.Answer{Text: "an expensive answer", PromptTokens: 1_000_000, CompletionTokens: 5}, true
		}
		return agenttest.TextAnswer(echoText + req.LastUser()), true
	})
	t.Cleanup(fake.Close)
	return fake, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e"}
}

// requestFor returns the model requests whose last user message contains text.
func requestsFor(fake *agenttest.FakeOpenAI, text string) []agenttest.ChatRequest {
	var out []agenttest.ChatRequest
	for _, r := range fake.ChatRequests() {
		if strings.Contains(r.LastUser(), text) {
			out = append(out, r)
		}
	}
	return out
}

func offeredTools(r agenttest.ChatRequest) []string {
	var out []string
	for _, tl := range r.Tools {
		out = append(out, tl.Function.Name)
	}
	slices.Sort(out)
	return out
}

func systemOf(r agenttest.ChatRequest) string {
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		return r.Messages[0].Content
	}
	return ""
}

func TestE2EAgentsAndAccessSlack(t *testing.T) {
	fake, vars := newAgentsModel(t)
	p, srv := newSlackPlatform(t)
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, agentsYAML)
	p.waitFor(t, "the socket mode connection", func() bool { return srv.OpenConnections() == 1 })
	ops := &conv{p: p, ch: "C0OPS"}
	sup := &conv{p: p, ch: "C0SUP"}
	gen := &conv{p: p, ch: "C0GEN"}

	// The channel's agent: its prompt, its model, only its tools.
	p.open(t, ops, p.requester, "is prod down? tag-ops")
	ops.waitMsg(t, echoText+"is prod down? tag-ops")
	p.open(t, gen, p.requester, "hello tag-gen")
	gen.waitMsg(t, echoText+"hello tag-gen")
	for _, tt := range []struct {
		tag, prompt, model string
		tools              []string
	}{
		{"tag-ops", opsPrompt, "gpt-4o", []string{"current_time"}}, // plan is not in its tools
		{"tag-gen", generalPrompt, "gpt-4o-mini", []string{"ask_user", "current_time", "http_fetch", "plan", "read_file", "schedule"}},
	} {
		reqs := requestsFor(fake, tt.tag)
		if len(reqs) != 1 {
			t.Fatalf("%s: model requests = %d, want 1", tt.tag, len(reqs))
		}
		if r := reqs[0]; !strings.HasPrefix(systemOf(r), tt.prompt) || r.Model != tt.model || !slices.Equal(offeredTools(r), tt.tools) {
			t.Errorf("%s: model request = system %q, model %s, tools %v; want system %q…, model %s, tools %v",
				tt.tag, firstLine(systemOf(r)), r.Model, offeredTools(r), tt.prompt, tt.model, tt.tools)
		}
	}

	// A stranger is refused before any model call, with the refusal text once an hour.
	p.open(t, ops, p.stranger, "let me in tag-stranger")
	ops.waitMsg(t, refusalText)
	g.logs.waitLine(t, "access refused", "user=slack:"+p.stranger, "reason=user", "replied=true")
	p.open(t, ops, p.stranger, "let me in again tag-stranger2")
	g.logs.waitLine(t, "access refused", "user=slack:"+p.stranger, "reason=user", "replied=false")
	// A channel outside access.channels: silence, whoever writes.
	random := &conv{p: p, ch: "C0RANDOM"}
	p.open(t, random, p.requester, "anyone here? tag-random")
	g.logs.waitLine(t, "access refused", "place=slack:C0RANDOM", "reason=channel", "replied=false")
	if n := len(requestsFor(fake, "tag-stranger")) + len(requestsFor(fake, "tag-random")); n != 0 {
		t.Errorf("model requests for refused events = %d, want 0", n)
	}
	if got := srv.BotMessages("C0RANDOM"); len(got) != 0 {
		t.Errorf("bot messages in C0RANDOM = %+v, want none", got)
	}
	refusals := 0
	for _, m := range srv.BotMessages("C0OPS") {
		if strings.Contains(m.Text, refusalText) {
			refusals++
		}
	}
	if refusals != 1 {
		t.Errorf("refusal posts in C0OPS = %d, want 1 (at most one per user per hour)", refusals)
	}

	// The support agent's own budget: the first expensive turn spends $1 of its $0.50, the
	// next support turn is stopped before the model call; #ops goes on.
	p.open(t, sup, p.requester, "expensive question tag-sup1")
	sup.waitMsg(t, "an expensive answer")
	g.logs.waitLine(t, "turn finished", "agent=support", "cost_usd=1") // its usage is in the ledger
	p.open(t, sup, p.requester, "and another tag-sup2")
	sup.waitMsg(t, "the support agent's daily budget of $0.50 is used up")
	p.open(t, ops, p.requester, "still there? tag-ops2")
	ops.waitMsg(t, echoText+"still there? tag-ops2")
	if n := len(requestsFor(fake, "tag-sup2")); n != 0 {
		t.Errorf("model requests of the support turn over budget = %d, want 0", n)
	}

	// /api/turns names each turn's agent, and filters by agent.
	var turns []echogate.TurnRecord
	getJSON(t, g.base+"/api/turns", &turns)
	agentOf := map[string]int{}
	for _, tr := range turns {
		agentOf[tr.Agent]++
	}
	if agentOf["oncall"] != 2 || agentOf["support"] != 2 || agentOf["default"] != 1 || len(turns) != 5 {
		t.Errorf("/api/turns agents = %v over %d turns, want oncall 2, support 2, default 1 (no turn for refused events)", agentOf, len(turns))
	}
	var onlyOps []echogate.TurnRecord
	getJSON(t, g.base+"/api/turns?agent=oncall", &onlyOps)
	if len(onlyOps) != 2 || onlyOps[0].Agent != "oncall" {
		t.Errorf("/api/turns?agent=oncall = %d turns, want the 2 of oncall", len(onlyOps))
	}
	var usage struct {
		ByAgent map[string]echogate.Usage `json:"by_agent"`
	}
	getJSON(t, g.base+"/api/usage", &usage)
	if u := usage.ByAgent; u["support"].CostUSD < 1 || u["oncall"].InputTokens == 0 || u["support"].CostUSD > 1.01 {
		t.Errorf("/api/usage by_agent = %+v, want support's $1 turn and oncall's tokens apart", u)
	}
	waitMetrics(t, g.base, `echogate_access_refused_total{channel="slack",reason="user"} 2`, `echogate_access_refused_total{channel="slack",reason="channel"} 1`,
		`echogate_agent_turns_total{agent="oncall",status="done"} 2`, `echogate_agent_spend_usd_total{agent="support"} 1`)
	var listed []map[string]any
	getJSON(t, g.base+"/api/refusals", &listed)
	if len(listed) != 3 {
		t.Errorf("/api/refusals = %v, want the 3 refused events", listed)
	}
}

// A Discord DM is served by the dm agent; a stranger's DM is refused with no model call.
func TestE2EAgentsDiscordDM(t *testing.T) {
	fake, vars := newAgentsModel(t)
	p, srv := newDiscordPlatform(t)
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, agentsYAML)
	p.waitFor(t, "the gateway connection", srv.Connected)
	ann := discordtest.User{ID: p.requester, Username: "ann"}
	bob := discordtest.User{ID: p.stranger, Username: "bob"}

	srv.SendDM(ann, "hello dm agent tag-dm")
	p.waitFor(t, "the DM answer", func() bool {
		return hasContent(srv.BotMessages(srv.DMChannel(ann.ID)), echoText+"hello dm agent tag-dm")
	})
	reqs := requestsFor(fake, "tag-dm")
	if len(reqs) != 1 || !strings.HasPrefix(systemOf(reqs[0]), dmPrompt) || reqs[0].Model != "gpt-4o" {
		t.Fatalf("model requests for the DM = %+v, want one with the dm agent's prompt and model gpt-4o", reqs)
	}

	srv.SendDM(bob, "hi bot tag-bob")
	p.waitFor(t, "the refusal", func() bool { return hasContent(srv.BotMessages(srv.DMChannel(bob.ID)), refusalText) })
	g.logs.waitLine(t, "access refused", "user=discord:"+bob.ID, "reason=user")
	if n := len(requestsFor(fake, "tag-bob")); n != 0 {
		t.Errorf("model requests for the stranger's DM = %d, want 0", n)
	}
	var turns []echogate.TurnRecord
	getJSON(t, g.base+"/api/turns", &turns)
	if len(turns) != 1 || turns[0].Agent != "dm" {
		t.Errorf("/api/turns = %+v, want the one turn of agent dm", turns)
	}
}

// hasContent reports whether one of ms reads text (the invisible reply marker aside).
func hasContent(ms []discordtest.Message, text string) bool {
	for _, m := range ms {
		if discord.VisibleText(m.Content) == text {
			return true
		}
	}
	return false
}

// SIGHUP reloads access and agents; a bad file is refused and the old configuration keeps
// serving; a good one is applied to the next turn; an edited file is reloaded on its own.
func TestE2EReloadOnSIGHUP(t *testing.T) {
	fake, vars := newAgentsModel(t)
	p, srv := newSlackPlatform(t)
	for k, v := range p.vars {
		vars[k] = v
	}
	vars["ECHOGATE_DATA_DIR"] = t.TempDir()
	path := filepath.Join(t.TempDir(), "echogate.yaml")
	write := func(yaml string) {
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(agentsYAML)
	g := startBinaryGateway(t, vars, path)
	p.waitFor(t, "the socket mode connection", func() bool { return srv.OpenConnections() == 1 })
	ops := &conv{p: p, ch: "C0OPS"}
	ask := func(tag string) agenttest.ChatRequest {
		t.Helper()
		p.open(t, ops, p.requester, "question "+tag)
		ops.waitMsg(t, echoText+"question "+tag)
		reqs := requestsFor(fake, tag)
		if len(reqs) != 1 {
			t.Fatalf("model requests for %s = %d, want 1", tag, len(reqs))
		}
		return reqs[0]
	}
	if r := ask("tag-before"); !strings.HasPrefix(systemOf(r), opsPrompt) {
		t.Fatalf("before the reload: system %q, want the oncall prompt", firstLine(systemOf(r)))
	}

	// A bad file: an agent's tool pattern that matches no tool.
	write(strings.Replace(agentsYAML, "tools: [current_time]", "tools: [pagr__*]", 1))
	g.signal(syscall.SIGHUP)
	g.logs.waitLine(t, "configuration reload refused", "trigger=SIGHUP", `agents.oncall.tools: \"pagr__*\" matches no tool`)
	if r := ask("tag-after-bad"); !strings.HasPrefix(systemOf(r), opsPrompt) || !slices.Equal(offeredTools(r), []string{"current_time"}) {
		t.Errorf("after the refused reload: system %q, tools %v; want the old oncall agent", firstLine(systemOf(r)), offeredTools(r))
	}

	// A good file: a new prompt for #ops, applied to the next turn.
	write(strings.Replace(agentsYAML, opsPrompt, "You are the NEW on-call helper.", 1))
	g.signal(syscall.SIGHUP)
	g.logs.waitLine(t, "configuration reloaded", "trigger=SIGHUP")
	if r := ask("tag-after-good"); !strings.HasPrefix(systemOf(r), "You are the NEW on-call helper.") {
		t.Errorf("after the reload: system %q, want the new prompt", firstLine(systemOf(r)))
	}

	// An edited file is reloaded without a signal (this edit also drops the dm agent, which
	// tells its reload apart from one of the file written before the SIGHUP above).
	edited := strings.Replace(agentsYAML, opsPrompt, "You are the EDITED on-call helper.", 1)
	write(edited[:strings.Index(edited, "  - name: dm")])
	g.logs.waitLine(t, "configuration reloaded", `trigger="file changed"`, "agents=2")
	if r := ask("tag-after-edit"); !strings.HasPrefix(systemOf(r), "You are the EDITED on-call helper.") {
		t.Errorf("after the file changed: system %q, want the edited prompt", firstLine(systemOf(r)))
	}
}
