package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installSkills copies examples/skills/incident-runbook into dir/skills and adds sql-style,
// a skill with a single SKILL.md.
func installSkills(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join("..", "..", "examples", "skills", "incident-runbook")
	dst := filepath.Join(dir, "skills", "incident-runbook")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "sql-style", "---\nname: sql-style\ndescription: The team's SQL style guide. Use when writing or reviewing SQL.\n---\n\n"+sqlStyleBody+"\n")
}

const sqlStyleBody = "Write keywords in upper case; one clause per line; never SELECT *."

func writeSkill(t *testing.T, dir, name, skillMD string) {
	t.Helper()
	d := filepath.Join(dir, "skills", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(skillMD), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillsCLI runs `echogate --config dir/echogate.yaml skills ARGS…`.
func skillsCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": filepath.Join(dir, "data")},
		append([]string{"--config", filepath.Join(dir, "echogate.yaml"), "skills"}, args...)...)
	code := run(context.Background(), e)
	return code, out.String(), errb.String()
}

const skillsCLIYAML = `
agents:
  - name: oncall
    match: [slack:C0OPS]
    skills: [incident-*]
  - name: support
    match: [slack:C0SUP]
    skills: []
`

// TestSkillsCLIListCheckLock: list names each skill, its description, the agents that have it
// and whether it is locked; lock pins the files; check fails on a changed file, naming the
// skill and the file, and on a skill that does not validate, naming the file and the field.
func TestSkillsCLIListCheckLock(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "echogate.yaml"), []byte(skillsCLIYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	installSkills(t, dir)

	code, out, errb := skillsCLI(t, dir, "list")
	if code != 0 {
		t.Fatalf("skills list = exit %d, stderr %q; want 0", code, errb)
	}
	for skill, want := range map[string][]string{
		"incident-runbook": {"Guides the on-call engineer", "default, oncall", "not locked"},
		"sql-style":        {"SQL style guide", "default", "not locked"},
	} {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, skill) {
				line = l
			}
		}
		if !containsAll(line, want...) || strings.Contains(line, "support") {
			t.Errorf("skills list line of %s = %q, want it to contain %q and not support\nall: %s", skill, line, want, out)
		}
	}
	if strings.Contains(out, "sql-style") && strings.Contains(lineOf(out, "sql-style"), "oncall") {
		t.Errorf("skills list: sql-style is shown for oncall, whose list is [incident-*]: %s", out)
	}

	if code, out, errb := skillsCLI(t, dir, "check"); code != 0 || !strings.Contains(out, "2 skills") {
		t.Fatalf("skills check (valid, no lock) = exit %d, stdout %q, stderr %q; want 0 and 2 skills", code, out, errb)
	}
	if code, out, errb := skillsCLI(t, dir, "lock"); code != 0 || !strings.Contains(out, "skills.lock") {
		t.Fatalf("skills lock = exit %d, stdout %q, stderr %q; want 0 naming skills.lock", code, out, errb)
	}
	if _, err := os.Stat(filepath.Join(dir, "skills.lock")); err != nil {
		t.Fatalf("skills lock wrote no skills.lock beside the configuration: %v", err)
	}
	if _, out, _ := skillsCLI(t, dir, "list"); !strings.Contains(lineOf(out, "incident-runbook"), "locked") || strings.Contains(out, "not locked") {
		t.Errorf("skills list after lock = %q, want every skill locked", out)
	}

	sev := filepath.Join(dir, "skills", "incident-runbook", "references", "severity.md")
	if err := os.WriteFile(sev, []byte("SEV1: whatever the reporter says.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb = skillsCLI(t, dir, "check")
	if code != 1 || !containsAll(out+errb, "incident-runbook", "references/severity.md changed", "echogate skills lock") {
		t.Errorf("skills check with a changed file = exit %d, stdout %q, stderr %q; want 1 naming the skill, the file and the fix", code, out, errb)
	}

	writeSkill(t, dir, "broken", "---\nname: Broken_Skill\ndescription: x\n---\nbody\n")
	code, out, errb = skillsCLI(t, dir, "check")
	if code != 1 || !containsAll(out+errb, filepath.Join("skills", "broken", "SKILL.md"), `field "name"`) {
		t.Errorf("skills check with an invalid skill = exit %d, stdout %q, stderr %q; want 1 naming the file and the field", code, out, errb)
	}
}

func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestSkillsConfig: agents[].skills keeps unset (every skill) apart from [] (none); bad
// patterns and empty folders are errors naming the key; relative skills.dirs resolve against
// the configuration file's folder.
func TestSkillsConfig(t *testing.T) {
	for name, tt := range map[string]struct{ yaml, want string }{
		"bad skill glob":   {"agents: [{name: a, match: [web], skills: ['incident-[']}]", `agents.a.skills: skills: "incident-[" is not a valid skill name pattern`},
		"empty pattern":    {"agents: [{name: a, match: [web], skills: ['']}]", "agents.a.skills"},
		"empty dir":        {"skills: {dirs: ['']}", "skills.dirs[0]: is empty"},
		"scripts not bool": {"skills: {allow_scripts: maybe}", "skills.allow_scripts"},
	} {
		if _, err := loadYAML(t, tt.yaml); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: loadConfig = %v, want an error containing %q", name, err, tt.want)
		}
	}
	cfg, err := loadYAML(t, "skills: {dirs: [team-skills, /opt/skills]}\nagents: [{name: none, match: [web], skills: []}, {name: all, match: [web]}]")
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Agents[0].Skills; s == nil || len(s) != 0 || cfg.Agents[1].Skills != nil {
		t.Errorf("skills: [] = %#v, unset = %#v; want an empty list (no skill) and nil (every skill)", s, cfg.Agents[1].Skills)
	}
	sc := cfg.skillsConfig()
	if want := filepath.Dir(cfg.source.path); sc.Base != want || sc.LockPath() != filepath.Join(want, "skills.lock") {
		t.Errorf("skillsConfig = base %q, lock %q; want the configuration's folder %q", sc.Base, sc.LockPath(), want)
	}
}

// TestDoctorListsSkillProblems: doctor reports a skill that does not validate as a problem
// naming the file, the field and the fix, and the installed skills as a passed check.
func TestDoctorListsSkillProblems(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "echogate.yaml"), []byte("log: {level: warn}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	installSkills(t, dir)
	writeSkill(t, dir, "broken", "---\nname: Broken_Skill\ndescription: x\n---\nbody\n")
	cfg, err := loadConfig(filepath.Join(dir, "echogate.yaml"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var problems, oks []string
	for _, c := range doctorSkills(cfg) {
		if c.ok {
			oks = append(oks, c.detail)
		} else {
			problems = append(problems, c.name+": "+c.detail+" fix: "+c.fix)
		}
	}
	if len(problems) != 1 || !containsAll(problems[0], filepath.Join("skills", "broken", "SKILL.md"), `field "name"`, "fix: ") {
		t.Errorf("doctor skill problems = %q, want one naming skills/broken/SKILL.md, the field and a fix", problems)
	}
	if len(oks) != 1 || !containsAll(oks[0], "2 installed", "incident-runbook, sql-style", "not locked") {
		t.Errorf("doctor skills ok = %q, want the two installed skills, not locked", oks)
	}
}
