package skills

import (
	"os"
	"path/filepath"
	"testing"
)

// writeSkill writes a skill folder dir/name with a valid SKILL.md (body as given) and files.
func writeSkill(t testing.TB, dir, name, body string, files map[string]string) string {
	t.Helper()
	return writeRaw(t, dir, name, "---\nname: "+name+"\ndescription: The "+name+" skill. Use when "+name+" applies.\n---\n\n"+body, files)
}

// writeRaw writes dir/name/SKILL.md with md and the files.
func writeRaw(t testing.TB, dir, name, md string, files map[string]string) string {
	t.Helper()
	sd := filepath.Join(dir, name)
	all := map[string]string{"SKILL.md": md}
	for p, c := range files {
		all[p] = c
	}
	for p, c := range all {
		fp := filepath.Join(sd, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fp, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sd
}

// mustScan scans dir and fails on any problem.
func mustScan(t testing.TB, dir string) *Set {
	t.Helper()
	set, ps := Scan(Config{Dirs: []string{dir}})
	if len(ps) > 0 {
		t.Fatalf("Scan(%s) problems: %v", dir, ps)
	}
	return set
}
