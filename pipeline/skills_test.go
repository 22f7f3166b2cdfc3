package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/skills"
)

// skillLibrary loads skills written from name → SKILL.md into a temp folder.
func skillLibrary(t *testing.T, mds map[string]string) (*skills.Library, []tools.Tool) {
	t.Helper()
	dir := t.TempDir()
	for name, md := range mds {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, ps := skills.Load(skills.Config{Dirs: []string{dir}})
	if len(ps) > 0 {
		t.Fatalf("skills: %v", ps)
	}
	lib := skills.NewLibrary(set)
	st, err := skills.NewSkillTool(lib)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := skills.NewFileTool(lib, skills.ToolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return lib, []tools.Tool{st, ft}
}

// TestActiveSkillNarrowsTools: once a turn loaded a skill whose allowed-tools lists only
// lookup, a call of another tool is denied naming the skill, lookup still runs, and a tool the
// agent does not have stays unavailable even though the skill lists it (narrow, never widen).
// The tools offered to the model do not change mid-turn (the cached prefix stays).
func TestActiveSkillNarrowsTools(t *testing.T) {
	lib, skillTools := skillLibrary(t, map[string]string{
		"narrow": "---\nname: narrow\ndescription: Looks things up only.\nallowed-tools: lookup admin\n---\nUse lookup.\n",
	})
	lookup := newTool("lookup", tools.Safe, "found it")
	other := newTool("other", tools.Safe, "other ran")
	admin := newTool("admin", tools.Safe, "admin ran")
	h := start(t, opts{tools: append(skillTools, lookup, other, admin),
		cfg:  pipeline.Config{Agents: pipeline.Agents{Default: pipeline.Profile{Tools: []string{"skill", "skill_file", "lookup", "other"}}}},
		deps: func(d *pipeline.Deps) { d.Skills = lib }},
		agenttest.CallTool("other", `{}`), // before any skill: allowed
		agenttest.CallTool("skill", `{"name":"narrow"}`),
		agenttest.CallTool("other", `{}`),
		agenttest.CallTool("lookup", `{}`),
		agenttest.CallTool("admin", `{}`),
		agenttest.Reply("done"))
	h.submit(msg("s1", "ann", "look it up"))
	if d := h.waitDone(); d.Status != "done" {
		t.Fatalf("turn = %+v, want done", d)
	}
	if n := other.calls.Load(); n != 1 {
		t.Errorf("other ran %d times, want 1 (before the skill only)", n)
	}
	if n := lookup.calls.Load(); n != 1 {
		t.Errorf("lookup ran %d times, want 1", n)
	}
	if n := admin.calls.Load(); n != 0 {
		t.Errorf("admin ran %d times, want 0: a skill must not widen the agent's tools", n)
	}
	got := strings.Join(h.transcript("s1"), "|")
	for _, want := range []string{"tool:other ran", "tool:Skill narrow:", "tool:not allowed while skill narrow is active: its allowed-tools do not list other", "tool:found it", `unknown tool "admin"`} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript = %s\nwant it to contain %q", got, want)
		}
	}
	recs, err := h.store.ListTurns(context.Background(), "web:s1", 1)
	if err != nil || len(recs) != 1 || !slices.Equal(recs[0].Skills, []string{"narrow"}) {
		t.Errorf("turn record = %+v, %v; want skills [narrow]", recs, err)
	}
	reqs := h.model.Requests()
	for i, r := range reqs {
		if !sameSpecs(r.Tools, reqs[0].Tools) {
			t.Errorf("request %d offers other tools than request 0", i)
		}
	}
}

func sameSpecs(a, b []tools.Spec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// TestAgentWithoutSkillsHasNoSkillTools: an agent whose skills list is empty gets no catalogue
// and is not offered the skill tools; an agent with a list sees only what it allows.
func TestAgentWithoutSkillsHasNoSkillTools(t *testing.T) {
	lib, skillTools := skillLibrary(t, map[string]string{
		"alpha": "---\nname: alpha\ndescription: First.\n---\nA.\n",
		"beta":  "---\nname: beta\ndescription: Second.\n---\nB.\n",
	})
	for _, tt := range []struct {
		allow []string
		want  string // the catalogue's skill lines, "" for none
		tools bool
	}{
		{nil, "- alpha: First.\n- beta: Second.", true},
		{[]string{"b*"}, "- beta: Second.", true},
		{[]string{}, "", false},
	} {
		h := start(t, opts{tools: skillTools, cfg: pipeline.Config{Agents: pipeline.Agents{Default: pipeline.Profile{Skills: tt.allow}}},
			deps: func(d *pipeline.Deps) { d.Skills = lib }}, agenttest.Reply("hi"))
		h.submit(msg("s1", "ann", "hello"))
		h.waitDone()
		req := h.model.Requests()[0]
		sys := req.Messages[0].Content
		hasCat := strings.Contains(sys, "## Skills\n")
		if hasCat != (tt.want != "") || tt.want != "" && !strings.Contains(sys, tt.want) || tt.want == "- beta: Second." && strings.Contains(sys, "alpha") {
			t.Errorf("skills %v: system prompt = %q, want catalogue %q", tt.allow, sys, tt.want)
		}
		offered := false
		for _, s := range req.Tools {
			offered = offered || s.Name == "skill" || s.Name == "skill_file"
		}
		if offered != tt.tools {
			t.Errorf("skills %v: skill tools offered = %v, want %v", tt.allow, offered, tt.tools)
		}
		h.stop()
	}
}

// TestHelpNamesTheAgentsSkills: /echogate help lists the skills of the agent serving the
// conversation, and nothing about skills for an agent without any.
func TestHelpNamesTheAgentsSkills(t *testing.T) {
	lib, skillTools := skillLibrary(t, map[string]string{
		"alpha": "---\nname: alpha\ndescription: First.\n---\nA.\n",
		"beta":  "---\nname: beta\ndescription: Second.\n---\nB.\n",
	})
	for _, tt := range []struct {
		allow      []string
		want, deny string
	}{
		{[]string{"alpha"}, "Skills I can use here (installed by the operator; ask for a task they cover): `alpha`.", "beta"},
		{[]string{}, "Commands:", "Skills"},
	} {
		h := start(t, opts{tools: skillTools, cfg: pipeline.Config{Agents: pipeline.Agents{Default: pipeline.Profile{Skills: tt.allow}}},
			deps: func(d *pipeline.Deps) { d.Skills = lib }})
		h.submit(msg("s1", "ann", "!help"))
		if d := h.waitDone(); !strings.Contains(d.Text, tt.want) || strings.Contains(d.Text, tt.deny) {
			t.Errorf("skills %v: help = %q, want it to contain %q and not %q", tt.allow, d.Text, tt.want, tt.deny)
		}
		h.stop()
	}
}

// TestScriptOfRefusedSkillDoesNotRun: run_command was given a skill's script at start
// (skills.allow_scripts); once the skill is refused on reload (its files changed, the lock
// stands) or removed, the script is denied before any approval, by path and by base name.
func TestScriptOfRefusedSkillDoesNotRun(t *testing.T) {
	lib, skillTools := skillLibrary(t, map[string]string{"other": "---\nname: other\ndescription: Another skill.\n---\nO.\n"})
	script := filepath.Join(t.TempDir(), "skills", "gone", "scripts", "collect.sh")
	run := newTool("run_command", tools.Destructive, "ran")
	for _, command := range []string{script, "collect.sh"} {
		h := start(t, opts{tools: append(skillTools, run),
			cfg:  pipeline.Config{SkillScripts: true, SkillScriptPaths: []string{script}},
			deps: func(d *pipeline.Deps) { d.Skills = lib }},
			agenttest.CallTool("run_command", `{"command":"`+command+`"}`), agenttest.Reply("ok"))
		h.submit(msg("s1", "ann", "collect the status"))
		if d := h.waitDone(); d.Status != "done" {
			t.Fatalf("command %s: turn = %+v, want done with the call denied (no approval asked)", command, d)
		}
		if got := strings.Join(h.transcript("s1"), "|"); !strings.Contains(got, "not run: "+command+" is a script of a skill that is no longer installed") {
			t.Errorf("command %s: transcript = %s, want the denial", command, got)
		}
		h.stop()
	}
	if n := run.calls.Load(); n != 0 {
		t.Errorf("run_command ran %d times, want 0", n)
	}
}
