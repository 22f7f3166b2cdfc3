package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/skills"
)

// Skills (Deps.Skills, tools/skills): the catalogue of the skills an agent may use is part of
// its system prompt's cached prefix (prompt.go); every tool call carries the agent's
// allow-list (skills.WithAccess); a skill the skill tool returned is active for the rest of
// the turn, and its allowed-tools narrow the tools the turn may call (never widen them). The
// tools offered to the model stay as they were at the turn's start, so the request prefix the
// provider caches does not change mid-turn: a call outside an active skill's list is denied
// with the reason instead. A skill's script runs only as run_command with
// Config.SkillScripts (skills.allow_scripts), and then under run_command's approval.

// runCommandTool is the name of the tool that runs a skill's scripts (tools/builtin).
const runCommandTool = "run_command"

// turnSkills are the skills a turn loaded, in load order. Safe for concurrent tool calls.
type turnSkills struct {
	mu     sync.Mutex
	active []*skills.Skill
}

func (s *turnSkills) add(sk *skills.Skill) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.active, func(a *skills.Skill) bool { return a.Name == sk.Name }) {
		return false
	}
	s.active = append(s.active, sk)
	return true
}

func (s *turnSkills) list() []*skills.Skill {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.active)
}

// Names returns the names of the skills loaded so far, in load order.
func (s *turnSkills) names() []string {
	var out []string
	for _, sk := range s.list() {
		out = append(out, sk.Name)
	}
	return out
}

// skillLib is the installed skills as the pipeline uses them, given to a turn at
// construction (newTurn): the library (swapped on reload), the skill tool's catalogue entry
// and the scripts' settings. It is fixed after New.
type skillLib struct {
	src         skills.Source // nil: no skills
	reg         *tools.Registry
	scripts     bool     // Config.SkillScripts
	scriptPaths []string // Config.SkillScriptPaths
}

// skillLib is the pipeline's skillLib.
func (p *Pipeline) skillLib() skillLib {
	return skillLib{src: p.d.Skills, reg: p.d.Tools, scripts: p.cfg.SkillScripts, scriptPaths: p.cfg.SkillScriptPaths}
}

// set returns the installed skills; nil without Deps.Skills.
func (l skillLib) set() *skills.Set {
	if l.src == nil {
		return nil
	}
	return l.src.Skills()
}

// agentSkills returns the skills the agent may use (its catalogue), sorted: none when the
// agent does not offer the skill tool.
func (l skillLib) agentSkills(pr *profile) []*skills.Skill {
	if l.src == nil || !pr.allowsTool(skills.SkillToolName) {
		return nil
	}
	if _, ok := l.reg.Get(skills.SkillToolName); !ok {
		return nil
	}
	return l.set().Allowed(pr.Skills)
}

// catalogue is the agent's catalogue for the system prompt ("" without skills). It is a pure
// function of the installed set and the agent's list, so the prefix stays byte-identical.
func (l skillLib) catalogue(pr *profile) string {
	if len(l.agentSkills(pr)) == 0 {
		return ""
	}
	return skills.Catalogue(l.set(), pr.Skills)
}

// skillCatalogue is the ContextStage's catalogue (skillLib.catalogue).
func (p *Pipeline) skillCatalogue(pr *profile) string { return p.skillLib().catalogue(pr) }

// skillsHelp is the help command's line about the skills of the agent serving ev ("" none).
func (p *Pipeline) skillsHelp(ev echogate.InboundEvent) string {
	var names []string
	for _, sk := range p.skillLib().agentSkills(p.profileFor(ev)) {
		names = append(names, "`"+sk.Name+"`")
	}
	if len(names) == 0 {
		return ""
	}
	return "\nSkills I can use here (installed by the operator; ask for a task they cover): " + strings.Join(names, ", ") + "."
}

// skillToolAllowed hides the skill tools from an agent with no skill, and applies the active
// skills' allowed-tools.
func (t *Turn) skillToolAllowed(tool string) bool {
	if tool == skills.SkillToolName || tool == skills.FileToolName {
		return len(t.lib.agentSkills(t.prof)) > 0
	}
	return skills.AllowsTool(nil, t.skills.list(), tool)
}

// withSkillAccess attaches what the tool call may see of the skills.
func (t *Turn) withSkillAccess(ctx context.Context) context.Context {
	if t.lib.src == nil {
		return ctx
	}
	return skills.WithAccess(ctx, skills.Access{Allow: t.prof.Skills, Loaded: t.skillLoaded})
}

// skillLoaded records a skill the skill tool returned: active for the rest of the turn,
// counted, and kept on the turn's record.
func (t *Turn) skillLoaded(sk *skills.Skill) {
	if !t.skills.add(sk) {
		return
	}
	t.metrics.SkillLoad(sk.Name, t.prof.Name)
	t.log.Info("skill loaded", "skill", sk.Name, "agent", t.prof.Name)
}

// authorizeSkills runs before the approval gate: a call an active skill's allowed-tools
// excludes is denied, and so is a skill's script run unless skills.allow_scripts is on and the
// script is the agent's and unchanged; the rest goes to authorize (a script run then asks for
// approval like any run_command call).
func (t *Turn) authorizeSkills(ctx context.Context, call echogate.ToolCall, spec tools.Spec) agent.Decision {
	if active := t.skills.list(); !skills.AllowsTool(nil, active, call.Name) {
		var names []string
		for _, sk := range active {
			if !skills.AllowsTool(nil, []*skills.Skill{sk}, call.Name) {
				names = append(names, sk.Name)
			}
		}
		return agent.Decision{Verdict: agent.Deny, Reason: fmt.Sprintf("not allowed while skill %s is active: its allowed-tools do not list %s", strings.Join(names, ", "), call.Name)}
	}
	if call.Name == runCommandTool {
		if why := t.scriptRefusal(call.Arguments); why != "" {
			return agent.Decision{Verdict: agent.Deny, Reason: why}
		}
	}
	return t.authorize(ctx, call, spec)
}

// scriptRefusal returns why a run_command call that runs a file of an installed skill may not
// run, or "" when it runs no skill file or may run (under run_command's policy).
func (t *Turn) scriptRefusal(raw string) string {
	var args struct {
		Command string `json:"command"`
	}
	if json.Unmarshal([]byte(raw), &args) != nil || args.Command == "" {
		return "" // run_command itself explains its arguments
	}
	set := t.lib.set()
	for _, sk := range set.Skills() {
		rel, ok := skillFileOf(sk, args.Command)
		if !ok {
			continue
		}
		_, err := set.Script(t.prof.Skills, sk.Name, rel, t.lib.scripts)
		if err == nil {
			return ""
		}
		if errors.Is(err, skills.ErrScriptsOff) || skills.Allows(t.prof.Skills, sk.Name) {
			return "not run: " + err.Error()
		}
		// A skill outside the agent's list is not told apart from one that does not exist.
		return fmt.Sprintf("not run: %s is not a command this conversation may run", args.Command)
	}
	// run_command still holds the scripts of the skills installed at start: one whose skill
	// was removed or refused since (changed files with a lock) must not run.
	for _, sp := range t.lib.scriptPaths {
		if args.Command == sp || !filepath.IsAbs(args.Command) && filepath.Base(sp) == args.Command {
			return fmt.Sprintf("not run: %s is a script of a skill that is no longer installed, or was refused since it changed (see `echogate skills check`)", args.Command)
		}
	}
	return ""
}

// skillFileOf reports whether command names a file of the skill: an absolute path inside its
// folder, or the base name of one of its scripts (run_command also takes an allowed absolute
// path by its base name).
func skillFileOf(sk *skills.Skill, command string) (string, bool) {
	if filepath.IsAbs(command) {
		rel, err := filepath.Rel(sk.Dir, filepath.Clean(command))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	for _, f := range sk.Files {
		if strings.HasPrefix(f.Path, "scripts/") && pathpkg.Base(f.Path) == command {
			return f.Path, true
		}
	}
	return "", false
}
