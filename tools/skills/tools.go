package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/echogate/echogate/tools"
)

// Stable tool names.
const (
	SkillToolName = "skill"
	FileToolName  = "skill_file"
)

// DefaultMaxFileBytes caps what skill_file returns of one file.
const DefaultMaxFileBytes = 64 << 10

// Source gives the tools the current skills; Library is the implementation cmd uses.
type Source interface {
	Skills() *Set
}

// Library holds the current set and swaps it on reload. Safe for concurrent use.
type Library struct{ p atomic.Pointer[Set] }

// NewLibrary returns a library holding set.
func NewLibrary(set *Set) *Library {
	l := &Library{}
	l.p.Store(set)
	return l
}

// Skills returns the current set (never blocks).
func (l *Library) Skills() *Set { return l.p.Load() }

// Replace swaps in set (a reload); calls already running keep the set they started with.
func (l *Library) Replace(set *Set) { l.p.Store(set) }

// Access is what one tool call may see of the skills: the pipeline attaches it to the context
// of every tool call with WithAccess.
type Access struct {
	// Allow is the agent's allow-list (agents[].skills, globs): nil is every skill, empty none.
	Allow []string
	// Loaded, when set, is called each time the skill tool returns a skill's body (the pipeline
	// records it on the turn, counts echogate_skill_loads_total, narrows the tools). It may be
	// called from concurrent tool calls and must return quickly.
	Loaded func(*Skill)
}

type accessKey struct{}

// WithAccess returns ctx carrying a.
func WithAccess(ctx context.Context, a Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// AccessFrom returns the Access attached by WithAccess. Without one the tools show no skill:
// a conversation the pipeline did not vouch for sees nothing.
func AccessFrom(ctx context.Context) (Access, bool) {
	a, ok := ctx.Value(accessKey{}).(Access)
	return a, ok
}

// ToolConfig configures skill_file. The zero value means defaults.
type ToolConfig struct {
	// MaxFileBytes caps the text one call returns (default 64 KiB); a longer file is cut
	// with a note.
	MaxFileBytes int64
}

type skillTool struct {
	src  Source
	spec tools.Spec
}

type skillArgs struct {
	Name string `json:"name"`
}

// NewSkillTool returns the skill tool (Safe): {"name": "…"} → the skill's instructions and the
// list of its files.
func NewSkillTool(src Source) (tools.Tool, error) {
	if src == nil {
		return nil, errors.New("skills: the skill tool needs a source of skills")
	}
	return &skillTool{src: src, spec: tools.Spec{
		Name: SkillToolName,
		Description: "Read the instructions of an installed skill (listed under \"Skills\" in your instructions) by its name. " +
			"Call it when a skill applies to the task, then follow the instructions; they come from the operator.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the skill's name, e.g. incident-runbook"}},` +
			`"required":["name"],"additionalProperties":false}`),
		Safety: tools.Safe,
	}}, nil
}

func (t *skillTool) Spec() tools.Spec { return t.spec }

// Call returns the skill's body. It does no I/O (the body was read at load time).
func (t *skillTool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	var args skillArgs
	if res, ok := decodeArgs(SkillToolName, raw, &args, `{"name": "incident-runbook"}`); !ok {
		return res, nil
	}
	sk, res, ok := lookup(ctx, t.src.Skills(), SkillToolName, args.Name)
	if !ok {
		return res, nil
	}
	if a, _ := AccessFrom(ctx); a.Loaded != nil {
		a.Loaded(sk)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s: instructions installed by the operator. Follow them while they apply to the task.\n\n", sk.Name)
	b.WriteString(sk.Body)
	if others := len(sk.Files) - 1; others > 0 {
		b.WriteString("\n\nFiles of this skill (open one with skill_file when the instructions point to it):\n")
		for _, f := range sk.Files {
			if f.Path == "SKILL.md" {
				continue
			}
			fmt.Fprintf(&b, "- %s (%s, %s)\n", f.Path, f.Type, formatBytes(f.Size))
		}
	}
	return tools.Result{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// lookup finds the named skill among those the caller may use.
func lookup(ctx context.Context, set *Set, tool, name string) (*Skill, tools.Result, bool) {
	a, ok := AccessFrom(ctx)
	if !ok {
		return nil, tools.Errorf("%s: no skills are available in this conversation", tool), false
	}
	name = strings.TrimSpace(name)
	if sk, ok := set.Lookup(a.Allow, name); ok {
		return sk, tools.Result{}, true
	}
	what := "argument \"name\" is empty"
	if name != "" {
		what = fmt.Sprintf("unknown skill %q", name)
	}
	var names []string
	for _, sk := range set.Allowed(a.Allow) {
		names = append(names, sk.Name)
	}
	if len(names) == 0 {
		return nil, tools.Errorf("%s: %s; no skills are available in this conversation", tool, what), false
	}
	return nil, tools.Errorf("%s: %s; available skills: %s", tool, what, strings.Join(names, ", ")), false
}

// decodeArgs decodes a tool's JSON arguments into dst strictly: unknown fields, wrong types,
// non-objects and trailing data give an IsError result the model can act on.
func decodeArgs(tool string, raw json.RawMessage, dst any, example string) (tools.Result, bool) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return tools.Result{}, true
	}
	if trimmed[0] != '{' {
		return tools.Errorf("%s: arguments must be a JSON object like %s", tool, example), false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return tools.Errorf("%s: bad arguments (%v); send an object like %s", tool, err, example), false
	}
	if _, err := dec.Token(); err != io.EOF {
		return tools.Errorf("%s: arguments must be exactly one JSON object like %s; found more data after it", tool, example), false
	}
	return tools.Result{}, true
}

// formatBytes renders a size for the model: 512 B, 1.5 KiB, 2.0 MiB.
func formatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
