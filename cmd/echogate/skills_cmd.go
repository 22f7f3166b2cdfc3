package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/skills"
)

// cmdSkills is `echogate skills list|check|lock` (SPEC "Skills"). It reads the skills folders
// and skills.lock only: no store, no model.
func cmdSkills(_ context.Context, e env, cfg *Config, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "echogate skills: name a command: list, check, lock (echogate skills --help)")
		return 2
	}
	scfg := cfg.skillsConfig()
	switch args[0] {
	case "list":
		return skillsList(e.stdout, e.stderr, cfg, scfg)
	case "check":
		return skillsCheck(e.stdout, cfg, scfg)
	case "lock":
		return skillsLock(e.stdout, e.stderr, scfg)
	}
	fmt.Fprintf(e.stderr, "echogate skills: unknown command %q: use list, check or lock\n", args[0])
	return 2
}

// skillsList prints one line per valid skill: name, description, the agents that have it,
// and whether skills.lock pins it.
func skillsList(out, errw io.Writer, cfg *Config, scfg skills.Config) int {
	set, ps := skills.Scan(scfg)
	lock, locked, err := skills.ReadLock(scfg.LockPath())
	if err != nil {
		fmt.Fprintf(errw, "echogate skills: %s: %v\n", scfg.LockPath(), err)
		return 1
	}
	var kept *skills.Set
	if locked {
		kept, _ = lock.Verify(set, scfg.LockPath())
	}
	if len(set.Skills()) == 0 {
		fmt.Fprintf(out, "no skills installed (skills.dirs: %s)\n", strings.Join(skillDirs(cfg), ", "))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(set.Skills()) > 0 {
		fmt.Fprintln(tw, "SKILL\tDESCRIPTION\tAGENTS\tLOCK")
	}
	for _, sk := range set.Skills() {
		state := "not locked"
		if locked {
			state = "locked"
			if _, ok := kept.Get(sk.Name); !ok {
				state = "refused: differs from skills.lock"
			}
		}
		agents := strings.Join(agentsWithSkill(cfg, sk.Name), ", ")
		if agents == "" {
			agents = "(no agent)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sk.Name, shorten(strings.Join(strings.Fields(sk.Description), " "), 70), agents, state)
	}
	tw.Flush()
	for _, p := range ps {
		fmt.Fprintln(errw, p.Error())
	}
	return 0
}

// skillsCheck validates every skill and checks it against skills.lock; exit 1 on a problem.
func skillsCheck(out io.Writer, cfg *Config, scfg skills.Config) int {
	set, ps := skills.Load(scfg)
	for _, p := range ps {
		fmt.Fprintln(out, p.Error())
	}
	state := "not locked (run `echogate skills lock` to pin them)"
	if set.Locked() {
		state = "pinned by " + scfg.LockPath()
	}
	if skills.Errors(ps) {
		fmt.Fprintf(out, "\nskills: problems found; %d skills load (%s)\n", len(set.Skills()), state)
		return 1
	}
	fmt.Fprintf(out, "skills: ok: %d skills in %s, %s\n", len(set.Skills()), strings.Join(skillDirs(cfg), ", "), state)
	return 0
}

// skillsLock pins every valid skill's files by sha256 in skills.lock.
func skillsLock(out, errw io.Writer, scfg skills.Config) int {
	set, ps := skills.Scan(scfg)
	for _, p := range ps {
		fmt.Fprintln(errw, p.Error())
	}
	if err := skills.WriteLock(scfg.LockPath(), set); err != nil {
		fmt.Fprintf(errw, "echogate skills lock: %v\n", err)
		return 1
	}
	var names []string
	for _, sk := range set.Skills() {
		names = append(names, sk.Name)
	}
	fmt.Fprintf(out, "wrote %s: %d skills pinned (%s)\n", scfg.LockPath(), len(names), strings.Join(names, ", "))
	if skills.Errors(ps) {
		fmt.Fprintln(out, "the skills with problems above are not in the lock, and so are refused until fixed and locked")
	}
	return 0
}

// agentsWithSkill names the agents that see the skill: their skills list allows it and their
// tools list allows the skill tool. The top-level agent ("default") has every skill.
func agentsWithSkill(cfg *Config, name string) []string {
	out := []string{pipeline.DefaultAgent}
	for _, a := range cfg.Agents {
		if !skills.Allows(a.Skills, name) {
			continue
		}
		if a.Tools != nil && !slices.ContainsFunc(a.Tools, func(p string) bool { return access.Glob(p, skills.SkillToolName) }) {
			continue
		}
		out = append(out, a.Name)
	}
	return out
}

func skillDirs(cfg *Config) []string {
	if cfg.Skills.Dirs == nil {
		return []string{"./" + skills.DefaultDir}
	}
	return cfg.Skills.Dirs
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
