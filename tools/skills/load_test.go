package skills

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// specCases says, per folder of testdata/spec, what echogate must do with it: loaded (the
// skill is usable) and clean (no problem at all, the reference validator's "valid").
var specCases = map[string]struct{ loaded, clean bool }{
	"good-basic":      {true, true},
	"good-full":       {true, true},
	"good-tools-list": {true, true},
	"a-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-bc":  {true, true},   // 64 characters, description 1024
	"a-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-b-bcd": {false, false}, // 65 characters
	"Bad-Upper":           {false, false},
	"bad_chars":           {false, false},
	"edge-hyphen-":        {false, false},
	"double--hyphen":      {false, false},
	"name-mismatch":       {false, false},
	"missing-name":        {false, false},
	"missing-description": {false, false},
	"empty-description":   {false, false},
	"long-description":    {false, false},
	"long-compatibility":  {false, false},
	"bad-yaml":            {false, false},
	"no-front-matter":     {false, false},
	"no-skill-md":         {false, false},
	"unknown-key":         {true, false}, // kept, with a warning
	"café":                {false, false},
}

func TestScanSpecTestdata(t *testing.T) {
	set, ps := Scan(Config{Dirs: []string{"testdata/spec"}})
	entries, err := os.ReadDir("testdata/spec")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(specCases) {
		t.Errorf("testdata/spec has %d folders, specCases %d: list every folder", len(entries), len(specCases))
	}
	for folder, want := range specCases {
		_, loaded := set.Get(folder)
		var mine []string
		for _, p := range ps {
			if p.Skill == folder || p.Skill == "" && strings.Contains(p.File, folder) {
				mine = append(mine, p.Error())
			}
		}
		if loaded != want.loaded || (len(mine) == 0) != want.clean {
			t.Errorf("Scan %s: loaded %v with problems %q, want loaded %v, clean %v", folder, loaded, mine, want.loaded, want.clean)
		}
	}
	sk, _ := set.Get("good-full")
	var paths []string
	for _, f := range sk.Files {
		paths = append(paths, f.Path)
	}
	if want := []string{"SKILL.md", "references/checklist.md", "scripts/tag.sh"}; !slices.Equal(paths, want) {
		t.Errorf("good-full files = %q, want %q", paths, want)
	}
	if sk, ok := set.Get("unknown-key"); !ok || sk.Extra["author"] != "sre-team" {
		t.Errorf("unknown-key Extra = %v, want author kept", sk)
	}
}

func TestScanDirs(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	writeSkill(t, a, "runbook", "from a", nil)
	writeSkill(t, b, "runbook", "from b", nil)
	writeSkill(t, b, "release", "b's own", nil)
	if err := os.WriteFile(filepath.Join(a, "README.md"), []byte("not a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, ps := Scan(Config{Dirs: []string{"a", "b"}, Base: base})
	if got := names(set.Skills()); !slices.Equal(got, []string{"release", "runbook"}) {
		t.Errorf("skills = %q, want release, runbook", got)
	}
	if sk, _ := set.Get("runbook"); sk == nil || sk.Body != "from a" || sk.Dir != filepath.Join(a, "runbook") {
		t.Errorf("runbook = %+v, want the first folder's (a)", sk)
	}
	if len(ps) != 1 || !strings.Contains(ps[0].Error(), "already loaded from "+filepath.Join("a", "runbook")) {
		t.Errorf("problems = %v, want one naming the duplicate", ps)
	}
	// The default folder may be absent; a configured one may not.
	if set, ps := Scan(Config{Base: base}); len(set.Skills()) != 0 || len(ps) != 0 {
		t.Errorf("Scan(default, absent) = %v, %v, want nothing and no problem", set.Skills(), ps)
	}
	if _, ps := Scan(Config{Base: base, Dirs: []string{"nope"}}); len(ps) != 1 || !strings.Contains(ps[0].Error(), "nope: cannot read the skills folder") {
		t.Errorf("Scan(missing dir) problems = %v, want one naming it", ps)
	}
	writeSkill(t, filepath.Join(base, "skills"), "default-one", "x", nil)
	if set, _ := Scan(Config{Base: base}); len(set.Skills()) != 1 {
		t.Errorf("Scan(default dir) = %v, want default-one", names(set.Skills()))
	}
}

func TestScanLimits(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "many", "x", map[string]string{"a": "1", "b": "2", "c": "3"})
	writeSkill(t, dir, "big", strings.Repeat("x", 2000), nil)
	set, ps := Scan(Config{Dirs: []string{dir}, MaxFiles: 3, MaxSkillBytes: 1000})
	if len(set.Skills()) != 0 || len(ps) != 2 {
		t.Fatalf("Scan = %v, %v, want both refused", names(set.Skills()), ps)
	}
	if !strings.Contains(ps[0].Error(), "larger than 1000 bytes") || !strings.Contains(ps[1].Error(), "more than 3 files") {
		t.Errorf("problems = %v, want the size and the file count named", ps)
	}
}

func TestScanSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	sd := writeSkill(t, dir, "linky", "x", map[string]string{"references/real.md": "real", "references/two\nlines.md": "x"})
	up, err := filepath.Rel(filepath.Join(sd, "references"), secret)
	if err != nil || !strings.HasPrefix(up, "..") {
		t.Fatalf("Rel = %q, %v", up, err)
	}
	for link, target := range map[string]string{
		"references/out.md":    secret,                            // absolute, outside
		"references/up.md":     "../../" + filepath.Base(outside), // relative, outside
		"references/inside.md": "real.md",                         // relative, inside: served
		"refdir":               "references",                      // a folder: not followed
		"references/dangling":  "missing.md",                      // nowhere
	} {
		if err := os.Symlink(target, filepath.Join(sd, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	set, ps := Scan(Config{Dirs: []string{dir}})
	sk, ok := set.Get("linky")
	if !ok {
		t.Fatalf("linky not loaded: %v", ps)
	}
	var paths []string
	for _, f := range sk.Files {
		paths = append(paths, f.Path)
	}
	if want := []string{"SKILL.md", "references/inside.md", "references/real.md"}; !slices.Equal(paths, want) {
		t.Errorf("files = %q, want %q (links out, to folders and to nowhere left out)", paths, want)
	}
	if len(ps) != 5 || Errors(ps) {
		t.Errorf("problems = %v, want 5 warnings", ps)
	}
}

func names(list []*Skill) []string {
	var out []string
	for _, sk := range list {
		out = append(out, sk.Name)
	}
	return out
}

// TestExampleRunbookLoads: the README's example (examples/skills) loads without a problem,
// with its references and script.
func TestExampleRunbookLoads(t *testing.T) {
	set := mustScan(t, filepath.Join("..", "..", "examples", "skills"))
	sk, ok := set.Get("incident-runbook")
	if !ok {
		t.Fatalf("skills = %q, want incident-runbook", names(set.Skills()))
	}
	var paths []string
	for _, f := range sk.Files {
		paths = append(paths, f.Path)
	}
	want := []string{"SKILL.md", "references/escalation.md", "references/postmortem.md", "references/severity.md", "scripts/collect-status.sh"}
	if !slices.Equal(paths, want) {
		t.Errorf("files = %q, want %q", paths, want)
	}
	for _, p := range want[1:] {
		if !strings.Contains(sk.Body, p) {
			t.Errorf("the body does not point to %s", p)
		}
	}
}
