package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/skills"
)

// SkillsConf is the `skills:` section (SPEC "Skills"): Agent Skills folders the operator
// installs, loaded at start and on every reload, allow-listed per agent (agents[].skills).
type SkillsConf struct {
	// Dirs hold one folder per skill; relative paths resolve against the configuration file's
	// folder (the working directory without a file), so skills and skills.lock sit beside the
	// configuration the operator reviews, outside the data dir the agent's commands may write
	// to. Unset means [./skills], and then a missing folder is not a problem.
	Dirs []string `yaml:"dirs"`
	// AllowScripts lets a skill's scripts run, and then only through run_command's policy
	// (approval by default, the data dir's workspace as working directory, a clean environment,
	// its timeout and output cap). False refuses them.
	AllowScripts bool `yaml:"allow_scripts"`
}

func (s SkillsConf) validate() error {
	for i, d := range s.Dirs {
		if strings.TrimSpace(d) == "" {
			return badKey(fmt.Sprintf("skills.dirs[%d]", i), "is empty: name a folder holding one folder per skill, e.g. ./skills")
		}
	}
	return nil
}

// skillsConfig is where cfg's skills and their lock are.
func (c *Config) skillsConfig() skills.Config {
	base := "."
	if c.source.path != "" {
		base = filepath.Dir(c.source.path)
	}
	return skills.Config{Dirs: c.Skills.Dirs, Base: base}
}

// skillsWanted reports whether the skill tools are registered: skills.dirs is set, or a
// skill was installed at start. (A first skills folder made later needs a restart.)
func skillsWanted(cfg *Config, set *skills.Set) bool {
	return cfg.Skills.Dirs != nil || len(set.Skills()) > 0
}

// loadSkills loads cfg's skills and logs every problem as a warning naming the file, the field
// and the fix; a skill refused (invalid, or differing from skills.lock) is logged as an error.
func loadSkills(cfg *Config, log *slog.Logger, when string) (*skills.Set, []skills.Problem) {
	set, ps := skills.Load(cfg.skillsConfig())
	logSkillProblems(log, when, ps)
	if n := len(set.Skills()); n > 0 {
		log.Info("skills loaded", "when", when, "skills", n, "locked", set.Locked(), "scripts", cfg.Skills.AllowScripts)
	}
	return set, ps
}

func logSkillProblems(log *slog.Logger, when string, ps []skills.Problem) {
	for _, p := range ps {
		args := []any{"when", when, "file", p.File, "fix", p.Fix}
		if p.Skill != "" {
			args = append(args, "skill", p.Skill)
		}
		if p.Field != "" {
			args = append(args, "field", p.Field)
		}
		if p.Warning {
			log.Warn("skills: "+p.Msg, args...)
		} else {
			log.Error("skills: refused: "+p.Error(), args...)
		}
	}
}

// skillScripts are the scripts run_command may run (skills.allow_scripts): their absolute
// paths, added to tools.run_command.allowed at start. Only the skills installed at start have
// them; a script added later needs a restart. Arguments stay confined to the working directory
// and tools.run_command.allow_paths: a script's own folder is not added to them.
func skillScripts(cfg *Config, set *skills.Set) []string {
	if !cfg.Skills.AllowScripts {
		return nil
	}
	return set.Scripts(nil)
}

// addSkillTools registers the skill and skill_file tools reading lib.
func addSkillTools(reg *tools.Registry, lib *skills.Library) error {
	st, err := skills.NewSkillTool(lib)
	if err != nil {
		return err
	}
	ft, err := skills.NewFileTool(lib, skills.ToolConfig{})
	if err != nil {
		return err
	}
	if err := reg.Add(st); err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	if err := reg.Add(ft); err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	return nil
}

// reloadSkills loads the skills of the reloaded configuration and swaps them in (reload.go):
// a skill that no longer validates or differs from skills.lock is refused with an error naming
// it and its file, the others serve the next turn.
func (c *core) reloadSkills(cfg *Config) {
	if c.skills == nil {
		return
	}
	set, ps := loadSkills(cfg, c.log, "reload")
	c.skills.Replace(set)
	c.skillProblems.Store(&ps)
}

// doctorSkills lists the installed skills and every problem of them, with its fix.
func doctorSkills(cfg *Config) []check {
	set, ps := skills.Load(cfg.skillsConfig())
	var out []check
	for _, p := range ps {
		c := check{name: "skills", detail: p.Error(), fix: p.Fix}
		if p.Skill != "" {
			c.name = "skill " + p.Skill
		}
		if p.Warning {
			c.ok = true
		}
		out = append(out, c)
	}
	if n := len(set.Skills()); n > 0 {
		var names []string
		for _, sk := range set.Skills() {
			names = append(names, sk.Name)
		}
		locked := "not locked (run `echogate skills lock` to pin them)"
		if set.Locked() {
			locked = "pinned by skills.lock"
		}
		out = append(out, check{name: "skills", ok: true, detail: fmt.Sprintf("%d installed (%s), %s", n, strings.Join(names, ", "), locked)})
	}
	return out
}
