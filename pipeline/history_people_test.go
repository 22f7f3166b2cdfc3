package pipeline_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// requestText flattens a model request's messages (contents and tool-call arguments).
func requestText(r agent.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
		for _, c := range m.ToolCalls {
			b.WriteString(c.Arguments)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// checkPairs fails when a tool result does not directly follow the assistant message whose
// call it answers, or a call is unanswered: what every provider requires.
func checkPairs(t *testing.T, name string, msgs []echogate.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		switch {
		case m.Role == echogate.RoleTool:
			if !open[m.ToolCallID] {
				t.Errorf("%s: message %d answers call %q, which is not open", name, i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			if len(open) > 0 {
				t.Errorf("%s: message %d (%s) comes while calls %v are unanswered", name, i, m.Role, open)
			}
			clear(open)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
}

// Finding 1 of issue 36 (history): in a shared thread, the results of another person's
// per-person tools (recall, read_file, run_command, MCP tools: every tool not declared
// Shareable) and the arguments of those calls are not replayed into a participant's request; a
// placeholder keeps each call answered. Shareable results (the time) are replayed to everyone,
// and a person's own results to them.
func TestHistoryDoesNotReplayAnotherPersonsToolResults(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same process", true: "after a restart"}[restart], func(t *testing.T) {
			historyOfOthers(t, restart)
		})
	}
}

func historyOfOthers(t *testing.T, restart bool) {
	recall := newTool("recall", tools.Safe, "- Passport number is X123 (note, pinned)")
	clock := newTool("current_time", tools.Safe, "It is 12:00 in Lyon")
	clock.spec.Shareable = true
	store := pipelinetest.NewMemStore()
	var reqs []agent.Request
	run := func(evs []echogate.InboundEvent, steps ...agenttest.Step) {
		slack := pipelinetest.NewReplier(echogate.PlatformSlack)
		h := start(t, opts{store: store, tools: []tools.Tool{recall, clock}, deps: withSlack(slack)}, steps...)
		for _, ev := range evs {
			h.submit(ev)
			<-slack.Done
		}
		reqs = append(reqs, h.model.Requests()...)
		h.stop()
	}
	first := []agenttest.Step{
		agenttest.CallTools(echogate.ToolCall{Name: "recall", Arguments: `{"query":"passport X123"}`}, echogate.ToolCall{Name: "current_time", Arguments: `{}`}),
		agenttest.Reply("Your passport is on file."),
	}
	rest := []agenttest.Step{agenttest.Reply("Hello UB."), agenttest.Reply("Yes, UA.")}
	evs := []echogate.InboundEvent{threadMsg("UA", "what is my passport number?"), threadMsg("UB", "hi"), threadMsg("UA", "and again?")}
	if restart {
		run(evs[:1], first...)
		run(evs[1:], rest...) // a new process: who requested UA's turn comes from the store
	} else {
		run(evs, append(first, rest...)...)
	}
	if len(reqs) != 4 {
		t.Fatalf("model requests = %d, want 4", len(reqs))
	}
	ub, ua := reqs[2], reqs[3]
	checkPairs(t, "UB's request", ub.Messages)
	checkPairs(t, "UA's second request", ua.Messages)
	if got := requestText(ub); strings.Contains(got, "X123") || !strings.Contains(got, "[result of recall for another participant omitted]") ||
		!strings.Contains(got, "12:00 in Lyon") {
		t.Errorf("UB's request = %q; want no X123 (UA's recall and its arguments), a placeholder for the recall result, and the shared time", got)
	}
	if got := requestText(ua); !strings.Contains(got, "Passport number is X123") || !strings.Contains(got, `"passport X123"`) {
		t.Errorf("UA's second request = %q; want UA's own recall call and result", got)
	}
	if n := recall.calls.Load(); n != 1 {
		t.Errorf("recall ran %d times, want 1", n)
	}
	var args map[string]any
	for _, m := range ub.Messages {
		for _, c := range m.ToolCalls {
			if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
				t.Errorf("UB's request: call %s arguments %q are not JSON: %v", c.Name, c.Arguments, err)
			}
		}
	}
}
