package skills

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits of the Agent Skills specification.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
)

// specFields are the front-matter keys the Agent Skills specification defines.
var specFields = map[string]bool{
	"name": true, "description": true, "license": true, "compatibility": true, "metadata": true, "allowed-tools": true,
}

// Parse validates the content of a SKILL.md found in a folder named folder. file names the
// SKILL.md in problems. It returns the skill (nil when an error skips it) and every problem
// found, errors and warnings, so one run shows the operator all there is to fix. Parse does
// no I/O: Dir and Files are left for the loader.
func Parse(folder, file string, data []byte) (*Skill, []Problem) {
	var ps []Problem
	bad := func(field, msg, fix string) {
		ps = append(ps, Problem{Skill: folder, File: file, Field: field, Msg: msg, Fix: fix})
	}
	warn := func(field, msg, fix string) {
		ps = append(ps, Problem{Skill: folder, File: file, Field: field, Msg: msg, Fix: fix, Warning: true})
	}
	front, body, msg := splitFrontMatter(data)
	if msg != "" {
		bad("", msg, "start SKILL.md with a line \"---\", the YAML front matter (name, description), and a closing line \"---\" before the instructions")
		return nil, ps
	}
	fields, msg := frontMatterFields(front)
	if msg != "" {
		bad("", msg, "fix the YAML between the \"---\" lines (quote values that hold a colon)")
		return nil, ps
	}
	sk := &Skill{Body: body}
	sk.Name = checkName(fields["name"], folder, bad)
	sk.Description = checkDescription(fields["description"], bad)
	if n := fields["license"]; n != nil {
		if n.Kind != yaml.ScalarNode {
			bad("license", "must be a string", "give a license name or the name of a bundled license file, e.g. license: Apache-2.0")
		} else {
			sk.License = n.Value
		}
	}
	if n := fields["compatibility"]; n != nil {
		switch {
		case n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str":
			bad("compatibility", "must be a string", "describe the environment the skill needs in a sentence, e.g. compatibility: Requires git and jq")
		case utf8.RuneCountInString(n.Value) > MaxCompatibilityLen:
			bad("compatibility", fmt.Sprintf("is %d characters, longer than the %d allowed", utf8.RuneCountInString(n.Value), MaxCompatibilityLen), "shorten it")
		default:
			sk.Compatibility = n.Value
		}
	}
	if n := fields["metadata"]; n != nil {
		sk.Metadata = checkMetadata(n, warn)
	}
	if n := fields["allowed-tools"]; n != nil {
		sk.AllowedTools = checkAllowedTools(n, bad, warn)
	}
	for k, n := range fields {
		if specFields[k] {
			continue
		}
		var v any
		if err := n.Decode(&v); err != nil {
			v = n.Value
		}
		if sk.Extra == nil {
			sk.Extra = map[string]any{}
		}
		sk.Extra[k] = v
		warn(k, "is not a field of the Agent Skills specification; echogate keeps it, other clients (skills-ref validate) refuse the skill",
			"move it under metadata: (a map of strings) or remove it")
	}
	sortProblems(ps)
	if Errors(ps) {
		return nil, ps
	}
	return sk, ps
}

// splitFrontMatter cuts SKILL.md into the YAML between the first two "---" lines and the
// Markdown body after them (trimmed).
func splitFrontMatter(data []byte) (front []byte, body, msg string) {
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	if string(bytes.TrimRight(line, " \t\r")) != "---" {
		return nil, "", "does not start with YAML front matter (a first line \"---\")"
	}
	for off := 0; off <= len(rest); {
		end := bytes.IndexByte(rest[off:], '\n')
		next := len(rest)
		if end >= 0 {
			next = off + end + 1
		}
		if string(bytes.TrimRight(rest[off:next], " \t\r\n")) == "---" {
			return rest[:off], strings.TrimSpace(string(rest[next:])), ""
		}
		if end < 0 {
			break
		}
		off = next
	}
	return nil, "", "front matter is not closed by a line \"---\""
}

// frontMatterFields decodes the front matter into its top-level keys.
func frontMatterFields(front []byte) (map[string]*yaml.Node, string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return nil, "front matter is not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
	}
	fields := map[string]*yaml.Node{}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return fields, "" // empty front matter: the required fields are reported missing
	}
	m := doc.Content[0]
	if m.Kind == yaml.ScalarNode && m.ShortTag() == "!!null" {
		return fields, ""
	}
	if m.Kind != yaml.MappingNode {
		return nil, "front matter must be a YAML mapping of fields (name: …, description: …)"
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i].Value
		if _, dup := fields[k]; dup {
			return nil, fmt.Sprintf("front matter is not valid YAML: line %d: key %q is given twice", m.Content[i].Line, k)
		}
		fields[k] = m.Content[i+1]
	}
	return fields, ""
}

func checkName(n *yaml.Node, folder string, bad func(field, msg, fix string)) string {
	const field = "name"
	if n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		bad(field, "is missing", fmt.Sprintf("add name: %s (the folder's name)", folder))
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		bad(field, "must be a string", fmt.Sprintf("write name: %s (the folder's name)", folder))
		return ""
	}
	name := strings.TrimSpace(n.Value)
	if msg, fix := nameProblem(name); msg != "" {
		bad(field, fmt.Sprintf("%q %s", name, msg), fix)
		return name
	}
	if name != folder {
		bad(field, fmt.Sprintf("%q does not match the folder's name %q", name, folder),
			fmt.Sprintf("rename the folder to %q or set name: %s", name, folder))
	}
	return name
}

// nameProblem says what is wrong with a skill name ("" when nothing) and how to fix it.
func nameProblem(name string) (msg, fix string) {
	const rule = "use 1 to 64 lowercase letters, digits and single hyphens, e.g. incident-runbook"
	switch {
	case name == "":
		return "is empty", rule
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Sprintf("is %d characters, longer than the %d allowed", utf8.RuneCountInString(name), MaxNameLen), "shorten it (and the folder's name)"
	case strings.ToLower(name) != name:
		return "has uppercase letters", fmt.Sprintf("use %q (and rename the folder to match)", strings.ToLower(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Sprintf("has the character %q", c), rule
		}
	}
	switch {
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return "starts or ends with a hyphen", rule
	case strings.Contains(name, "--"):
		return "has two hyphens in a row", rule
	}
	return "", ""
}

func checkDescription(n *yaml.Node, bad func(field, msg, fix string)) string {
	const field = "description"
	const fix = "say in one to three sentences what the skill does and when to use it (at most 1024 characters)"
	switch {
	case n == nil:
		bad(field, "is missing", fix)
	case n.Kind != yaml.ScalarNode:
		bad(field, "must be a string", fix)
	case strings.TrimSpace(n.Value) == "" || n.ShortTag() == "!!null":
		bad(field, "is empty", fix)
	case utf8.RuneCountInString(n.Value) > MaxDescriptionLen:
		bad(field, fmt.Sprintf("is %d characters, longer than the %d allowed", utf8.RuneCountInString(n.Value), MaxDescriptionLen),
			"shorten it; move details into the body")
	default:
		return n.Value
	}
	return ""
}

// checkMetadata keeps a map of strings; anything else is dropped with a warning (the spec
// says string to string, the reference validator does not check it).
func checkMetadata(n *yaml.Node, warn func(field, msg, fix string)) map[string]string {
	const fix = "write metadata as a map of string keys to string values, e.g. metadata: {owner: sre, version: \"1.0\"}"
	if n.Kind != yaml.MappingNode {
		warn("metadata", "is not a map; ignored", fix)
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			warn("metadata", fmt.Sprintf("entry %q is not a string; ignored", k.Value), fix)
			continue
		}
		out[k.Value] = v.Value
	}
	return out
}

// checkAllowedTools reads a space-separated string or a list of strings. A malformed value
// skips the skill: ignoring it would give the skill more tools than its author meant.
func checkAllowedTools(n *yaml.Node, bad, warn func(field, msg, fix string)) []string {
	const field = "allowed-tools"
	out := []string{}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!null" {
			out = append(out, strings.Fields(n.Value)...)
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				bad(field, "entries must be tool names", "list tool names or globs, e.g. allowed-tools: [run_command, http_fetch]")
				return nil
			}
			out = append(out, strings.Fields(e.Value)...)
		}
	default:
		bad(field, "must be a space-separated string or a list of tool names", "e.g. allowed-tools: run_command http_fetch")
		return nil
	}
	for _, t := range out {
		if strings.ContainsAny(t, "()") {
			warn(field, fmt.Sprintf("%q: argument patterns are not supported; the entry matches no tool", t),
				"name echogate tools (or globs of them) without arguments, e.g. run_command")
		}
	}
	return out
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), strings.Compare(a.Field, b.Field), strings.Compare(a.Msg, b.Msg))
	})
}
