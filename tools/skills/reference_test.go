package skills

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// refInstall is how CI installs the pinned reference validator (testdata/ref/package.json).
const refInstall = "npm ci --prefix tools/skills/testdata/ref"

// divergences lists the folders where echogate deliberately disagrees with the reference
// validator, and why. The test requires the disagreement to still hold, so a change of the
// reference is noticed.
var divergences = map[string]string{
	// The spec says a-z; skills-ref 0.1.5 accepts any lowercase Unicode letter. echogate keeps
	// ASCII, so a name reads the same in every log, URL and metric label.
	"café": "echogate refuses non-ASCII names",
}

// TestAgreesWithReferenceValidator runs the Agent Skills reference validator (npm skills-ref,
// pinned) and echogate's validation over the same good and broken skills and requires them to
// agree, skill by skill, on valid or invalid. echogate's "valid" is "no problem at all": a
// skill it loads with a warning (an unknown front-matter key) is one the reference refuses.
func TestAgreesWithReferenceValidator(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("testdata", "ref", "node_modules", "skills-ref", "package.json"))
	}
	if err != nil {
		msg := "the reference validator is not installed (" + err.Error() + "): install node and run `" + refInstall + "` from the repository root"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dirs := map[string]string{} // folder → absolute path
	entries, err := os.ReadDir(filepath.Join("testdata", "spec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		dirs[e.Name()], _ = filepath.Abs(filepath.Join("testdata", "spec", e.Name()))
	}
	example, _ := filepath.Abs(filepath.Join("..", "..", "examples", "skills", "incident-runbook"))
	dirs["incident-runbook"] = example

	args := []string{filepath.Join("testdata", "ref", "validate.mjs")}
	for _, d := range dirs {
		args = append(args, d)
	}
	cmd := exec.Command(node, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node validate.mjs: %v\n%s", err, stderr.String())
	}
	var ref map[string][]string
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("reference output %q: %v", out, err)
	}

	_, ps := Scan(Config{Dirs: []string{filepath.Join("testdata", "spec"), filepath.Dir(example)}})
	for folder, abs := range dirs {
		refErrs, ok := ref[abs]
		if !ok {
			t.Errorf("%s: the reference validator said nothing", folder)
			continue
		}
		var ours []string
		for _, p := range ps {
			if p.Skill == folder {
				ours = append(ours, p.Error())
			}
		}
		agree := (len(refErrs) == 0) == (len(ours) == 0)
		why, diverges := divergences[folder]
		switch {
		case !agree && !diverges:
			t.Errorf("%s: skills-ref says %s, echogate says %s", folder, verdict(refErrs), verdict(ours))
		case agree && diverges:
			t.Errorf("%s: both now say %s; the listed divergence (%s) is gone: remove it", folder, verdict(ours), why)
		}
	}
}

func verdict(problems []string) string {
	if len(problems) == 0 {
		return "valid"
	}
	return "invalid (" + strings.Join(problems, "; ") + ")"
}
