// Package tools holds the contract of the tools the agent can call, the Registry that holds a
// gateway's catalogue, and decorators (circuit breakers) that wrap any tool.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/echogate/echogate"
)

// Safety ranks a tool's blast radius. The zero value is the strictest, so an unclassified tool
// needs approval.
type Safety uint8

const (
	Destructive Safety = iota // irreversible: delete, pay, post publicly
	Sensitive                 // side effects that can be undone or leak data
	Safe                      // read-only, no side effects
)

func (s Safety) String() string {
	switch s {
	case Destructive:
		return "destructive"
	case Sensitive:
		return "sensitive"
	case Safe:
		return "safe"
	}
	return fmt.Sprintf("safety(%d)", uint8(s))
}

// ParseSafety parses "safe", "sensitive" or "destructive".
func ParseSafety(s string) (Safety, error) {
	switch s {
	case "safe":
		return Safe, nil
	case "sensitive":
		return Sensitive, nil
	case "destructive":
		return Destructive, nil
	}
	return Destructive, fmt.Errorf("unknown safety %q: use safe, sensitive or destructive", s)
}

// Spec describes a tool to the model and to the approval gate.
type Spec struct {
	Name        string          // ^[a-zA-Z0-9_-]{1,64}$, unique in a registry
	Description string          // shown to the model
	Parameters  json.RawMessage // JSON Schema of the arguments object; nil means {"type":"object"}
	Safety      Safety
	// Shareable marks a tool whose calls and results say nothing about the person who asked
	// (the time, the team's knowledge base, a question asked in the open): in a conversation
	// several people share, they are replayed to everyone. The zero value is per person: in
	// another participant's turns the pipeline replays such a call without its arguments and
	// with a placeholder for its result (memory, files, commands, MCP tools).
	Shareable bool
	// ApproversOnly: a call needs a listed approver's decision; the requester's own ✅ or 🔁
	// does not decide it (as for every Destructive tool).
	ApproversOnly bool
	// Fetches: the tool brings outside content into the turn and its arguments reach the
	// outside (a URL), so it can carry the turn's data out. A Safe one runs without asking
	// unless the turn's input carries text from other authors or fetched content; then it asks
	// (an explicit approval policy of allow keeps it unconditional).
	Fetches bool
	// SafetyOf, when set, classifies one call by its arguments (the schedule tool: a one-shot
	// reminder is safe, a recurring job sensitive); Safety is the class of the tool as a whole
	// and of a call SafetyOf cannot read.
	SafetyOf func(args json.RawMessage) Safety `json:"-"`
}

// Result is what a tool call returns to the model. A failure the model should see (bad arguments,
// a 404, a denial) is a Result with IsError; a Go error from Call means the turn failed.
type Result struct {
	Content string
	IsError bool
}

// Errorf builds an IsError result.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is one callable tool. Call blocks until the tool finishes or ctx ends (then it returns
// promptly with ctx's error); it must be safe for concurrent use. Tool output is untrusted text.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Registry is a gateway's tool catalogue. It is constructed, never global, and safe for concurrent
// use: MCP servers add and remove tools while turns run.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns a registry holding ts. Duplicate names are an error.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers t. A tool of the same name is an error (use Replace for reconnecting servers).
func (r *Registry) Add(t Tool) error {
	name := t.Spec().Name
	if err := ValidateName(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; ok {
		return fmt.Errorf("tools: %q is registered twice: give one of them another name", name)
	}
	r.tools[name] = t
	return nil
}

// Replace registers t, replacing a tool of the same name.
func (r *Registry) Replace(t Tool) error {
	name := t.Spec().Name
	if err := ValidateName(name); err != nil {
		return err
	}
	r.mu.Lock()
	r.tools[name] = t
	r.mu.Unlock()
	return nil
}

// Remove unregisters the named tool; removing an absent name is a no-op.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	delete(r.tools, name)
	r.mu.Unlock()
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	t, ok := r.tools[name]
	r.mu.RUnlock()
	return t, ok
}

// Specs returns the catalogue sorted by name (stable prompts, stable golden files).
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	out := make([]Spec, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t.Spec())
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ValidateName checks a tool name against what OpenAI-compatible APIs accept.
func ValidateName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("tools: name %q must be 1 to 64 characters", name)
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return fmt.Errorf("tools: name %q may hold only letters, digits, '_' and '-'", name)
		}
	}
	return nil
}

// AskUserError is returned by a tool's Call (ask_user) to pause the turn until the user answers.
// The agent loop turns it into a pause of kind ask; the answer becomes the call's result.
type AskUserError struct {
	Question string
}

func (e *AskUserError) Error() string { return "tools: waiting for the user's answer: " + e.Question }

// Caller identifies who a tool call acts for: the pipeline attaches it to the context of every
// tool call, so tools that keep per-user state (memory) or read the conversation's files never act
// for the wrong user.
type Caller struct {
	UserID  string // qualified, e.g. "slack:U123"
	Session echogate.SessionKey
	Channel string // platform:channel
	Turn    string
	// Conversation is where the call was made and Agent the profile serving it (the schedule
	// tool delivers a job there and runs it under that agent).
	Conversation echogate.ConversationRef
	Agent        string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller attached by WithCaller; ok is false without one.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.UserID != ""
}
