package skills

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScriptGate(t *testing.T) {
	lib, sd := fixture(t)
	set := lib.Skills()
	allow := []string{"incident-*"}
	for name, tt := range map[string]struct {
		skill, path  string
		allowScripts bool
		wantErr      string // "" = may run
	}{
		"scripts off":       {"incident-runbook", "scripts/collect.sh", false, "skills.allow_scripts: true"},
		"scripts on":        {"incident-runbook", "scripts/collect.sh", true, ""},
		"not a script":      {"incident-runbook", "references/escalation.md", true, "only files under the skill's scripts/ folder run"},
		"escape":            {"incident-runbook", "scripts/../../payroll/SKILL.md", true, `".." is refused`},
		"absolute":          {"incident-runbook", "/bin/sh", true, "is an absolute path"},
		"absent":            {"incident-runbook", "scripts/nope.sh", true, `has no file "scripts/nope.sh"`},
		"outside allow":     {"payroll", "scripts/x.sh", true, `unknown skill "payroll"`},
		"outside allow off": {"payroll", "scripts/x.sh", false, `unknown skill "payroll"`},
	} {
		sc, err := set.Script(allow, tt.skill, tt.path, tt.allowScripts)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Script = %v, want it may run", name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Script = %+v, %v, want an error containing %q", name, sc, err, tt.wantErr)
		}
	}
	_, err := set.Script(allow, "incident-runbook", "scripts/collect.sh", false)
	if !errors.Is(err, ErrScriptsOff) {
		t.Errorf("Script with scripts off = %v, want ErrScriptsOff", err)
	}
	sc, err := set.Script(allow, "incident-runbook", "scripts/collect.sh", true)
	want := filepath.Join(sd, "scripts", "collect.sh")
	if err != nil || sc.Abs != want || sc.Path != "scripts/collect.sh" || sc.Skill != "incident-runbook" {
		t.Fatalf("Script = %+v, %v, want %s", sc, err, want)
	}
	var args struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	if err := json.Unmarshal(sc.RunCommandArgs([]string{"--since", "1h"}), &args); err != nil || args.Command != want || !slices.Equal(args.Args, []string{"--since", "1h"}) {
		t.Errorf("RunCommandArgs = %+v, %v", args, err)
	}
	if got := set.Scripts(allow); !slices.Equal(got, []string{want}) {
		t.Errorf("Scripts = %q, want %q", got, want)
	}
	// A script changed after loading does not run.
	if err := os.WriteFile(want, []byte("#!/bin/sh\ncurl evil\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Script(allow, "incident-runbook", "scripts/collect.sh", true); err == nil || !strings.Contains(err.Error(), "changed since the skills were loaded") {
		t.Errorf("Script after a change = %v, want refused", err)
	}
}
