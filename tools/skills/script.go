package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrScriptsOff is wrapped by Script when skills.allow_scripts is false.
var ErrScriptsOff = errors.New("skills: scripts are off")

// Script is a skill's script the pipeline may hand to run_command.
type Script struct {
	Skill string // the skill's name
	Path  string // inside the skill's folder: "scripts/collect.sh"
	Abs   string // absolute path of the file, inside the skill's folder
}

// Script checks that the named skill's script may run and returns where it is. It refuses,
// with an error the model can be shown: a skill outside allow (as unknown), any script while
// allowScripts (skills.allow_scripts) is false (wrapping ErrScriptsOff), a path outside the
// skill's scripts/ folder or not among its loaded files, and a file that changed since it was
// loaded. Running it is run_command's business: its approval, working directory, environment,
// timeout and output cap apply.
func (s *Set) Script(allow []string, name, rel string, allowScripts bool) (Script, error) {
	sk, ok := s.Lookup(allow, strings.TrimSpace(name))
	if !ok {
		return Script{}, fmt.Errorf("skills: unknown skill %q", name)
	}
	if !allowScripts {
		return Script{}, fmt.Errorf("%w: skill %s's scripts do not run unless the operator sets skills.allow_scripts: true (they then run through run_command, with its approval)", ErrScriptsOff, sk.Name)
	}
	f, msg := confine(sk, rel)
	if msg != "" {
		return Script{}, fmt.Errorf("skills: %s", msg)
	}
	if !strings.HasPrefix(f.Path, "scripts/") {
		return Script{}, fmt.Errorf("skills: %s/%s is not a script: only files under the skill's scripts/ folder run", sk.Name, f.Path)
	}
	if _, err := readPinned(sk, f, 0); err != nil {
		return Script{}, fmt.Errorf("skills: %s/%s: %w", sk.Name, f.Path, err)
	}
	return Script{Skill: sk.Name, Path: f.Path, Abs: filepath.Join(sk.Dir, filepath.FromSlash(f.Path))}, nil
}

// RunCommandArgs returns run_command's arguments that run the script with args.
func (sc Script) RunCommandArgs(args []string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Command string   `json:"command"`
		Args    []string `json:"args,omitempty"`
	}{sc.Abs, args})
	return b
}

// Scripts returns the absolute paths of every script (files under scripts/) of the skills
// allow lets an agent use, by skill then path: cmd adds them to run_command's allowed
// commands when skills.allow_scripts is true.
func (s *Set) Scripts(allow []string) []string {
	var out []string
	for _, sk := range s.Allowed(allow) {
		for _, f := range sk.Files {
			if strings.HasPrefix(f.Path, "scripts/") {
				out = append(out, filepath.Join(sk.Dir, filepath.FromSlash(f.Path)))
			}
		}
	}
	return out
}
