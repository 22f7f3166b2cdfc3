package router

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
)

// BenchmarkChoose measures the rules on a 1.5k-char prose message (the worst case: no rule
// matches early, every code marker is tried).
func BenchmarkChoose(b *testing.B) {
	r, err := New(Config{Routes: []Route{
		{Name: "vision", When: RuleAttachments, Model: "strong"},
		{Name: "code", When: RuleCode, Model: "strong"},
		{Name: "long", When: RuleLong, Model: "strong"},
		{Name: "tools", When: RuleTools, Model: "strong"},
		{Name: "light", Model: "light"},
	}}, testModels("light", "strong"), nil)
	if err != nil {
		b.Fatal(err)
	}
	req := userReq(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 33))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Choose(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerateOverhead measures the router's own cost per call (routing, breaker, usage
// bookkeeping) around a scripted model.
func BenchmarkGenerateOverhead(b *testing.B) {
	m := agenttest.NewScriptedModel()
	m.SetDefault(agenttest.Reply("ok"))
	r, err := New(Config{Routes: []Route{{Name: "main", Model: "light"}}}, map[string]agent.Model{"light": m}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := userReq("hello")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Generate(context.Background(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}
