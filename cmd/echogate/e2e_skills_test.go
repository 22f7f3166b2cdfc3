package main

// End-to-end tests of skills (SPEC "Skills") through the real Slack adapter, the Slack fake and
// the OpenAI-wire fake: the catalogue in each agent's system prompt, the skill and skill_file
// tools, the per-agent allow-list, scripts behind skills.allow_scripts and run_command's
// approval, and skills.lock at start and on reload.

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/admin"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/tools/skills"
)

// newSkillsModel is an OpenAI-wire fake: a user message "call TOOL {json} [tag]" calls TOOL
// with those arguments; after a tool result it answers "tool said: " and the result; anything
// else is echoed.
func newSkillsModel(t *testing.T) (*agenttest.FakeOpenAI, map[string]string) {
	t.Helper()
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{APIKey: "sk-e2e"})
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		if last := req.Last(); last.Role == "tool" {
			return agenttest.TextAnswer("tool said: " + oneLine(last.Content, 80)), true
		}
		text := req.LastUser()
		if i := strings.Index(text, "call "); i >= 0 {
			rest := text[i+len("call "):]
			name, _, _ := strings.Cut(rest, " ")
			args := rest[strings.IndexByte(rest, '{') : strings.LastIndexByte(rest, '}')+1]
			return agenttest.ToolAnswer(echogate.ToolCall{Name: name, Arguments: args}), true
		}
		return agenttest.TextAnswer(echoText + text), true
	})
	t.Cleanup(fake.Close)
	return fake, map[string]string{"OPENAI_BASE_URL": fake.URL(), "OPENAI_API_KEY": "sk-e2e"}
}

// toolResult returns the content of the tool message the model received in the conversation
// whose user message contains tag.
func toolResult(t *testing.T, fake *agenttest.FakeOpenAI, tag string) string {
	t.Helper()
	for _, r := range requestsFor(fake, tag) {
		if last := r.Last(); last.Role == "tool" {
			return last.Content
		}
	}
	t.Fatalf("no tool result reached the model for %s", tag)
	return ""
}

// skillsGateway writes dir/echogate.yaml (yaml plus the Slack agents below), installs the
// example skills under dir/skills, and starts the gateway with the Slack fake.
type skillsEnv struct {
	dir  string
	fake *agenttest.FakeOpenAI
	p    *platform
	g    *e2eGateway
	ops  *conv // oncall: skills [incident-*]
	sup  *conv // support: skills []
	gen  *conv // the top-level agent: every skill
}

const skillAgentsYAML = `
agents:
  - name: oncall
    match: [slack:C0OPS]
    skills: [incident-*]
  - name: support
    match: [slack:C0SUP]
    skills: []
`

func startSkillsGateway(t *testing.T, dir, yaml string) *skillsEnv {
	t.Helper()
	fake, vars := newSkillsModel(t)
	p, srv := newSlackPlatform(t)
	for k, v := range p.vars {
		vars[k] = v
	}
	path := filepath.Join(dir, "echogate.yaml")
	if err := os.WriteFile(path, []byte(skillAgentsYAML+yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGatewayFile(t, vars, path)
	p.waitFor(t, "the socket mode connection", func() bool { return srv.OpenConnections() == 1 })
	return &skillsEnv{dir: dir, fake: fake, p: p, g: g,
		ops: &conv{p: p, ch: "C0OPS"}, sup: &conv{p: p, ch: "C0SUP"}, gen: &conv{p: p, ch: "C0GEN"}}
}

// ask opens a thread in c with text and waits for the bot's answer containing want.
func (s *skillsEnv) ask(t *testing.T, c *conv, text, want string) {
	t.Helper()
	s.p.open(t, c, s.p.requester, text)
	c.waitMsg(t, want)
}

// TestE2ESkillsCatalogueAndTools: the agent's first system message lists its skills (and only
// them), byte-identical on the next turn; the skill tool returns the body; skill_file serves a
// file of the skill and refuses ../, absolute paths and a symlink leading outside; an agent
// without a skill neither sees nor loads it; loads are counted per skill and agent.
func TestE2ESkillsCatalogueAndTools(t *testing.T) {
	dir := t.TempDir()
	installSkills(t, dir)
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-TOKEN\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "skills", "incident-runbook", "references", "outside.md")); err != nil {
		t.Fatal(err)
	}
	s := startSkillsGateway(t, dir, "")

	// The catalogue: the oncall agent's lists incident-runbook only, the same bytes next turn.
	s.ask(t, s.ops, "hello [sk-1]", echoText+"hello [sk-1]")
	s.p.say(t, s.ops, s.p.requester, "again [sk-1b]")
	s.ops.waitMsg(t, echoText+"again [sk-1b]")
	first, second := requestsFor(s.fake, "[sk-1]"), requestsFor(s.fake, "[sk-1b]")
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("model requests for [sk-1]/[sk-1b] = %d/%d, want 1/1", len(first), len(second))
	}
	sys := systemOf(first[0])
	if !containsAll(sys, "## Skills\n", "- incident-runbook: Guides the on-call engineer") || strings.Contains(sys, "sql-style") {
		t.Errorf("oncall's first system message = %q, want the catalogue with incident-runbook only", sys)
	}
	if got := systemOf(second[0]); got != sys {
		t.Errorf("oncall's system message on the next turn differs:\nfirst  %q\nsecond %q", sys, got)
	}
	if tools := offeredTools(first[0]); !containsAll(strings.Join(tools, " "), "skill", "skill_file") {
		t.Errorf("oncall's tools = %v, want skill and skill_file", tools)
	}
	// The top-level agent has every skill; support ([]) none, and no skill tools.
	s.ask(t, s.gen, "hello [sk-2]", echoText+"hello [sk-2]")
	if sys := systemOf(requestsFor(s.fake, "[sk-2]")[0]); !containsAll(sys, "- incident-runbook: ", "- sql-style: ") {
		t.Errorf("default agent's system message = %q, want both skills", sys)
	}
	s.ask(t, s.sup, "hello [sk-3]", echoText+"hello [sk-3]")
	supReq := requestsFor(s.fake, "[sk-3]")[0]
	if sys := systemOf(supReq); strings.Contains(sys, "Skills") {
		t.Errorf("support's system message = %q, want no skill catalogue", sys)
	}
	for _, tl := range offeredTools(supReq) {
		if strings.HasPrefix(tl, "skill") {
			t.Errorf("support is offered %s, want no skill tool", tl)
		}
	}

	for _, tt := range []struct {
		c          *conv
		tag, call  string
		want, deny []string
	}{
		{s.ops, "[sk-4]", `call skill {"name":"incident-runbook"}`, []string{"# Incident runbook", "references/severity.md"}, nil},
		{s.ops, "[sk-5]", `call skill_file {"name":"incident-runbook","path":"references/severity.md"}`, []string{"SEV1"}, nil},
		{s.ops, "[sk-6]", `call skill_file {"name":"incident-runbook","path":"../sql-style/SKILL.md"}`, []string{"skill_file"}, []string{sqlStyleBody}},
		{s.ops, "[sk-7]", `call skill_file {"name":"incident-runbook","path":"` + secret + `"}`, []string{"skill_file"}, []string{"TOP-SECRET"}},
		{s.ops, "[sk-8]", `call skill_file {"name":"incident-runbook","path":"references/outside.md"}`, []string{"skill_file"}, []string{"TOP-SECRET"}},
		{s.ops, "[sk-9]", `call skill {"name":"sql-style"}`, []string{`unknown skill "sql-style"`, "incident-runbook"}, []string{sqlStyleBody}},
		{s.sup, "[sk-10]", `call skill {"name":"incident-runbook"}`, []string{`unknown tool "skill"`}, []string{"# Incident runbook"}},
		{s.gen, "[sk-11]", `call skill {"name":"sql-style"}`, []string{sqlStyleBody}, nil},
	} {
		s.ask(t, tt.c, tt.call+" "+tt.tag, "tool said:")
		got := toolResult(t, s.fake, tt.tag)
		if !containsAll(got, tt.want...) {
			t.Errorf("%s %s: tool result = %q, want it to contain %q", tt.tag, tt.call, got, tt.want)
		}
		for _, d := range tt.deny {
			if strings.Contains(got, d) {
				t.Errorf("%s %s: tool result = %q, must not contain %q", tt.tag, tt.call, got, d)
			}
		}
	}
	waitMetrics(t, s.g.base, `echogate_skill_loads_total{agent="oncall",skill="incident-runbook"} 1`,
		`echogate_skill_loads_total{agent="default",skill="sql-style"} 1`)

	// The turn record names the skills the turn loaded (a refused name is not a load), in
	// /api/turns and in the turn's detail.
	var turns []echogate.TurnRecord
	getJSON(t, s.g.base+"/api/turns?agent=oncall", &turns)
	loaded := map[string]string{}
	for _, tr := range turns {
		var d admin.TurnDetail
		getJSON(t, s.g.base+"/api/turns/detail?id="+tr.ID, &d)
		if !slices.Equal(d.Turn.Skills, tr.Skills) {
			t.Errorf("turn %s: detail skills %q, list skills %q; want the same", tr.ID, d.Turn.Skills, tr.Skills)
		}
		for _, m := range d.Messages {
			for _, tag := range []string{"[sk-4]", "[sk-9]"} {
				if m.Message.Role == echogate.RoleUser && strings.Contains(m.Message.Content, tag) {
					loaded[tag] = strings.Join(tr.Skills, ",")
				}
			}
		}
	}
	if want := map[string]string{"[sk-4]": "incident-runbook", "[sk-9]": ""}; !maps.Equal(loaded, want) {
		t.Errorf("turn detail skills by turn = %v, want %v", loaded, want)
	}

	// The console's view: each skill with the agents that have it.
	var view admin.SkillsView
	getJSON(t, s.g.base+"/api/skills", &view)
	got := map[string]string{}
	for _, sk := range view.Skills {
		got[sk.Name] = strings.Join(sk.Agents, ",")
	}
	if want := map[string]string{"incident-runbook": "oncall,default", "sql-style": "default"}; !maps.Equal(got, want) {
		t.Errorf("GET /api/skills agents = %v, want %v", got, want)
	}
}

// TestE2ESkillScripts: with skills.allow_scripts off a skill's script is refused, the reason
// naming the setting, before any approval; with it on, the script runs through run_command
// and asks for approval first — an approver's, as for every run_command call, since it is
// destructive. An agent without the skill cannot run its script either way.
func TestE2ESkillScripts(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "allow_scripts off", true: "allow_scripts on"}[allow], func(t *testing.T) {
			dir := t.TempDir()
			installSkills(t, dir)
			yaml := "tools:\n  run_command: {allowed: [ls]}\nskills:\n  allow_scripts: false\n"
			if allow {
				yaml = "skills:\n  allow_scripts: true\napproval: {approvers: [slack:U0LEAD]}\n"
			}
			s := startSkillsGateway(t, dir, yaml)
			script := filepath.Join(dir, "skills", "incident-runbook", "scripts", "collect-status.sh")
			call := `call run_command {"command":"` + script + `"}`
			if !allow {
				s.ask(t, s.ops, call+" [sc-1]", "tool said:")
				if got := toolResult(t, s.fake, "[sc-1]"); !containsAll(got, "skills.allow_scripts", "incident-runbook") {
					t.Errorf("script with allow_scripts off: tool result = %q, want a refusal naming skills.allow_scripts", got)
				}
				if len(s.ops.find("Approval needed")) > 0 {
					t.Errorf("script with allow_scripts off asked for approval:\n%s", s.ops.transcript())
				}
				return
			}
			s.p.open(t, s.ops, s.p.requester, call+" [sc-2]")
			prompt := s.ops.waitPrompt(t, "run_command")
			s.p.react(t, s.ops, prompt.ID, "U0LEAD", echogate.ReactionApprove)
			s.ops.waitMsg(t, "tool said:")
			if got := toolResult(t, s.fake, "[sc-2]"); !strings.Contains(got, "time: ") {
				t.Errorf("approved script: tool result = %q, want the script's output", got)
			}
			// The support agent has no skill: its script is not a command it may run.
			s.ask(t, s.sup, call+" [sc-3]", "tool said:")
			if got := toolResult(t, s.fake, "[sc-3]"); !strings.Contains(got, "not run") || strings.Contains(got, "time: ") {
				t.Errorf("support running the skill's script: tool result = %q, want a refusal", got)
			}
		})
	}
}

// TestE2ESkillsLockRefusesChangedFile: with skills.lock present, a skill whose file changed is
// refused at start and on reload, the error naming the skill and the file; the other skills
// serve, and after a reload with the file restored the skill is back. A skill that does not
// validate is logged at start naming the file, the field and the fix.
func TestE2ESkillsLockRefusesChangedFile(t *testing.T) {
	dir := t.TempDir()
	installSkills(t, dir)
	set, ps := skills.Scan(skills.Config{Base: dir})
	if len(ps) > 0 {
		t.Fatalf("example skills: %v", ps)
	}
	if err := skills.WriteLock(filepath.Join(dir, "skills.lock"), set); err != nil {
		t.Fatal(err)
	}
	sev := filepath.Join(dir, "skills", "incident-runbook", "references", "severity.md")
	orig, err := os.ReadFile(sev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sev, []byte("SEV1: whatever the reporter says.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A skill that does not validate is skipped with a startup line naming file, field and fix.
	writeSkill(t, dir, "broken", "---\nname: Broken_Skill\ndescription: x\n---\nbody\n")
	s := startSkillsGateway(t, dir, "")
	s.g.logs.waitLine(t, "skills: refused", "incident-runbook", "references/severity.md changed", "when=start")
	s.g.logs.waitLine(t, "skills: refused", filepath.Join("skills", "broken", "SKILL.md"), "field=name", "fix=")
	catalogue := func(tag string) string {
		s.ask(t, s.gen, "hello "+tag, echoText+"hello "+tag)
		return systemOf(requestsFor(s.fake, tag)[0])
	}
	if sys := catalogue("[lk-1]"); strings.Contains(sys, "incident-runbook") || !strings.Contains(sys, "sql-style") {
		t.Errorf("system message with a changed, locked skill = %q, want sql-style only", sys)
	}

	// Restored and reloaded (the configuration file changed): the skill is back.
	if err := os.WriteFile(sev, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	touchConfig(t, dir, "# reload 1\n")
	s.g.logs.waitLine(t, "configuration reloaded") // after the skills were swapped (reload.go)
	if sys := catalogue("[lk-2]"); !strings.Contains(sys, "- incident-runbook: ") {
		t.Errorf("system message after a reload with the file restored = %q, want incident-runbook back", sys)
	}

	// Changed again: refused on reload, naming the file.
	if err := os.WriteFile(sev, []byte("changed again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	touchConfig(t, dir, "# reload 2\n")
	s.g.logs.waitLine(t, "skills: refused", "incident-runbook", "references/severity.md changed", "when=reload")
	if sys := catalogue("[lk-3]"); strings.Contains(sys, "incident-runbook") {
		t.Errorf("system message after a reload with a changed file = %q, want no incident-runbook", sys)
	}
}

// touchConfig appends a line to dir/echogate.yaml, which the gateway reloads.
func touchConfig(t *testing.T, dir, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "echogate.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}
