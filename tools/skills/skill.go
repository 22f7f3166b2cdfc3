// Package skills loads Agent Skills (https://agentskills.io/specification): folders holding a
// SKILL.md (YAML front matter, then Markdown instructions) and optional scripts/, references/
// and assets/. It validates them, pins them by hash (skills.lock), renders the per-agent
// catalogue for the system prompt, and provides the skill and skill_file tools.
//
// The wiring (cmd and pipeline) uses, in order:
//
//	set, problems := skills.Load(skills.Config{Dirs: cfg.Skills.Dirs, Base: configDir})
//	lib := skills.NewLibrary(set)                      // reload: lib.Replace(newSet)
//	skillTool, _ := skills.NewSkillTool(lib)            // register both in the tools.Registry
//	fileTool, _ := skills.NewFileTool(lib, skills.ToolConfig{})
//	prefix := skills.Catalogue(lib.Skills(), agent.Skills)   // in the agent's cached system prompt
//	ctx = skills.WithAccess(ctx, skills.Access{Allow: agent.Skills, Loaded: record})  // per tool call
//	ok := skills.AllowsTool(agent.Tools, active, toolName)   // narrowing while skills are active
//
// Everything a skill may show the model passes an allow-list of globs (agents[].skills): nil
// means every installed skill, an empty list none. A skill outside the list is reported as
// unknown, never as forbidden.
package skills

import (
	"fmt"
	"slices"
	"strings"

	"github.com/echogate/echogate/internal/access"
)

// Skill is one validated skill. A Skill is immutable once loaded: share it, never modify it.
type Skill struct {
	Name          string
	Description   string
	License       string
	Compatibility string
	Metadata      map[string]string
	// AllowedTools narrows the agent's tools while the skill is active (see AllowsTool); nil
	// means the skill does not restrict them, an empty list keeps only the skill tools.
	AllowedTools []string
	// Extra holds front-matter keys the Agent Skills spec does not define, kept as decoded.
	Extra map[string]any
	// Body is the Markdown after the front matter: the skill's instructions.
	Body string
	// Dir is the skill's folder, absolute.
	Dir string
	// Files lists every file of the skill (SKILL.md included), sorted by Path. Files that are
	// not served (symlinks leading outside the folder, devices) are not in it.
	Files []File
}

// File is one file of a skill, as hashed when the skill was loaded.
type File struct {
	Path   string // slash-separated, relative to the skill's folder: "references/x.md"
	Size   int64
	SHA256 string // hex
	Type   string // media type sniffed from the content, e.g. "text/plain; charset=utf-8"
	Text   bool   // UTF-8 text without NUL bytes: served by skill_file; otherwise only described
}

// File returns the skill's file at rel (slash-separated, cleaned).
func (s *Skill) File(rel string) (File, bool) {
	i, ok := slices.BinarySearchFunc(s.Files, rel, func(f File, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return File{}, false
	}
	return s.Files[i], true
}

// Problem is why a skill (or one of its files, or a skills folder) was not taken as it is.
// An error (Warning false) means the skill was skipped; a warning means it was loaded anyway.
type Problem struct {
	Skill   string // the skill's folder name; "" for a problem of a skills folder or the lock
	File    string // the file or folder concerned, as reachable from the config's folder
	Field   string // the front-matter field, or "" when the file itself is the problem
	Msg     string // what is wrong
	Fix     string // how to fix it
	Warning bool
}

func (p Problem) Error() string {
	var b strings.Builder
	if p.Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(p.File)
	if p.Field != "" {
		fmt.Fprintf(&b, ": field %q", p.Field)
	}
	b.WriteString(": ")
	b.WriteString(p.Msg)
	if p.Fix != "" {
		b.WriteString(": ")
		b.WriteString(p.Fix)
	}
	return b.String()
}

// Errors reports whether ps holds a problem that skipped a skill.
func Errors(ps []Problem) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return !p.Warning })
}

// Set is a loaded set of skills, sorted by name. A nil *Set is empty. Safe for concurrent use
// (it is never modified after Load).
type Set struct {
	list   []*Skill
	byName map[string]*Skill
	locked bool
}

// newSet builds a set from skills with distinct names.
func newSet(list []*Skill, locked bool) *Set {
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	s := &Set{list: list, byName: make(map[string]*Skill, len(list)), locked: locked}
	for _, sk := range list {
		s.byName[sk.Name] = sk
	}
	return s
}

// Skills returns every skill of the set, sorted by name. Do not modify the slice.
func (s *Set) Skills() []*Skill {
	if s == nil {
		return nil
	}
	return s.list
}

// Get returns the named skill, whatever the allow-lists (for the CLI and the console).
func (s *Set) Get(name string) (*Skill, bool) {
	if s == nil {
		return nil, false
	}
	sk, ok := s.byName[name]
	return sk, ok
}

// Locked reports whether the set was checked against a skills.lock (every skill in it is
// then pinned).
func (s *Set) Locked() bool { return s != nil && s.locked }

// Allowed returns the skills allow lets an agent use, sorted by name.
func (s *Set) Allowed(allow []string) []*Skill {
	if s == nil || allow != nil && len(allow) == 0 {
		return nil
	}
	if allow == nil {
		return s.list
	}
	var out []*Skill
	for _, sk := range s.list {
		if Allows(allow, sk.Name) {
			out = append(out, sk)
		}
	}
	return out
}

// Lookup returns the named skill when allow lets an agent use it. An agent cannot tell a
// skill outside its list from one that does not exist.
func (s *Set) Lookup(allow []string, name string) (*Skill, bool) {
	sk, ok := s.Get(name)
	if !ok || !Allows(allow, name) {
		return nil, false
	}
	return sk, true
}

// Allows reports whether the allow-list (globs, see internal/access.Glob) lets an agent use the
// named skill: nil allows every skill, an empty list none.
func Allows(allow []string, name string) bool {
	if allow == nil {
		return true
	}
	return slices.ContainsFunc(allow, func(pat string) bool { return access.Glob(pat, name) })
}

// ValidateAllow checks an agents[].skills list for config validation.
func ValidateAllow(allow []string) error {
	for _, pat := range allow {
		if pat == "" || !access.ValidGlob(pat) {
			return fmt.Errorf("skills: %q is not a valid skill name pattern: use names or globs such as incident-*", pat)
		}
	}
	return nil
}
