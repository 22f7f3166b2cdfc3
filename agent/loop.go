package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

const (
	defaultMaxIterations   = 8
	defaultToolConcurrency = 4
	// finalCallNote is appended to the last model call a turn may make, which is sent without
	// tools, so the model answers with what it has instead of asking for more tools.
	finalCallNote = "The tool budget for this turn is used up. Answer the user now with what you have; say what is left undone."
	// defaultDenyReason is what the model sees for a denial without a reason.
	defaultDenyReason = "not approved: the user declined this tool call"
)

// Run runs the agent loop until the model answers without tool calls, the iteration budget is
// spent, a budget or stop ends it, or a tool call needs a human (pause).
//
// Run blocks for the whole turn. Cancelling ctx ends it promptly: with status aborted when
// rt.IsStopping reports true (a user's stop), with status error otherwise (a timeout, shutdown).
// It never panics on tool code: ExecuteTool is expected to recover; a Go error from it fails the
// turn. Whatever the status, the Result carries the messages and usage produced so far.
func Run(ctx context.Context, in Input, rt Runtime) Result {
	// The whole turn runs on top of this frame and run's: neither holds a Runtime or a Result,
	// which live in the runner.
	r := newRunner(&rt)
	r.run(ctx, in)
	return r.res
}

type runner struct {
	rt      Runtime
	maxIter int
	conc    int

	state State
	res   Result
	texts []string // assistant texts of this run

	// buf is the array state.Messages lives in while it has not outgrown it, from buf[1]:
	// buf[0] is the system message of the requests (requestMessages), set once (sysSet).
	buf    []echogate.Message
	sysSet bool
}

// msgHeadroom is the room adopt leaves after the messages for the ones the turn adds (an
// answer, a few rounds of tool calls and results) before state.Messages must grow.
const msgHeadroom = 8

func newRunner(rt *Runtime) *runner {
	r := &runner{rt: *rt}
	if rt.Params.Plan {
		r.rt.Tools = append(append([]tools.Spec(nil), rt.Tools...), PlanSpec)
	}
	r.maxIter = rt.Params.MaxIterations
	if r.maxIter <= 0 {
		r.maxIter = defaultMaxIterations
	}
	r.conc = rt.Params.ToolConcurrency
	if r.conc <= 0 {
		r.conc = defaultToolConcurrency
	}
	return r
}

// run runs the loop; its outcome is r.res.
func (r *runner) run(ctx context.Context, in Input) {
	if in.State != nil {
		if !r.continuePaused(ctx, in) {
			return
		}
	} else {
		if in.Resume != nil {
			r.finish(StatusError, "", fmt.Errorf("%w: resume given without state", ErrBadResume))
			return
		}
		r.adoptInput(in)
	}

	for {
		if r.checkStop(ctx) {
			return
		}
		final := r.state.Iteration >= r.maxIter-1
		resp, err := r.callModel(ctx, in.System, final)
		if err != nil {
			switch {
			case errors.Is(err, ErrBudget):
				r.finish(StatusAborted, "budget", err)
				return
			case r.stopping() || errors.Is(err, ErrStopped):
				r.keepPartial(resp)
				r.finish(StatusAborted, "stopped", nil)
				return
			default:
				r.keepPartial(resp)
				r.finish(StatusError, "", err)
				return
			}
		}
		msg := resp.Message
		msg.Role = echogate.RoleAssistant
		if final {
			msg.ToolCalls = nil // the last call was made without tools; ignore invented calls
		}
		r.addMessage(msg)
		if msg.Content != "" {
			r.texts = append(r.texts, msg.Content)
		}
		if len(msg.ToolCalls) == 0 {
			reason := resp.FinishReason
			if final && len(resp.Message.ToolCalls) > 0 {
				reason = "max_iterations"
			}
			r.finish(StatusDone, reason, nil)
			return
		}
		for _, c := range msg.ToolCalls {
			r.emit(Event{Type: EventToolCall, Iteration: r.state.Iteration, Call: c})
		}
		r.state.Pending = append([]echogate.ToolCall(nil), msg.ToolCalls...)
		if err := r.runPending(ctx); err != nil {
			if r.stopping() || errors.Is(err, ErrStopped) {
				r.finish(StatusAborted, "stopped", nil)
				return
			}
			r.finish(StatusError, "", err)
			return
		}
		if r.res.Status == StatusPaused {
			return
		}
	}
}

// continuePaused starts a run from the paused state in.State: the pending calls resolved with
// in.Resume, then in.Messages. It reports whether the loop goes on (false: the run ended or
// paused again, see r.res). It is run's, kept out of run's frame, which the turn's model calls
// run on top of.
func (r *runner) continuePaused(ctx context.Context, in Input) bool {
	st := *in.State
	st.Messages = nil
	r.state = cloneState(st)
	r.adopt(in.State.Messages)
	if err := r.resume(ctx, in.Resume); err != nil {
		r.finish(StatusError, "", err)
		return false
	}
	if r.res.Status == StatusPaused || r.checkStop(ctx) {
		return false
	}
	for _, m := range in.Messages {
		r.addMessage(m)
	}
	return true
}

// resume resolves State.Pending[0] with the human's decision, then the remaining pending calls.
func (r *runner) resume(ctx context.Context, rs *Resume) error {
	if len(r.state.Pending) == 0 {
		if rs != nil {
			return fmt.Errorf("%w: nothing is pending", ErrBadResume)
		}
		return nil
	}
	call := r.state.Pending[0]
	if rs == nil || rs.CallID != call.ID {
		got := "<none>"
		if rs != nil {
			got = rs.CallID
		}
		return fmt.Errorf("%w: pending %s (%s), got %s", ErrBadResume, call.ID, call.Name, got)
	}
	kind := r.state.PauseKind
	r.state.PauseKind = ""
	switch kind {
	case echogate.PauseAsk:
		r.addToolResult(call, tools.Result{Content: rs.Answer})
		r.state.Pending = r.state.Pending[1:]
	default: // approval
		if rs.Approved {
			res, err := r.execute(ctx, call)
			if err != nil {
				var ask *tools.AskUserError
				if errors.As(err, &ask) {
					r.pauseAsk(call, ask.Question)
					return nil
				}
				return err
			}
			r.addToolResult(call, res)
		} else {
			reason := rs.Reason
			if reason == "" {
				reason = defaultDenyReason
			}
			r.addToolResult(call, tools.Result{Content: reason, IsError: true})
		}
		r.state.Pending = r.state.Pending[1:]
	}
	return r.runPending(ctx)
}

// runPending works through state.Pending: denied and unknown calls get an error result, allowed
// safe calls run concurrently in a batch, everything else runs serially; an Ask verdict or an
// ask_user call pauses. It returns an error only for a failed turn.
func (r *runner) runPending(ctx context.Context) error {
	for len(r.state.Pending) > 0 {
		if r.stopping() {
			return ErrStopped
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		call := r.state.Pending[0]
		if call.Name == PlanToolName && r.rt.Params.Plan {
			var res tools.Result
			r.state.Plan, res = applyPlan(r.state.Plan, call.Arguments)
			r.addToolResult(call, res)
			r.state.Pending = r.state.Pending[1:]
			if !res.IsError {
				r.emit(Event{Type: EventPlan, Iteration: r.state.Iteration, Call: call, Text: r.state.Plan.Render()})
			}
			continue
		}
		spec, ok := r.spec(call.Name)
		if !ok {
			r.addToolResult(call, tools.Errorf("unknown tool %q; available tools: %s", call.Name, r.toolNames()))
			r.state.Pending = r.state.Pending[1:]
			continue
		}
		d := r.authorize(ctx, call, spec)
		switch d.Verdict {
		case Deny:
			reason := d.Reason
			if reason == "" {
				reason = "not allowed: tool " + call.Name + " is denied by policy"
			}
			r.addToolResult(call, tools.Result{Content: reason, IsError: true})
			r.state.Pending = r.state.Pending[1:]
			continue
		case Ask:
			r.state.PauseKind = echogate.PauseApproval
			r.emit(Event{Type: EventApprovalRequested, Iteration: r.state.Iteration, Call: call})
			r.res.Status = StatusPaused
			r.res.Pause = &Pause{Kind: echogate.PauseApproval, Call: call}
			r.finishPaused()
			return nil
		}
		// Allowed. Gather the run of consecutive allowed safe calls into one concurrent batch.
		batch := []echogate.ToolCall{call}
		if spec.Safety == tools.Safe {
			for _, next := range r.state.Pending[1:] {
				ns, ok := r.spec(next.Name)
				if !ok || ns.Safety != tools.Safe || r.authorize(ctx, next, ns).Verdict != Allow {
					break
				}
				batch = append(batch, next)
			}
		}
		results, errs := r.executeBatch(ctx, batch)
		var asked *echogate.ToolCall
		var question string
		for i, c := range batch {
			if errs[i] != nil {
				var ask *tools.AskUserError
				if errors.As(errs[i], &ask) && asked == nil {
					asked, question = &batch[i], ask.Question
					continue
				}
				return fmt.Errorf("agent: tool %s: %w", c.Name, errs[i])
			}
			r.addToolResult(c, results[i])
		}
		r.state.Pending = r.state.Pending[len(batch):]
		if asked != nil {
			// Keep the asking call first in Pending; results of the others are already in.
			r.state.Pending = append([]echogate.ToolCall{*asked}, r.state.Pending...)
			r.pauseAsk(*asked, question)
			return nil
		}
	}
	return nil
}

func (r *runner) pauseAsk(call echogate.ToolCall, question string) {
	if len(r.state.Pending) == 0 || r.state.Pending[0].ID != call.ID {
		r.state.Pending = append([]echogate.ToolCall{call}, r.state.Pending...)
	}
	r.state.PauseKind = echogate.PauseAsk
	r.emit(Event{Type: EventAsk, Iteration: r.state.Iteration, Call: call, Text: question})
	r.res.Status = StatusPaused
	r.res.Pause = &Pause{Kind: echogate.PauseAsk, Call: call, Question: question}
	r.finishPaused()
}

func (r *runner) executeBatch(ctx context.Context, batch []echogate.ToolCall) ([]tools.Result, []error) {
	results := make([]tools.Result, len(batch))
	errs := make([]error, len(batch))
	if len(batch) == 1 {
		results[0], errs[0] = r.execute(ctx, batch[0])
		return results, errs
	}
	sem := make(chan struct{}, r.conc)
	var wg sync.WaitGroup
	for i := range batch {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i], errs[i] = r.execute(ctx, batch[i])
		}()
	}
	wg.Wait()
	return results, errs
}

func (r *runner) execute(ctx context.Context, call echogate.ToolCall) (tools.Result, error) {
	if r.rt.ExecuteTool == nil {
		return tools.Result{}, fmt.Errorf("agent: no tool executor configured for %s", call.Name)
	}
	r.emit(Event{Type: EventToolRunStart, Iteration: r.state.Iteration, Call: call})
	res, err := r.rt.ExecuteTool(ctx, call)
	r.emit(Event{Type: EventToolRunEnd, Iteration: r.state.Iteration, Call: call, Result: res, Err: err})
	return res, err
}

func (r *runner) authorize(ctx context.Context, call echogate.ToolCall, spec tools.Spec) Decision {
	if r.rt.Authorize == nil {
		return Decision{Verdict: Allow}
	}
	return r.rt.Authorize(ctx, call, spec)
}

// callModel makes one model call with the current state. final makes it the last call of the
// turn: no tools, and a note asking for an answer.
func (r *runner) callModel(ctx context.Context, system string, final bool) (Response, error) {
	if r.rt.Model == nil {
		return Response{}, errors.New("agent: no model configured")
	}
	if r.rt.Compact != nil {
		n := len(r.state.Messages)
		msgs, changed, err := r.rt.Compact(ctx, r.state.Messages[:n:n])
		if err != nil {
			return Response{}, fmt.Errorf("agent: compress context: %w", err)
		}
		if changed {
			r.state.Messages = msgs
			r.emit(Event{Type: EventCompressed, Iteration: r.state.Iteration})
		}
	}
	p := r.rt.Params
	msgs := r.requestMessages(system + planPrompt(r.state.Plan))
	req := Request{Model: p.Model, Messages: msgs, MaxTokens: p.MaxTokens, Temperature: p.Temperature, Hints: p.Hints, CacheKey: p.CacheKey}
	if req.CacheKey == "" {
		req.CacheKey = string(p.Hints.Session)
	}
	if final && len(r.rt.Tools) > 0 && r.state.Iteration > 0 {
		req.Messages = append(req.Messages, echogate.Message{Role: echogate.RoleSystem, Content: finalCallNote})
	} else if !final {
		req.Tools = r.rt.Tools
	}
	if r.rt.BeforeModelCall != nil {
		if err := r.rt.BeforeModelCall(ctx, req); err != nil {
			return Response{}, err
		}
	}
	iter := r.state.Iteration
	r.emit(Event{Type: EventLLMRequestStart, Iteration: iter, Model: req.Model})
	var partial strings.Builder
	resp, err := r.rt.Model.Generate(ctx, req, func(d Delta) error {
		if r.stopping() {
			return ErrStopped
		}
		if d.Text != "" {
			partial.WriteString(d.Text)
			r.emit(Event{Type: EventAnswerDelta, Iteration: iter, Text: d.Text})
		}
		if d.Reasoning != "" {
			r.emit(Event{Type: EventReasoningDelta, Iteration: iter, Text: d.Reasoning})
		}
		return nil
	})
	r.state.Iteration++
	if resp.Model != "" {
		r.res.Model, r.res.RouteReason = resp.Model, resp.RouteReason
	}
	u := resp.Usage
	if u.Kind == "" {
		u.Kind = echogate.UsageModel
	}
	if u.Model == "" {
		u.Model = firstNonEmpty(resp.Model, req.Model)
	}
	if err != nil {
		u.Failed = true
	}
	r.reportUsage(u)
	r.emit(Event{Type: EventLLMRequestEnd, Iteration: iter, Model: u.Model, Usage: u, Err: err})
	if err != nil && resp.Message.Content == "" && partial.Len() > 0 {
		resp.Message.Content = partial.String()
	}
	return resp, err
}

// keepPartial records the text streamed before a failure or stop, so it is not lost.
func (r *runner) keepPartial(resp Response) {
	if resp.Message.Content == "" {
		return
	}
	r.addMessage(echogate.Message{Role: echogate.RoleAssistant, Content: resp.Message.Content})
	r.texts = append(r.texts, resp.Message.Content)
}

func (r *runner) reportUsage(u echogate.Usage) {
	r.res.Usage = append(r.res.Usage, u)
	if r.rt.ReportUsage != nil {
		r.rt.ReportUsage(u)
	}
}

func (r *runner) addMessage(m echogate.Message) {
	r.state.Messages = append(r.state.Messages, m)
	r.res.Messages = append(r.res.Messages, m)
}

func (r *runner) addToolResult(call echogate.ToolCall, res tools.Result) {
	r.addMessage(echogate.Message{
		Role:       echogate.RoleTool,
		ToolCallID: call.ID,
		Name:       call.Name,
		Content:    res.Content,
		IsError:    res.IsError,
	})
}

// checkStop ends the run (finish) and reports true when it is stopping or ctx ended.
func (r *runner) checkStop(ctx context.Context) bool {
	if r.stopping() {
		r.finish(StatusAborted, "stopped", nil)
		return true
	}
	if err := ctx.Err(); err != nil {
		r.finish(StatusError, "", fmt.Errorf("agent: %w", err))
		return true
	}
	return false
}

func (r *runner) stopping() bool { return r.rt.IsStopping != nil && r.rt.IsStopping() }

func (r *runner) emit(ev Event) {
	if r.rt.Emit != nil {
		r.rt.Emit(ev)
	}
}

func (r *runner) finishPaused() {
	r.res.State = cloneState(r.state)
	r.res.Answer = strings.Join(r.texts, "\n\n")
}

// finish ends the run with status st: r.res is its Result.
func (r *runner) finish(st Status, reason string, err error) {
	r.res.Status = st
	r.res.FinishReason = reason
	r.res.Err = err
	r.res.Pause = nil
	r.state.Pending = nil
	r.state.PauseKind = ""
	// The run is over: its state is handed out as it is, not copied. Its messages are capped
	// so that an append by the caller never writes into an array a request was given.
	final := r.state
	final.Messages = final.Messages[:len(final.Messages):len(final.Messages)]
	r.res.State = final
	r.res.Answer = strings.Join(r.texts, "\n\n")
}

// adopt makes a copy of msgs the state's messages, in a new buf: a free slot before them for
// the system message, room after them for the turn's own.
func (r *runner) adopt(msgs []echogate.Message) {
	buf := make([]echogate.Message, 1+len(msgs), 1+len(msgs)+msgHeadroom)
	copy(buf[1:], msgs)
	r.setBuf(buf)
}

// adoptInput makes a new run's messages the state's: in place in in.Buf when it holds them (see
// Input.Buf), else in a copy (adopt).
func (r *runner) adoptInput(in Input) {
	if !heldAfterSlot(in.Messages, in.Buf) {
		r.adopt(in.Messages)
		return
	}
	buf := in.Buf[:1+len(in.Messages)]
	buf[0] = echogate.Message{}
	r.setBuf(buf)
}

// setBuf makes buf[1:] the state's messages; buf[0] is not yet the system message.
func (r *runner) setBuf(buf []echogate.Message) {
	r.buf, r.state.Messages, r.sysSet = buf, buf[1:], false
}

// heldAfterSlot reports whether msgs is buf[1:1+len(msgs)] with the rest of buf's capacity:
// the messages live in buf right after its system message's slot.
func heldAfterSlot(msgs, buf []echogate.Message) bool {
	return len(buf) > 0 && cap(msgs) == cap(buf)-1 && (len(msgs) == 0 || &msgs[0] == &buf[:2][1])
}

// requestMessages returns a request's messages: the system message sys (none when empty), then
// the state's messages. While the state's messages still live in buf, and sys is the system
// message of the earlier requests, that is a view of buf, not a copy; otherwise the messages
// move to a new buf first (a compaction replaced them, they outgrew it, or the plan changed
// sys: a request given earlier must keep its own system message). The view is capped at its
// length, so an append to it copies instead of writing into buf.
func (r *runner) requestMessages(sys string) []echogate.Message {
	n := len(r.state.Messages)
	if sys == "" {
		return r.state.Messages[:n:n]
	}
	inBuf := n > 0 && heldAfterSlot(r.state.Messages, r.buf)
	if !inBuf || (r.sysSet && r.buf[0].Content != sys) {
		r.adopt(r.state.Messages)
	}
	if !r.sysSet {
		r.buf[0] = echogate.Message{Role: echogate.RoleSystem, Content: sys}
		r.sysSet = true
	}
	return r.buf[: 1+n : 1+n]
}

// spec returns the catalogue's spec of the tool named name (the last one, should two share it).
func (r *runner) spec(name string) (tools.Spec, bool) {
	for i := len(r.rt.Tools) - 1; i >= 0; i-- {
		if r.rt.Tools[i].Name == name {
			return r.rt.Tools[i], true
		}
	}
	return tools.Spec{}, false
}

func (r *runner) toolNames() string {
	names := make([]string, 0, len(r.rt.Tools))
	for _, s := range r.rt.Tools {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func cloneState(s State) State {
	s.Messages = append([]echogate.Message(nil), s.Messages...)
	s.Pending = append([]echogate.ToolCall(nil), s.Pending...)
	if s.Notes != nil {
		n := make(map[string]string, len(s.Notes))
		for k, v := range s.Notes {
			n[k] = v
		}
		s.Notes = n
	}
	return s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
