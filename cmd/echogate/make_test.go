package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNeedCCNamesThePackage: make test stops at once, before go vet and the race build, when
// the C compiler `go env CC` names is missing (naming the package to install) or cgo is off; it
// passes when the compiler is there.
func TestNeedCCNamesThePackage(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script, err := filepath.Abs("../../scripts/need-cc.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		cc, cgo string
		haveCC  bool
		fail    bool
		want    string
	}{
		"no compiler": {cc: "nosuchcc-f42 -m64", cgo: "0", fail: true, want: `"nosuchcc-f42" is not on PATH`},
		"cgo off":     {cc: "nosuchcc-f42", cgo: "0", haveCC: true, fail: true, want: "CGO_ENABLED=0"},
		"compiler":    {cc: "nosuchcc-f42", cgo: "1", haveCC: true},
	} {
		t.Run(name, func(t *testing.T) {
			bin := t.TempDir()
			fakeGo := "#!" + sh + "\ncase \"$2\" in CC) echo '" + tt.cc + "';; CGO_ENABLED) echo " + tt.cgo + ";; esac\n"
			if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.haveCC {
				if err := os.WriteFile(filepath.Join(bin, "nosuchcc-f42"), []byte("#!"+sh+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(sh, script)
			cmd.Env = []string{"PATH=" + bin, "GO=" + filepath.Join(bin, "go")}
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.fail {
				t.Fatalf("need-cc.sh = %v (%s), want failed %v", err, out, tt.fail)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("need-cc.sh said %q, want %q", out, tt.want)
			}
			if name == "no compiler" && !strings.Contains(string(out), "apt-get install gcc") {
				t.Errorf("need-cc.sh said %q, want the package to install", out)
			}
		})
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^test:.*\n\t(.*)\n`).FindSubmatch(mk)
	if recipe == nil || !strings.Contains(string(recipe[1]), "scripts/need-cc.sh") {
		t.Errorf("make test's first step = %q, want scripts/need-cc.sh", recipe)
	}
}
