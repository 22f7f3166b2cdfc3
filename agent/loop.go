package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

	// partial is the text the current model call streamed so far (kept when it fails), in
	// an array the run's calls share; onDelta is r.delta, made once.
	partial []byte
	onDelta func(Delta) error

	// one holds the outcome of a batch of one call (executeBatch), consumed before the next.
	one    [1]tools.Result
	oneErr [1]error

	// buf is the array state.Messages lives in while it has not outgrown it, from buf[1]:
	// buf[0] is the system message of the requests (requestMessages), set once (sysSet).
	buf    []echogate.Message
	sysSet bool
}

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
		// Pending is worked off by reslicing; nothing writes into its array, so it can be the
		// message's own (capped: an append copies).
		r.state.Pending = msg.ToolCalls[:len(msg.ToolCalls):len(msg.ToolCalls)]
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
	req := Request{Model: p.Model, Messages: msgs, MaxTokens: p.MaxTokens, Temperature: p.Temperature, Hints: p.Hints, CacheKey: p.CacheKey,
		ReportUsage: r.rt.ReportUsage}
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
	r.partial = r.partial[:0]
	if r.onDelta == nil {
		r.onDelta = r.delta
	}
	resp, err := r.rt.Model.Generate(ctx, req, r.onDelta)
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
	if err != nil && resp.Message.Content == "" && len(r.partial) > 0 {
		resp.Message.Content = string(r.partial)
	}
	return resp, err
}

// delta is the model call's stream callback (r.onDelta): it passes each delta on as an event
// of the call's iteration and keeps its text in r.partial.
func (r *runner) delta(d Delta) error {
	if r.stopping() {
		return ErrStopped
	}
	if d.Text != "" {
		r.partial = append(r.partial, d.Text...)
		r.emit(Event{Type: EventAnswerDelta, Iteration: r.state.Iteration, Text: d.Text})
	}
	if d.Reasoning != "" {
		r.emit(Event{Type: EventReasoningDelta, Iteration: r.state.Iteration, Text: d.Reasoning})
	}
	return nil
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
