package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/echogate/echogate/tools"
)

// instantTool answers at once, without allocating, so the benchmarks see the wrappers' cost.
type instantTool struct{}

func (instantTool) Spec() tools.Spec { return tools.Spec{Name: "instant", Safety: tools.Safe} }
func (instantTool) Call(context.Context, json.RawMessage) (tools.Result, error) {
	return tools.Result{Content: "ok"}, nil
}

// BenchmarkBreakerCall is one successful call through the circuit breaker, the wrapper every
// tool call of the gateway passes.
func BenchmarkBreakerCall(b *testing.B) {
	tool := tools.WithBreaker(instantTool{}, tools.BreakerConfig{}, nil, nil)
	ctx, args := context.Background(), json.RawMessage(`{}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegistrySpecs is the catalogue a turn reads once (the gateway's builtin tools).
func BenchmarkRegistrySpecs(b *testing.B) {
	var ts []tools.Tool
	for _, name := range []string{"current_time", "http_fetch", "remember", "recall", "forget", "knowledge_search", "ask_user", "read_file"} {
		ts = append(ts, named{instantTool{}, name})
	}
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(reg.Specs()) != len(ts) {
			b.Fatal("specs lost")
		}
	}
}

type named struct {
	instantTool
	name string
}

func (n named) Spec() tools.Spec { return tools.Spec{Name: n.name, Safety: tools.Safe} }
