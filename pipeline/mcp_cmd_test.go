package pipeline_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate/pipeline"
)

// fakeGrants keeps grants per (user, server), as the sealed store does.
type fakeGrants struct {
	mu     sync.Mutex
	grants map[string][]string // user → servers
}

func (f *fakeGrants) Grants(_ context.Context, user string) ([]pipeline.MCPGrant, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pipeline.MCPGrant
	for _, s := range f.grants[user] {
		out = append(out, pipeline.MCPGrant{Server: s})
	}
	return out, []string{"tracker"}, nil
}

func (f *fakeGrants) Login(_ context.Context, server, user string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants[user] = append(f.grants[user], server) // the redirect came back at once
	return "https://auth.example/authorize?for=" + user, nil
}

func (f *fakeGrants) Revoke(_ context.Context, server, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants[user] = slices.DeleteFunc(f.grants[user], func(s string) bool { return s == server })
	return nil
}

// `/mcp` shows, logs in to and revokes the sender's own MCP grants, never another person's.
func TestMCPCommandIsPerPerson(t *testing.T) {
	g := &fakeGrants{grants: map[string][]string{}}
	h := start(t, opts{deps: func(d *pipeline.Deps) { d.MCPGrants = g }})
	for _, step := range []struct {
		user, text string
		want, not  []string
	}{
		{"ann", "/mcp", []string{"not authorized any", "tracker"}, nil},
		{"ann", "!mcp login tracker", []string{"https://auth.example/authorize?for=web:ann"}, nil},
		{"ann", "/mcp", []string{"Your MCP logins:\n• tracker"}, nil},
		{"bob", "/mcp", []string{"not authorized any"}, []string{"• tracker"}},
		{"bob", "/mcp revoke tracker", []string{"forgotten"}, nil},
		{"ann", "/mcp", []string{"• tracker"}, nil},
		{"ann", "/mcp revoke tracker", []string{"forgotten"}, nil},
		{"ann", "/mcp", []string{"not authorized any"}, nil},
		{"ann", "/mcp frobnicate", []string{"mcp login NAME"}, nil},
	} {
		h.submit(msg("s-"+step.user, step.user, step.text))
		d := h.waitDone()
		for _, w := range step.want {
			if !strings.Contains(d.Text, w) {
				t.Errorf("%s %q = %q, want %q", step.user, step.text, d.Text, w)
			}
		}
		for _, n := range step.not {
			if strings.Contains(d.Text, n) {
				t.Errorf("%s %q = %q, want no %q", step.user, step.text, d.Text, n)
			}
		}
	}
	if h.model.Calls() != 0 {
		t.Errorf("model calls = %d, want 0 (commands)", h.model.Calls())
	}
}
