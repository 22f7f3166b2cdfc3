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
		for _, buffered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/buf=%v", name, buffered), func(t *testing.T) {
				m := &snapModel{fakeModel: fakeModel{steps: tt.steps}}
				exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
					return tools.Result{Content: "12:00"}, nil
				}
				rt := runtimeFor(m, &recorder{}, exec, timeSpec)
				rt.Params.Plan = tt.plan
				hist := append(user("earlier"), echogate.Message{Role: echogate.RoleAssistant, Content: "yes"}, echogate.Message{Role: echogate.RoleUser, Content: "now"})
				in := Input{System: "sys", Messages: hist}
				if buffered {
					in.Buf = NewBuf(len(hist))
					in.Messages = append(in.Buf[1:1], hist...)
				}
				res := Run(context.Background(), in, rt)
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
}

// A new run's messages built in Input.Buf stay there: the loop's requests are views of that
// array, not of a copy (the copy was the largest allocation of a turn after its history). A
// Buf that does not hold the messages is ignored.
func TestRunKeepsMessagesInBuf(t *testing.T) {
	hist := append(user("earlier"), echogate.Message{Role: echogate.RoleAssistant, Content: "yes"}, echogate.Message{Role: echogate.RoleUser, Content: "now"})
	for name, tt := range map[string]struct {
		in      func() ([]echogate.Message, Input)
		inPlace bool
	}{
		"in buf": {inPlace: true, in: func() ([]echogate.Message, Input) {
			buf := NewBuf(len(hist))
			msgs := append(buf[1:1], hist...)
			return buf, Input{System: "sys", Messages: msgs, Buf: buf}
		}},
		"no buf": {in: func() ([]echogate.Message, Input) {
			return nil, Input{System: "sys", Messages: append([]echogate.Message(nil), hist...)}
		}},
		"messages elsewhere": {in: func() ([]echogate.Message, Input) {
			buf := NewBuf(len(hist))
			return buf, Input{System: "sys", Messages: append([]echogate.Message(nil), hist...), Buf: buf}
		}},
		"messages capped": {in: func() ([]echogate.Message, Input) {
			buf := NewBuf(len(hist))
			msgs := append(buf[1:1], hist...)
			return buf, Input{System: "sys", Messages: msgs[:len(msgs):len(msgs)], Buf: buf}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			m := &fakeModel{steps: []step{{text: []string{"ok"}}}}
			buf, in := tt.in()
			res := Run(context.Background(), in, runtimeFor(m, &recorder{}, nil))
			if res.Status != StatusDone || len(m.reqs) != 1 {
				t.Fatalf("Run = %s (%v), %d requests; want done, 1", res.Status, res.Err, len(m.reqs))
			}
			got := m.reqs[0].Messages
			if len(got) != 1+len(hist) || got[0].Content != "sys" || got[3].Content != "now" {
				t.Fatalf("request messages = %+v, want the system prompt and the input", got)
			}
			if inPlace := buf != nil && &got[0] == &buf[0]; inPlace != tt.inPlace {
				t.Errorf("request messages in Buf = %v, want %v", inPlace, tt.inPlace)
			}
			if !tt.inPlace && in.Messages[0].Role == echogate.RoleSystem {
				t.Errorf("input messages changed: %+v", in.Messages)
			}
		})
	}
}
