package skills

import (
	"slices"
	"strings"

	"github.com/echogate/echogate/internal/access"
)

// Catalogue renders the skills allow lets an agent use, for its system prompt: a short header
// and one line per skill (name: description), sorted by name. It is a pure function of the set
// and the list, so the cached prefix of the prompt stays byte-identical across turns. No skill
// gives "".
func Catalogue(set *Set, allow []string) string {
	list := set.Allowed(allow)
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Skills\n")
	b.WriteString("Installed by the operator. When one applies to the task, call the `skill` tool with its name to read its instructions and follow them; open the files they mention with `skill_file`.\n")
	for _, sk := range list {
		b.WriteString("- ")
		b.WriteString(sk.Name)
		b.WriteString(": ")
		b.WriteString(strings.Join(strings.Fields(sk.Description), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// AllowsTool reports whether an agent whose tools allow-list is agentTools (globs; nil = every
// tool) may use tool while the active skills are loaded: the agent must allow it, and every
// active skill that sets allowed-tools must list it (or a glob of it). A skill can only narrow
// the agent's tools, never widen them. The skill tools themselves stay available (when the
// agent has them) so the model can still read the active skills' files; loading another skill
// narrows further, never back.
func AllowsTool(agentTools []string, active []*Skill, tool string) bool {
	if agentTools != nil && !slices.ContainsFunc(agentTools, func(p string) bool { return access.Glob(p, tool) }) {
		return false
	}
	if tool == SkillToolName || tool == FileToolName {
		return true
	}
	for _, sk := range active {
		if sk.AllowedTools == nil {
			continue
		}
		if !slices.ContainsFunc(sk.AllowedTools, func(p string) bool { return !strings.ContainsAny(p, "()") && access.Glob(p, tool) }) {
			return false
		}
	}
	return true
}
