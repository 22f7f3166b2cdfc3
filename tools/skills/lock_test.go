package skills

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockRefusesChangedFile(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "skills")
	sd := writeSkill(t, dir, "runbook", "steps", map[string]string{"references/escalation.md": "page the lead"})
	writeSkill(t, dir, "release", "tag it", nil)
	cfg := Config{Base: base}
	set, ps := Scan(cfg)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if err := WriteLock(cfg.LockPath(), set); err != nil {
		t.Fatal(err)
	}
	if set, ps := Load(cfg); len(ps) != 0 || len(set.Skills()) != 2 || !set.Locked() {
		t.Fatalf("Load after lock = %v, %v, locked %v, want both skills, locked", names(set.Skills()), ps, set.Locked())
	}
	if err := os.WriteFile(filepath.Join(sd, "references", "escalation.md"), []byte("page everyone"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, ps = Load(cfg)
	if got := names(set.Skills()); len(got) != 1 || got[0] != "release" {
		t.Errorf("Load with a changed file = %q, want only release", got)
	}
	if len(ps) != 1 || ps[0].Skill != "runbook" || !strings.Contains(ps[0].Error(), `skill "runbook" differs from the lock (references/escalation.md changed)`) ||
		!strings.Contains(ps[0].Error(), "echogate skills lock") || ps[0].Warning {
		t.Errorf("problems = %v, want one error naming runbook, the file and the fix", ps)
	}
	// The operator reviews and locks again: the skill is back.
	set, _ = Scan(cfg)
	if err := WriteLock(cfg.LockPath(), set); err != nil {
		t.Fatal(err)
	}
	if set, ps := Load(cfg); len(set.Skills()) != 2 || len(ps) != 0 {
		t.Errorf("Load after relocking = %v, %v, want both", names(set.Skills()), ps)
	}
}

func TestLockRefusesSkillNotInLock(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "skills")
	sd := writeSkill(t, dir, "runbook", "steps", map[string]string{"references/a.md": "a"})
	cfg := Config{Base: base}
	set, _ := Scan(cfg)
	if err := WriteLock(cfg.LockPath(), set); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "sneaky", "exfiltrate", nil)
	if err := os.WriteFile(filepath.Join(sd, "references", "b.md"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sd, "references", "a.md")); err != nil {
		t.Fatal(err)
	}
	set, ps := Load(cfg)
	if len(set.Skills()) != 0 {
		t.Errorf("Load = %q, want nothing", names(set.Skills()))
	}
	got := ""
	for _, p := range ps {
		got += p.Error() + "\n"
	}
	for _, want := range []string{
		`skill "sneaky" is not in the lock; it is refused`,
		`skill "runbook" differs from the lock (references/a.md was removed; references/b.md is new)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems:\n%s\nwant %q", got, want)
		}
	}
}

func TestLockBytesStable(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"zeta", "alpha", "mid"} {
		writeSkill(t, dir, n, n, map[string]string{"references/z.md": "z", "references/a.md": "a", "assets/x.bin": "\x00\x01"})
	}
	first := LockOf(mustScan(t, dir)).Marshal()
	for range 5 {
		if again := LockOf(mustScan(t, dir)).Marshal(); !bytes.Equal(again, first) {
			t.Fatalf("lock bytes differ between scans:\n%s\n%s", first, again)
		}
	}
	s := string(first)
	if !strings.HasPrefix(s, "{\n  \"version\": 1,\n  \"skills\": {\n    \"alpha\": {\n      \"SKILL.md\": \"sha256:") ||
		strings.Index(s, `"mid"`) > strings.Index(s, `"zeta"`) || strings.Index(s, "references/a.md") > strings.Index(s, "references/z.md") {
		t.Errorf("lock is not sorted JSON:\n%s", s)
	}
	// ReadLock reads what WriteLock wrote.
	path := filepath.Join(t.TempDir(), "skills.lock")
	if err := WriteLock(path, mustScan(t, dir)); err != nil {
		t.Fatal(err)
	}
	l, ok, err := ReadLock(path)
	if err != nil || !ok || !bytes.Equal(l.Marshal(), first) {
		t.Errorf("ReadLock = %s, %v, %v, want what was written", l.Marshal(), ok, err)
	}
}

func TestLockUnreadableRefusesAll(t *testing.T) {
	base := t.TempDir()
	writeSkill(t, filepath.Join(base, "skills"), "runbook", "x", nil)
	for name, content := range map[string]string{
		"not JSON":      "sha256 runbook",
		"other version": `{"version": 2, "skills": {}}`,
		"unknown field": `{"version": 1, "skills": {}, "extra": 1}`,
	} {
		if err := os.WriteFile(filepath.Join(base, DefaultLockFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		set, ps := Load(Config{Base: base})
		if len(set.Skills()) != 0 || !set.Locked() || len(ps) != 1 || !strings.Contains(ps[0].Error(), "skills.lock") {
			t.Errorf("%s: Load = %v, %v, want no skill and a problem naming the lock", name, names(set.Skills()), ps)
		}
	}
}
