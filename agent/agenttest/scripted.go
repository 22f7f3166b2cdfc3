package agenttest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

// Step is what a ScriptedModel does on one Generate call.
//
// The order of play is: close Entered, check Expect, wait for Gate when GateAfter is 0, stream
// Reasoning then Text in fragments (waiting for Gate after GateAfter fragments), then return Err if
// set, else the assembled response.
type Step struct {
	// Text is the answer, streamed to onDelta in fragments of FragmentSize runes.
	Text string
	// Reasoning is streamed before Text as reasoning deltas.
	Reasoning string
	// FragmentSize is the fragment length in runes; 0 means 4 (about one token).
	FragmentSize int
	// ToolCalls are the calls of the answer. An empty ID is filled with "call_<call>_<i>", where
	// <call> is the 1-based Generate call number and <i> the index in the list.
	ToolCalls []echogate.ToolCall
	// Err is returned after the text was streamed (a failure mid-answer when Text is set, a failed
	// call otherwise). The Response still carries the partial message and Usage with Failed set.
	Err error
	// Usage is reported as-is when non-zero (Kind and Model are filled when empty); the zero value
	// means an estimate of about 4 characters per token.
	Usage echogate.Usage
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// Model overrides the model named in Response.Model and Usage.Model (default: the request's).
	Model string
	// Gate, when non-nil, blocks the call until it is closed (or ctx ends): after GateAfter
	// fragments were delivered (0: before the first).
	Gate      <-chan struct{}
	GateAfter int
	// Entered, when non-nil, is closed as soon as the call starts, so a test can wait for it.
	Entered chan struct{}
	// Expect, when set, checks the request; its error fails the call (returned as-is, wrapped).
	Expect func(agent.Request) error
}

// Reply is a step that answers text.
func Reply(text string) Step { return Step{Text: text} }

// CallTool is a step that calls one tool with the given JSON arguments.
func CallTool(name, argsJSON string) Step {
	return Step{ToolCalls: []echogate.ToolCall{{Name: name, Arguments: argsJSON}}}
}

// CallTools is a step that calls several tools in parallel.
func CallTools(calls ...echogate.ToolCall) Step { return Step{ToolCalls: calls} }

// Fail is a step that fails with err before any text.
func Fail(err error) Step { return Step{Err: err} }

// ScriptedModel is an agent.Model that plays a script, one Step per Generate call, and records a
// deep copy of every request. It is safe for concurrent use; concurrent calls take steps in the
// order they acquire the lock.
type ScriptedModel struct {
	mu       sync.Mutex
	steps    []Step
	next     int
	def      *Step
	requests []agent.Request
}

// NewScriptedModel returns a model that plays steps in order.
func NewScriptedModel(steps ...Step) *ScriptedModel {
	return &ScriptedModel{steps: slices.Clone(steps)}
}

// Append adds steps to the end of the script.
func (m *ScriptedModel) Append(steps ...Step) {
	m.mu.Lock()
	m.steps = append(m.steps, steps...)
	m.mu.Unlock()
}

// SetDefault sets the step played once the script is exhausted (load tests). Its Entered and Gate
// are shared by every call that uses it.
func (m *ScriptedModel) SetDefault(s Step) {
	m.mu.Lock()
	m.def = &s
	m.mu.Unlock()
}

// Requests returns copies of the requests received so far, in call order.
func (m *ScriptedModel) Requests() []agent.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]agent.Request, len(m.requests))
	for i, r := range m.requests {
		out[i] = CloneRequest(r)
	}
	return out
}

// Calls returns how many times Generate was called.
func (m *ScriptedModel) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// Remaining returns how many scripted steps have not been played.
func (m *ScriptedModel) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps) - m.next
}

// Generate plays the next step. It implements agent.Model: onDelta is called in order, its error
// aborts the call; ctx cancellation ends a gate wait or the streaming promptly with ctx's error.
func (m *ScriptedModel) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	step, ok, call, total := m.take(req)
	model := req.Model
	if step.Model != "" {
		model = step.Model
	}
	resp := agent.Response{
		Message: echogate.Message{Role: echogate.RoleAssistant},
		Usage:   echogate.Usage{Kind: echogate.UsageModel, Model: model},
		Model:   model,
	}
	fail := func(err error) (agent.Response, error) {
		resp.Usage.Failed = true
		return resp, err
	}
	if !ok {
		return fail(fmt.Errorf("agenttest: scripted model: call %d has no step (the script has %d): %w", call, total, ErrScriptExhausted))
	}
	if step.Entered != nil {
		closeOnce(step.Entered)
	}
	if step.Expect != nil {
		if err := step.Expect(CloneRequest(req)); err != nil {
			return fail(fmt.Errorf("agenttest: scripted model: call %d: request check: %w", call, err))
		}
	}

	size := step.FragmentSize
	if size <= 0 {
		size = 4
	}
	out := &stepEmitter{ctx: ctx, step: &step, call: call, onDelta: onDelta}
	for _, frag := range Fragments(step.Reasoning, size) {
		if err := out.emit(agent.Delta{Reasoning: frag}); err != nil {
			return fail(err)
		}
	}
	for _, frag := range Fragments(step.Text, size) {
		resp.Message.Content += frag
		if err := out.emit(agent.Delta{Text: frag}); err != nil {
			return fail(err)
		}
	}
	if err := out.wait(); err != nil {
		return fail(err)
	}
	resp.Usage = stepUsage(step, req, model)
	if step.Err != nil {
		return fail(step.Err)
	}
	for i, tc := range step.ToolCalls {
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d_%d", call, i)
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, tc)
	}
	resp.FinishReason = step.FinishReason
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(step.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	return resp, nil
}

// take records req and returns the step that answers it (ok false when the script is done and
// has no default), the call's number (from 1) and the script's length.
func (m *ScriptedModel) take(req agent.Request) (step Step, ok bool, call, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, CloneRequest(req))
	call = len(m.requests)
	if m.next < len(m.steps) {
		step, ok = m.steps[m.next], true
		m.next++
	} else if m.def != nil {
		step, ok = *m.def, true
	}
	return step, ok, call, len(m.steps)
}

// stepEmitter delivers one step's deltas, holding at the step's gate after GateAfter of them.
type stepEmitter struct {
	ctx       context.Context
	step      *Step
	call      int
	onDelta   func(agent.Delta) error
	delivered int
}

func (e *stepEmitter) wait() error {
	if e.step.Gate == nil || e.delivered != e.step.GateAfter {
		return nil
	}
	select {
	case <-e.step.Gate:
		return nil
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
}

func (e *stepEmitter) emit(d agent.Delta) error {
	if err := e.wait(); err != nil {
		return err
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	e.delivered++
	if e.onDelta == nil {
		return nil
	}
	if err := e.onDelta(d); err != nil {
		return fmt.Errorf("agenttest: scripted model: call %d: delta callback: %w", e.call, err)
	}
	return nil
}

// stepUsage is the step's usage, or one estimated from the request and the step's output when
// the step gives none.
func stepUsage(step Step, req agent.Request, model string) echogate.Usage {
	usage := step.Usage
	if usage == (echogate.Usage{}) {
		usage = echogate.Usage{
			InputTokens:  tokensForLen(requestLen(req)),
			OutputTokens: EstimateTokens(step.Reasoning + step.Text + toolCallText(step.ToolCalls)),
		}
	}
	if usage.Kind == "" {
		usage.Kind = echogate.UsageModel
	}
	if usage.Model == "" {
		usage.Model = model
	}
	return usage
}

var closeMu sync.Mutex

// closeOnce closes ch unless it is already closed (a default step shares its channel).
func closeOnce(ch chan struct{}) {
	closeMu.Lock()
	defer closeMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Fragments splits s into pieces of at most size runes (size <= 0 means 4). Empty s gives none.
func Fragments(s string, size int) []string {
	if size <= 0 {
		size = 4
	}
	var out []string
	for len(s) > 0 {
		i, n := 0, 0
		for i < len(s) && n < size {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			n++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// EstimateTokens is the rough count used by the fakes: about one token per 4 bytes, at least 1
// for non-empty text.
func EstimateTokens(s string) int64 { return tokensForLen(len(s)) }

func tokensForLen(n int) int64 {
	if n <= 0 {
		return 0
	}
	return int64(n+3) / 4
}

func requestLen(req agent.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(toolCallText(m.ToolCalls)) + 4
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

func toolCallText(calls []echogate.ToolCall) string {
	s := ""
	for _, c := range calls {
		s += c.Name + c.Arguments
	}
	return s
}

// CloneRequest returns a deep copy of req, so recorded requests do not alias the caller's slices.
func CloneRequest(req agent.Request) agent.Request {
	out := req
	if req.Messages != nil {
		out.Messages = make([]echogate.Message, len(req.Messages))
		for i, m := range req.Messages {
			m.Images = slices.Clone(m.Images)
			m.ToolCalls = slices.Clone(m.ToolCalls)
			out.Messages[i] = m
		}
	}
	if req.Tools != nil {
		out.Tools = make([]tools.Spec, len(req.Tools))
		for i, t := range req.Tools {
			t.Parameters = slices.Clone(t.Parameters)
			out.Tools[i] = t
		}
	}
	if req.Temperature != nil {
		t := *req.Temperature
		out.Temperature = &t
	}
	return out
}
