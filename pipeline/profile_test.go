package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

func toolNames(req agent.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func slackMsg(channel, user, text string) echogate.InboundEvent {
	return echogate.InboundEvent{ID: fmt.Sprintf("sev%d", evSeq.Add(1)), Kind: echogate.KindMention, Text: text,
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: "T1", Channel: channel},
		Actor:        echogate.Actor{ID: user}}
}

func withSlack(rep *pipelinetest.Replier) func(*pipeline.Deps) {
	return func(d *pipeline.Deps) { d.Repliers[echogate.PlatformSlack] = rep }
}

// The agent whose match fits the place serves the turn: its prompt, model and tools reach the
// model, and the turn record names it; other places get the top-level agent.
func TestAgentByPlace(t *testing.T) {
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	cfg := pipeline.Config{SystemPrompt: "You are the general helper.", Model: "gpt-4o-mini", Agents: pipeline.Agents{
		List: []pipeline.Profile{
			{Name: "oncall", Match: []string{"slack:COPS"}, SystemPrompt: "You are the on-call helper.", Model: "gpt-4o",
				Tools: []string{"pager__*", "current_time"}},
		},
	}}
	h := start(t, opts{cfg: cfg, deps: withSlack(slack), tools: []tools.Tool{newTool("current_time", tools.Safe, "noon"),
		newTool("pager__page", tools.Safe, "paged"), newTool("http_fetch", tools.Safe, "page")}},
		agenttest.Reply("ops answer"), agenttest.Reply("web answer"))

	h.submit(slackMsg("COPS", "U1", "is prod down?"))
	<-slack.Done
	h.submit(msg("w1", "ann", "hello"))
	h.waitDone()

	reqs := h.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	for i, tt := range []struct {
		prompt, model string
		tools         []string
	}{
		{"You are the on-call helper.", "gpt-4o", []string{"current_time", "pager__page"}}, // no plan: not in its tools
		{"You are the general helper.", "gpt-4o-mini", []string{"current_time", "http_fetch", "pager__page", "plan"}},
	} {
		r := reqs[i]
		if !strings.HasPrefix(r.Messages[0].Content, tt.prompt) || r.Model != tt.model || !slices.Equal(toolNames(r), tt.tools) {
			t.Errorf("request %d = prompt %q, model %s, tools %v; want prompt %q, model %s, tools %v", i,
				oneLine(r.Messages[0].Content), r.Model, toolNames(r), tt.prompt, tt.model, tt.tools)
		}
	}
	if reqs[0].Hints.Override != "gpt-4o" || reqs[1].Hints.Override != "" {
		t.Errorf("hints overrides = %q, %q; want the oncall agent's model pinned, none for the default agent", reqs[0].Hints.Override, reqs[1].Hints.Override)
	}
	turns, err := h.store.ListTurns(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	agents := map[echogate.SessionKey]string{}
	for _, tr := range turns {
		agents[tr.Session] = tr.Agent
	}
	if agents["slack:COPS"] != "oncall" || agents["web:w1"] != pipeline.DefaultAgent {
		t.Errorf("turn agents = %v, want slack:COPS → oncall, web:w1 → default", agents)
	}
	usage, err := h.store.ListUsage(context.Background(), echogate.UsageFilter{Agent: "oncall"}, 0)
	if err != nil || len(usage) != 1 || usage[0].Session != "slack:COPS" {
		t.Errorf("ledger entries of agent oncall = %+v, %v; want the one of slack:COPS", usage, err)
	}
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// A call of a tool outside the agent's allow-list is refused even if the model asks for it.
func TestAgentToolCallOutsideAllowList(t *testing.T) {
	fetch := newTool("http_fetch", tools.Safe, "secret page")
	cfg := pipeline.Config{Agents: pipeline.Agents{List: []pipeline.Profile{{Name: "web", Match: []string{"web"}, Tools: []string{"current_time"}}}}}
	h := start(t, opts{cfg: cfg, tools: []tools.Tool{fetch, newTool("current_time", tools.Safe, "noon")}},
		agenttest.CallTool("http_fetch", `{"url":"https://example.com"}`), agenttest.Reply("done"))
	h.submit(msg("w", "ann", "fetch it"))
	h.waitDone()
	if n := fetch.calls.Load(); n != 0 {
		t.Errorf("http_fetch ran %d times, want 0 (not in the agent's tools)", n)
	}
	reqs := h.model.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1]; got.Role != echogate.RoleTool || !got.IsError || !strings.Contains(got.Content, "http_fetch") {
		t.Errorf("tool result = %+v, want the call of http_fetch refused", got)
	}
}

// The agent's own budget stops its turns before the model is called; another agent's turns
// go on.
func TestAgentBudget(t *testing.T) {
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	spent := errors.New("spent")
	cfg := pipeline.Config{Agents: pipeline.Agents{List: []pipeline.Profile{
		{Name: "docs", Match: []string{"slack:CDOCS"}, Budget: budgetFn(func(ctx context.Context, s cost.Scope, req agent.Request) error {
			return fmt.Errorf("the docs agent's limit is used up: %w (%w)", agent.ErrBudget, spent)
		})},
	}}}
	h := start(t, opts{cfg: cfg, deps: withSlack(slack)}, agenttest.Reply("ops answer"))
	h.submit(slackMsg("CDOCS", "U1", "where is the handbook?"))
	<-slack.Done
	h.submit(slackMsg("COPS", "U1", "is prod down?"))
	<-slack.Done
	if n := h.model.Calls(); n != 1 {
		t.Fatalf("model calls = %d, want 1 (only the ops question)", n)
	}
	texts := strings.Join(slack.Texts(), " | ")
	if !strings.Contains(texts, "docs agent's limit") || !strings.Contains(texts, "ops answer") {
		t.Errorf("posts = %q, want the docs budget notice and the ops answer", texts)
	}
}

// A stranger is refused before anything is recorded: no model call, no transcript, no turn;
// the refusal text is sent once per hour; a channel outside access.channels stays silent.
func TestAccessRefusal(t *testing.T) {
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	rules := access.Rules{DMs: true, Users: []string{"slack:UOK"}, Channels: []string{"slack:COPS"}, Refusal: "Sorry, I only work for the ops team."}
	h := start(t, opts{cfg: pipeline.Config{Access: &rules}, deps: withSlack(slack)}, agenttest.Reply("ok"))

	h.submit(slackMsg("COPS", "USTRANGER", "hi"))
	h.submit(slackMsg("COPS", "USTRANGER", "hi again"))
	h.submit(slackMsg("CRANDOM", "UOK", "hi from random"))
	if got := slack.Texts(); !slices.Equal(got, []string{rules.Refusal}) {
		t.Errorf("posts = %q, want the refusal text once", got)
	}
	h.advance(61 * 60e9)
	h.submit(slackMsg("COPS", "USTRANGER", "an hour later"))
	if got := slack.Texts(); len(got) != 2 {
		t.Errorf("posts after an hour = %q, want the refusal a second time", got)
	}
	h.submit(slackMsg("COPS", "UOK", "is prod down?"))
	<-slack.Done
	if n := h.model.Calls(); n != 1 {
		t.Errorf("model calls = %d, want 1 (the allowed user's)", n)
	}
	turns, _ := h.store.ListTurns(context.Background(), "", 0)
	if len(turns) != 1 || turns[0].UserID != "slack:UOK" {
		t.Errorf("turns = %+v, want only the allowed user's", turns)
	}
	ref := h.p.Refusals()
	if len(ref) != 4 || ref[0].Reason != "user" || ref[1].Reason != "channel" || ref[1].Place != "slack:CRANDOM" ||
		!ref[0].Replied || ref[1].Replied || ref[2].Replied || !ref[3].Replied {
		t.Errorf("refusals = %+v, want 4, newest first (user, channel, user, user), the newest and the oldest replied", ref)
	}
}

// A running turn finishes under the profile it started with; the next turn uses the new one;
// an invalid set is refused and the old one stays.
func TestSetAgentsWhileRunning(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	slow := &funcTool{spec: tools.Spec{Name: "slow", Safety: tools.Safe}, fn: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		close(started)
		<-release
		return tools.Result{Content: "slow result"}, nil
	}}
	old := pipeline.Agents{List: []pipeline.Profile{{Name: "a", Match: []string{"web"}, SystemPrompt: "OLD PROMPT"}}}
	h := start(t, opts{cfg: pipeline.Config{Agents: old}, tools: []tools.Tool{slow}},
		agenttest.CallTool("slow", `{}`), agenttest.Reply("first"), agenttest.Reply("second"))
	h.submit(msg("w", "ann", "go slow"))
	<-started

	if err := h.p.SetAgents(pipeline.Agents{List: []pipeline.Profile{{Name: "x"}, {Name: "x"}}}); err == nil {
		t.Error("SetAgents(two agents named x) = nil, want an error")
	}
	if err := h.p.SetAgents(pipeline.Agents{List: []pipeline.Profile{{Name: "b", Match: []string{"web"}, SystemPrompt: "NEW PROMPT"}}}); err != nil {
		t.Fatal(err)
	}
	close(release)
	h.waitDone()
	h.submit(msg("w", "ann", "again"))
	h.waitDone()
	reqs := h.model.Requests()
	var prompts []string
	for _, r := range reqs {
		prompts = append(prompts, oneLine(r.Messages[0].Content))
	}
	if !slices.Equal(prompts, []string{"OLD PROMPT", "OLD PROMPT", "NEW PROMPT"}) {
		t.Errorf("system prompts = %q, want the running turn's two calls under the old agent, then the new one", prompts)
	}
	if got := h.p.Agents().List[0].Name; got != "b" {
		t.Errorf("Agents after the refused and the good reload = %s, want b", got)
	}
}

// kindProvider is a context provider of one kind that records the channel it was asked about.
type kindProvider struct {
	kind     string
	channels chan string
}

func (k kindProvider) ContextKind() string { return k.kind }

// versionedKind is a standing provider (like the memory snapshot): its section is frozen in the
// system prompt per session.
type versionedKind struct{ kindProvider }

func (versionedKind) ContextVersion(echogate.ContextQuery) uint64 { return 1 }

// systemText joins a request's system messages (the system prompt and the turn's note).
func systemText(r agent.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == echogate.RoleSystem {
			b.WriteString(m.Content + "\n")
		}
	}
	return b.String()
}
func (k kindProvider) ContextSection(ctx context.Context, q echogate.ContextQuery) (string, string, error) {
	k.channels <- q.Channel
	return k.kind + " section", "SECTION-" + k.kind, nil
}

// An agent switches memory and knowledge off (sections and tools), or keeps memory to the
// user's own.
func TestAgentContextSwitches(t *testing.T) {
	off, scoped := false, true
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	mem, kb := kindProvider{"memory", make(chan string, 8)}, kindProvider{"knowledge", make(chan string, 8)}
	cfg := pipeline.Config{Agents: pipeline.Agents{List: []pipeline.Profile{
		{Name: "bare", Match: []string{"slack:CBARE"}, Memory: &off, Knowledge: &off},
		{Name: "own", Match: []string{"slack:COWN"}, Memory: &scoped, MemoryScope: "user"},
	}}}
	h := start(t, opts{cfg: cfg, tools: []tools.Tool{newTool("remember", tools.Safe, ""), newTool("knowledge_search", tools.Safe, ""), newTool("current_time", tools.Safe, "")},
		deps: func(d *pipeline.Deps) {
			withSlack(slack)(d)
			d.Context = []pipeline.ContextProvider{versionedKind{mem}, kb}
		}}, agenttest.Reply("a"), agenttest.Reply("b"), agenttest.Reply("c"))
	for _, ch := range []string{"CBARE", "COWN", "CALL"} {
		h.submit(slackMsg(ch, "U1", "hi "+ch))
		<-slack.Done
	}
	reqs := h.model.Requests()
	bare, own, all := reqs[0], reqs[1], reqs[2]
	if s := systemText(bare); strings.Contains(s, "SECTION-") || slices.Contains(toolNames(bare), "remember") || slices.Contains(toolNames(bare), "knowledge_search") {
		t.Errorf("bare agent: system %q, tools %v; want no memory or knowledge section or tool", s, toolNames(bare))
	}
	if s := systemText(all); !strings.Contains(all.Messages[0].Content, "SECTION-memory") || !strings.Contains(s, "SECTION-knowledge") || !slices.Contains(toolNames(all), "remember") {
		t.Errorf("default agent: system %q, tools %v; want both sections and the tools", s, toolNames(all))
	}
	if !strings.Contains(own.Messages[0].Content, "SECTION-memory") {
		t.Errorf("own agent: system %q, want the memory section", own.Messages[0].Content)
	}
	close(mem.channels)
	var asked []string
	for c := range mem.channels {
		asked = append(asked, c)
	}
	if !slices.Equal(asked, []string{"", "slack:CALL"}) {
		t.Errorf("memory provider asked about channels %q, want \"\" for the user-scoped agent, slack:CALL for the default", asked)
	}
}

func TestAgentsServing(t *testing.T) {
	a := pipeline.Agents{Default: pipeline.Profile{Name: "default"}, List: []pipeline.Profile{
		{Name: "ops", Match: []string{"slack:C1", "discord:guild:111"}},
		{Name: "dms", Match: []string{"slack:dm", "discord:dm"}},
		{Name: "slack", Match: []string{"slack:*"}},
		{Name: "web", Match: []string{"web"}},
	}}
	for _, tt := range []struct {
		c    echogate.ConversationRef
		want string
	}{
		{echogate.ConversationRef{Platform: "slack", Workspace: "T", Channel: "C1", Thread: "1.1"}, "ops"},
		{echogate.ConversationRef{Platform: "discord", Workspace: "111", Channel: "9"}, "ops"},
		{echogate.ConversationRef{Platform: "discord", Workspace: "222", Channel: "9"}, "default"},
		{echogate.ConversationRef{Platform: "slack", Workspace: "T", Channel: "D1", DM: true}, "dms"},
		{echogate.ConversationRef{Platform: "discord", Channel: "77", DM: true}, "dms"},
		{echogate.ConversationRef{Platform: "slack", Workspace: "T", Channel: "C2"}, "slack"},
		{echogate.ConversationRef{Platform: "web", Channel: "s", DM: true}, "web"},
		{echogate.ConversationRef{Platform: "console", Channel: "c", DM: true}, "default"},
	} {
		if got := a.Serving(tt.c); got != tt.want {
			t.Errorf("Serving(%+v) = %s, want %s", tt.c, got, tt.want)
		}
	}
	for name, bad := range map[string]pipeline.Agents{
		"duplicate":       {List: []pipeline.Profile{{Name: "a", Match: []string{"web"}}, {Name: "a", Match: []string{"web"}}}},
		"no match":        {List: []pipeline.Profile{{Name: "a"}}},
		"model and route": {List: []pipeline.Profile{{Name: "a", Match: []string{"web"}, Model: "m", Route: "r"}}},
		"bad glob":        {List: []pipeline.Profile{{Name: "a", Match: []string{"slack:["}}}},
		"named default":   {List: []pipeline.Profile{{Name: "default", Match: []string{"web"}}}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: Validate = nil, want an error", name)
		}
	}
}

// An agent's approvers decide its turns' approvals; a paused turn resumes under its own agent
// even when a reload gave its place to another one.
func TestAgentApproversAndResume(t *testing.T) {
	del := newTool("delete_file", tools.Sensitive, "deleted")
	ops := pipeline.Profile{Name: "ops", Match: []string{"web"}, Approvers: []string{"web:lead"}}
	h := start(t, opts{cfg: pipeline.Config{Agents: pipeline.Agents{List: []pipeline.Profile{ops}}}, tools: []tools.Tool{del}},
		agenttest.CallTool("delete_file", `{"path":"a"}`), agenttest.Reply("gone"))
	h.submit(msg("s1", "ann", "delete a"))
	if d := h.waitDone(); d.Status != "paused" {
		t.Fatalf("status = %s, want paused", d.Status)
	}
	p := promptOf(t, h)
	ops.Match = []string{"slack:C1"}
	if err := h.p.SetAgents(pipeline.Agents{List: []pipeline.Profile{ops, {Name: "other", Match: []string{"web"}}}}); err != nil {
		t.Fatal(err)
	}
	h.submit(reaction("s1", "bob", echogate.ReactionApprove, p.Ref)) // not an approver: ignored
	h.submit(reaction("s1", "lead", echogate.ReactionApprove, p.Ref))
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("after the ops approver's ✅: %+v", d)
	}
	if n := del.calls.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
	turns, _ := h.store.ListTurns(context.Background(), "web:s1", 0)
	for _, tr := range turns {
		if tr.Agent != "ops" {
			t.Errorf("turn %s (%s) agent = %s, want ops (the resumed turn keeps its agent)", tr.ID, tr.Status, tr.Agent)
		}
	}
}
