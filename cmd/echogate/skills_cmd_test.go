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
