package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// step is one scripted model call.
type step struct {
	text  []string // streamed fragments
	calls []echogate.ToolCall
	err   error
	usage echogate.Usage
}

// fakeModel plays steps in order and records requests. (agent/agenttest has the full-featured
// scripted model; this one keeps the loop's unit tests free of other packages.)
type fakeModel struct {
	mu    sync.Mutex
	steps []step
	reqs  []Request
	// onCall runs inside Generate before streaming (to trigger stops).
	onCall func(n int)
}

func (m *fakeModel) Generate(ctx context.Context, req Request, onDelta func(Delta) error) (Response, error) {
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, req)
	if n >= len(m.steps) {
		m.mu.Unlock()
		return Response{}, fmt.Errorf("fake model: no step %d", n)
	}
	st := m.steps[n]
	m.mu.Unlock()
	if m.onCall != nil {
		m.onCall(n)
	}
	var b strings.Builder
	for _, f := range st.text {
		if err := onDelta(Delta{Text: f}); err != nil {
			return Response{Message: echogate.Message{Role: echogate.RoleAssistant, Content: b.String()}}, err
		}
		b.WriteString(f)
	}
	u := st.usage
	if u.InputTokens == 0 {
		u = echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, InputTokens: 10, OutputTokens: 5}
	}
	if st.err != nil {
		return Response{Usage: u}, st.err
	}
	fr := "stop"
	if len(st.calls) > 0 {
		fr = "tool_calls"
	}
	return Response{
		Message:      echogate.Message{Role: echogate.RoleAssistant, Content: b.String(), ToolCalls: st.calls},
		Usage:        u,
		FinishReason: fr,
		Model:        req.Model,
	}, nil
}

func call(id, name, args string) echogate.ToolCall {
	return echogate.ToolCall{ID: id, Name: name, Arguments: args}
}

type recorder struct {
	mu     sync.Mutex
	events []Event
	usage  []echogate.Usage
}

func (r *recorder) emit(e Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
func (r *recorder) report(u echogate.Usage) {
	r.mu.Lock()
	r.usage = append(r.usage, u)
	r.mu.Unlock()
}
func (r *recorder) types() []EventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []EventType
	for _, e := range r.events {
		out = append(out, e.Type)
	}
	return out
}

func specs(ts ...tools.Spec) []tools.Spec { return ts }

var (
	timeSpec   = tools.Spec{Name: "current_time", Safety: tools.Safe}
	deleteSpec = tools.Spec{Name: "delete_all", Safety: tools.Destructive}
	askSpec    = tools.Spec{Name: "ask_user", Safety: tools.Safe}
)

func runtimeFor(m Model, rec *recorder, exec func(ctx context.Context, c echogate.ToolCall) (tools.Result, error), ts ...tools.Spec) Runtime {
	return Runtime{
		Model:       m,
		Params:      Params{Model: "test-model"},
		Tools:       ts,
		ExecuteTool: exec,
		Emit:        rec.emit,
		ReportUsage: rec.report,
		Authorize: func(ctx context.Context, c echogate.ToolCall, s tools.Spec) Decision {
			if s.Safety == tools.Safe {
				return Decision{Verdict: Allow}
			}
			return Decision{Verdict: Ask}
		},
	}
}

func user(text string) []echogate.Message {
	return []echogate.Message{{Role: echogate.RoleUser, Content: text}}
}

func TestRunPlainAnswer(t *testing.T) {
	m := &fakeModel{steps: []step{{text: []string{"Hel", "lo"}}}}
	rec := &recorder{}
	res := Run(context.Background(), Input{System: "be nice", Messages: user("hi")}, runtimeFor(m, rec, nil))
	if res.Status != StatusDone || res.Answer != "Hello" {
		t.Fatalf("Run = %s %q (%v), want done \"Hello\"", res.Status, res.Answer, res.Err)
	}
	if got := m.reqs[0].Messages[0]; got.Role != echogate.RoleSystem || got.Content != "be nice" {
		t.Errorf("first message = %+v, want the system prompt", got)
	}
	want := []EventType{EventLLMRequestStart, EventAnswerDelta, EventAnswerDelta, EventLLMRequestEnd}
	if got := rec.types(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if len(rec.usage) != 1 || len(res.Usage) != 1 {
		t.Errorf("usage reported %d times (result lists %d), want 1", len(rec.usage), len(res.Usage))
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != echogate.RoleAssistant {
		t.Errorf("Messages = %+v, want one assistant message", res.Messages)
	}
}

func TestRunToolThenAnswer(t *testing.T) {
	m := &fakeModel{steps: []step{
		{calls: []echogate.ToolCall{call("c1", "current_time", `{}`)}},
		{text: []string{"It is noon."}},
	}}
	rec := &recorder{}
	exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
		return tools.Result{Content: "12:00"}, nil
	}
	res := Run(context.Background(), Input{Messages: user("time?")}, runtimeFor(m, rec, exec, timeSpec))
	if res.Status != StatusDone || res.Answer != "It is noon." {
		t.Fatalf("Run = %s %q (%v), want done", res.Status, res.Answer, res.Err)
	}
	roles := []string{}
	for _, msg := range res.Messages {
		roles = append(roles, string(msg.Role))
	}
	if got, want := strings.Join(roles, ","), "assistant,tool,assistant"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
	second := m.reqs[1].Messages
	if last := second[len(second)-1]; last.Role != echogate.RoleTool || last.Content != "12:00" || last.ToolCallID != "c1" {
		t.Errorf("second request ends with %+v, want the tool result", last)
	}
	if len(m.reqs[0].Tools) != 1 {
		t.Errorf("first request offered %d tools, want 1", len(m.reqs[0].Tools))
	}
	if len(rec.usage) != 2 {
		t.Errorf("usage reported %d times, want 2 (one per model call)", len(rec.usage))
	}
}

func TestRunSafeCallsRunConcurrently(t *testing.T) {
	const n = 3
	calls := make([]echogate.ToolCall, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i), "current_time", `{}`)
	}
	m := &fakeModel{steps: []step{{calls: calls}, {text: []string{"done"}}}}
	// Each call waits until all n are running: only a concurrent executor gets past it.
	var running atomic.Int32
	all := make(chan struct{})
	exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
		if running.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{Content: c.ID}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, Input{Messages: user("x")}, runtimeFor(m, &recorder{}, exec, timeSpec)) }()
	res := <-done
	if res.Status != StatusDone {
		t.Fatalf("Run = %s (%v), want done", res.Status, res.Err)
	}
	// Results are kept in call order.
	for i := 0; i < n; i++ {
		if got := res.Messages[1+i].ToolCallID; got != calls[i].ID {
			t.Errorf("result %d is for %s, want %s", i, got, calls[i].ID)
		}
	}
}

func TestRunPauseForApprovalAndResume(t *testing.T) {
	m := &fakeModel{steps: []step{
		{calls: []echogate.ToolCall{call("c1", "delete_all", `{"really":true}`), call("c2", "delete_all", `{}`)}},
		{text: []string{"Deleted one, kept one."}},
	}}
	var ran []string
	exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
		ran = append(ran, c.ID)
		return tools.Result{Content: "deleted"}, nil
	}
	rec := &recorder{}
	rt := runtimeFor(m, rec, exec, deleteSpec)
	res := Run(context.Background(), Input{Messages: user("delete")}, rt)
	if res.Status != StatusPaused || res.Pause == nil || res.Pause.Call.ID != "c1" || res.Pause.Kind != echogate.PauseApproval {
		t.Fatalf("Run = %s %+v, want paused on c1", res.Status, res.Pause)
	}
	if len(ran) != 0 {
		t.Fatalf("tools ran before approval: %v", ran)
	}
	// The state survives JSON (it is persisted while the human decides).
	raw, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	res = Run(context.Background(), Input{State: &st, Resume: &Resume{CallID: "c1", Approved: true}}, rt)
	if res.Status != StatusPaused || res.Pause.Call.ID != "c2" {
		t.Fatalf("after approving c1: %s %+v, want paused on c2", res.Status, res.Pause)
	}
	st = res.State
	res = Run(context.Background(), Input{State: &st, Resume: &Resume{CallID: "c2", Approved: false, Reason: "not approved: nope"}}, rt)
	if res.Status != StatusDone || res.Answer != "Deleted one, kept one." {
		t.Fatalf("after denying c2: %s %q (%v), want done", res.Status, res.Answer, res.Err)
	}
	if fmt.Sprint(ran) != "[c1]" {
		t.Errorf("ran = %v, want [c1]", ran)
	}
	last := m.reqs[1].Messages
	if got := last[len(last)-1]; got.ToolCallID != "c2" || !got.IsError || got.Content != "not approved: nope" {
		t.Errorf("denied result = %+v, want an error result with the reason", got)
	}
	if got := m.reqs[1].Messages[len(last)-2]; got.ToolCallID != "c1" || got.Content != "deleted" {
		t.Errorf("approved result = %+v, want c1 deleted", got)
	}
}

func TestRunResumeMismatch(t *testing.T) {
	st := State{Messages: user("x"), Pending: []echogate.ToolCall{call("c1", "delete_all", "{}")}, PauseKind: echogate.PauseApproval}
	res := Run(context.Background(), Input{State: &st, Resume: &Resume{CallID: "other", Approved: true}}, runtimeFor(&fakeModel{}, &recorder{}, nil, deleteSpec))
	if res.Status != StatusError || !errors.Is(res.Err, ErrBadResume) {
		t.Fatalf("Run = %s %v, want error ErrBadResume", res.Status, res.Err)
	}
}

func TestRunAskUser(t *testing.T) {
	m := &fakeModel{steps: []step{
		{calls: []echogate.ToolCall{call("q1", "ask_user", `{"question":"Which city?"}`)}},
		{text: []string{"Weather in Oslo: cold."}},
	}}
	exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
		return tools.Result{}, &tools.AskUserError{Question: "Which city?"}
	}
	rt := runtimeFor(m, &recorder{}, exec, askSpec)
	res := Run(context.Background(), Input{Messages: user("weather?")}, rt)
	if res.Status != StatusPaused || res.Pause.Kind != echogate.PauseAsk || res.Pause.Question != "Which city?" {
		t.Fatalf("Run = %s %+v, want paused ask", res.Status, res.Pause)
	}
	st := res.State
	res = Run(context.Background(), Input{State: &st, Resume: &Resume{CallID: "q1", Answer: "Oslo"}}, rt)
	if res.Status != StatusDone {
		t.Fatalf("resume = %s (%v), want done", res.Status, res.Err)
	}
	msgs := m.reqs[1].Messages
	if got := msgs[len(msgs)-1]; got.Content != "Oslo" || got.ToolCallID != "q1" {
		t.Errorf("answer result = %+v, want Oslo for q1", got)
	}
}

func TestRunDenyAndUnknownTool(t *testing.T) {
	m := &fakeModel{steps: []step{
		{calls: []echogate.ToolCall{call("c1", "delete_all", `{}`), call("c2", "nope", `{}`)}},
		{text: []string{"ok"}},
	}}
	rt := runtimeFor(m, &recorder{}, nil, deleteSpec)
	rt.Authorize = func(context.Context, echogate.ToolCall, tools.Spec) Decision {
		return Decision{Verdict: Deny, Reason: "denied by policy"}
	}
	res := Run(context.Background(), Input{Messages: user("x")}, rt)
	if res.Status != StatusDone {
		t.Fatalf("Run = %s (%v), want done", res.Status, res.Err)
	}
	if got := res.Messages[1]; !got.IsError || got.Content != "denied by policy" {
		t.Errorf("denied = %+v", got)
	}
	if got := res.Messages[2]; !got.IsError || !strings.Contains(got.Content, `unknown tool "nope"`) {
		t.Errorf("unknown = %+v", got)
	}
}

func TestRunStopMidStream(t *testing.T) {
	var stop atomic.Bool
	m := &fakeModel{steps: []step{{text: []string{"partial ", "more", "never"}}}}
	rec := &recorder{}
	rt := runtimeFor(m, rec, nil)
	rt.IsStopping = stop.Load
	rt.Emit = func(e Event) {
		rec.emit(e)
		if e.Type == EventAnswerDelta && e.Text == "more" {
			stop.Store(true)
		}
	}
	res := Run(context.Background(), Input{Messages: user("x")}, rt)
	if res.Status != StatusAborted || res.FinishReason != "stopped" {
		t.Fatalf("Run = %s %s, want aborted stopped", res.Status, res.FinishReason)
	}
	if res.Answer != "partial more" {
		t.Errorf("partial answer = %q, want %q", res.Answer, "partial more")
	}
	if len(rec.usage) != 1 || !rec.usage[0].Failed {
		t.Errorf("usage = %+v, want one failed entry", rec.usage)
	}
}

func TestRunMaxIterations(t *testing.T) {
	loop := step{calls: []echogate.ToolCall{call("c", "current_time", `{}`)}}
	m := &fakeModel{steps: []step{loop, loop, {text: []string{"giving up"}, calls: []echogate.ToolCall{call("x", "current_time", "{}")}}}}
	exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
		return tools.Result{Content: "t"}, nil
	}
	rt := runtimeFor(m, &recorder{}, exec, timeSpec)
	rt.Params.MaxIterations = 3
	res := Run(context.Background(), Input{Messages: user("x")}, rt)
	if res.Status != StatusDone || res.FinishReason != "max_iterations" || len(m.reqs) != 3 {
		t.Fatalf("Run = %s %s after %d calls, want done max_iterations after 3", res.Status, res.FinishReason, len(m.reqs))
	}
	lastReq := m.reqs[2]
	if len(lastReq.Tools) != 0 || lastReq.Messages[len(lastReq.Messages)-1].Content != finalCallNote {
		t.Errorf("last request: %d tools, last message %q; want no tools and the final note", len(lastReq.Tools), lastReq.Messages[len(lastReq.Messages)-1].Content)
	}
}

func TestRunBudgetAndModelError(t *testing.T) {
	t.Run("budget", func(t *testing.T) {
		m := &fakeModel{steps: []step{{text: []string{"x"}}}}
		rt := runtimeFor(m, &recorder{}, nil)
		rt.BeforeModelCall = func(context.Context, Request) error { return fmt.Errorf("per-user daily: %w", ErrBudget) }
		res := Run(context.Background(), Input{Messages: user("x")}, rt)
		if res.Status != StatusAborted || !errors.Is(res.Err, ErrBudget) || len(m.reqs) != 0 {
			t.Fatalf("Run = %s %v with %d calls, want aborted budget without calling", res.Status, res.Err, len(m.reqs))
		}
	})
	t.Run("model error keeps earlier work", func(t *testing.T) {
		m := &fakeModel{steps: []step{
			{calls: []echogate.ToolCall{call("c1", "current_time", `{}`)}},
			{err: fmt.Errorf("boom: %w", ErrUnavailable)},
		}}
		exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
			return tools.Result{Content: "t"}, nil
		}
		rec := &recorder{}
		res := Run(context.Background(), Input{Messages: user("x")}, runtimeFor(m, rec, exec, timeSpec))
		if res.Status != StatusError || !errors.Is(res.Err, ErrUnavailable) {
			t.Fatalf("Run = %s %v, want error", res.Status, res.Err)
		}
		if len(res.Messages) != 2 || len(rec.usage) != 2 || !rec.usage[1].Failed {
			t.Errorf("messages %d usage %+v, want 2 messages and the failed call recorded", len(res.Messages), rec.usage)
		}
	})
	t.Run("tool go error fails the turn", func(t *testing.T) {
		m := &fakeModel{steps: []step{{calls: []echogate.ToolCall{call("c1", "current_time", `{}`)}}}}
		exec := func(ctx context.Context, c echogate.ToolCall) (tools.Result, error) {
			return tools.Result{}, errors.New("disk on fire")
		}
		res := Run(context.Background(), Input{Messages: user("x")}, runtimeFor(m, &recorder{}, exec, timeSpec))
		if res.Status != StatusError || !strings.Contains(res.Err.Error(), "disk on fire") {
			t.Fatalf("Run = %s %v, want error naming the tool failure", res.Status, res.Err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := Run(ctx, Input{Messages: user("x")}, runtimeFor(&fakeModel{}, &recorder{}, nil))
		if res.Status != StatusError || !errors.Is(res.Err, context.Canceled) {
			t.Fatalf("Run = %s %v, want error canceled", res.Status, res.Err)
		}
	})
}

func TestRunResumeAppendsNewMessage(t *testing.T) {
	m := &fakeModel{steps: []step{{text: []string{"ok, forgetting that"}}}}
	st := State{Messages: user("delete"), Pending: []echogate.ToolCall{call("c1", "delete_all", "{}")}, PauseKind: echogate.PauseApproval, Iteration: 1}
	in := Input{State: &st, Resume: &Resume{CallID: "c1", Reason: "not approved: user sent a new message"}, Messages: user("never mind")}
	res := Run(context.Background(), in, runtimeFor(m, &recorder{}, nil, deleteSpec))
	if res.Status != StatusDone {
		t.Fatalf("Run = %s %v", res.Status, res.Err)
	}
	msgs := m.reqs[0].Messages
	if got := msgs[len(msgs)-1]; got.Role != echogate.RoleUser || got.Content != "never mind" {
		t.Errorf("last message = %+v, want the new user message", got)
	}
	if got := msgs[len(msgs)-2]; got.Role != echogate.RoleTool || !got.IsError {
		t.Errorf("before it = %+v, want the denial", got)
	}
}
