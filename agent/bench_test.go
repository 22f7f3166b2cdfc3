package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// instantModel answers at once: one tool call when the last message is the user's and asks for
// a tool, else a two-fragment text. It keeps nothing, so the benchmark sees the loop's own cost.
type instantModel struct{}

func (instantModel) Generate(ctx context.Context, req Request, onDelta func(Delta) error) (Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == echogate.RoleUser && last.Content == "tool" {
		return Response{Message: echogate.Message{Role: echogate.RoleAssistant,
			ToolCalls: []echogate.ToolCall{{ID: "c1", Name: "current_time", Arguments: "{}"}}}, FinishReason: "tool_calls"}, nil
	}
	for _, f := range []string{"Hel", "lo"} {
		if err := onDelta(Delta{Text: f}); err != nil {
			return Response{}, err
		}
	}
	return Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: "Hello"}, FinishReason: "stop",
		Usage: echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, InputTokens: 900, OutputTokens: 2}}, nil
}

// BenchmarkRun is one turn of the loop over a 40-message history with a 10-tool catalogue and an
// instant model: a plain answer, and one tool call then the answer.
func BenchmarkRun(b *testing.B) {
	hist := make([]echogate.Message, 40)
	for i := range hist {
		role := echogate.RoleUser
		if i%2 == 1 {
			role = echogate.RoleAssistant
		}
		hist[i] = echogate.Message{Role: role, Content: fmt.Sprintf("message %d of the conversation so far", i)}
	}
	specs := []tools.Spec{timeSpec}
	for i := range 9 {
		specs = append(specs, tools.Spec{Name: fmt.Sprintf("tool_%d", i), Safety: tools.Safe})
	}
	rt := Runtime{
		Model: instantModel{}, Params: Params{Model: "m", Hints: Hints{Session: "web:s1"}}, Tools: specs,
		ExecuteTool: func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
			return tools.Result{Content: "2025-03-14T12:00:00Z"}, nil
		},
		Emit:        func(Event) {},
		ReportUsage: func(echogate.Usage) {},
	}
	for _, tc := range []struct{ name, text string }{{"plain", "hi"}, {"one-tool", "tool"}} {
		b.Run(tc.name, func(b *testing.B) {
			msgs := append(append([]echogate.Message(nil), hist...), echogate.Message{Role: echogate.RoleUser, Content: tc.text})
			b.ReportAllocs()
			for b.Loop() {
				if res := Run(context.Background(), Input{System: "You are a helpful assistant.", Messages: msgs}, rt); res.Status != StatusDone {
					b.Fatalf("Run = %s (%v), want done", res.Status, res.Err)
				}
			}
		})
	}
}
