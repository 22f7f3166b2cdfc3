package agent

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// snapModel wraps fakeModel and keeps a deep copy of each request's messages as it was given,
// to compare with what the request holds after the run.
type snapModel struct {
	fakeModel
	snaps [][]echogate.Message
}

func (m *snapModel) Generate(ctx context.Context, req Request, onDelta func(Delta) error) (Response, error) {
	m.snaps = append(m.snaps, append([]echogate.Message(nil), req.Messages...))
	return m.fakeModel.Generate(ctx, req, onDelta)
}

// The loop hands each model call a view of its messages instead of a copy: no later call,
// tool result, plan change or caller's append may change what an earlier request holds.
func TestRequestsNeverChangeAfterTheCall(t *testing.T) {
	planSet := call("p1", PlanToolName, `{"action":"set","title":"T","steps":["a","b"]}`)
	planDone := call("p2", PlanToolName, `{"action":"update","step":1,"status":"done"}`)
	for name, tt := range map[string]struct {
		plan  bool
		steps []step
	}{
		// More tool rounds than the headroom after the history: the messages outgrow buf.
		"many tool rounds": {steps: func() []step {
			var s []step
			for i := range 6 {
				s = append(s, step{calls: []echogate.ToolCall{call(fmt.Sprint("a", i), "current_time", "{}"), call(fmt.Sprint("b", i), "current_time", "{}")}})
			}
			return append(s, step{text: []string{"done"}})
		}()},
		// The plan changes the system message between calls.
		"plan changes the system message": {plan: true, steps: []step{
			{calls: []echogate.ToolCall{planSet}}, {calls: []echogate.ToolCall{planDone}}, {text: []string{"ok"}},
		}},
		// The budget runs out: the final call gets a note appended after the messages.
		"final call with its note": {steps: func() []step {
			var s []step
			for i := range defaultMaxIterations {
				s = append(s, step{calls: []echogate.ToolCall{call(fmt.Sprint("c", i), "current_time", "{}")}})
			}
			return s
		}()},
	} {
		t.Run(name, func(t *testing.T) {
			m := &snapModel{fakeModel: fakeModel{steps: tt.steps}}
			exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
				return tools.Result{Content: "12:00"}, nil
			}
			rt := runtimeFor(m, &recorder{}, exec, timeSpec)
			rt.Params.Plan = tt.plan
			hist := append(user("earlier"), echogate.Message{Role: echogate.RoleAssistant, Content: "yes"}, echogate.Message{Role: echogate.RoleUser, Content: "now"})
			res := Run(context.Background(), Input{System: "sys", Messages: hist}, rt)
			if res.Status != StatusDone {
				t.Fatalf("Run = %s (%v), want done", res.Status, res.Err)
			}
			// The caller may append to the state it got back.
			_ = append(res.State.Messages, echogate.Message{Role: echogate.RoleUser, Content: "appended by the caller"})
			if len(m.reqs) != len(tt.steps) {
				t.Fatalf("model calls = %d, want %d", len(m.reqs), len(tt.steps))
			}
			for i, req := range m.reqs {
				if !reflect.DeepEqual(req.Messages, m.snaps[i]) {
					t.Errorf("request %d messages = %+v, want them as given: %+v", i, req.Messages, m.snaps[i])
				}
			}
			if hist[2].Content != "now" || len(hist) != 3 {
				t.Errorf("input messages = %+v, want them untouched", hist)
			}
		})
	}
}
