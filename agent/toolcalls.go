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
		// Allowed. Gather the run of consecutive allowed safe calls into one concurrent batch:
		// the front of Pending.
		n := 1
		if spec.Safety == tools.Safe {
			for _, next := range r.state.Pending[1:] {
				ns, ok := r.spec(next.Name)
				if !ok || ns.Safety != tools.Safe || r.authorize(ctx, next, ns).Verdict != Allow {
					break
				}
				n++
			}
		}
		batch := r.state.Pending[:n:n]
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

// executeBatch runs the calls of batch, concurrently when there are several, and returns
// their outcomes in order. A single call runs on the loop's goroutine, its outcome in r.one:
// the caller consumes it before the next batch.
func (r *runner) executeBatch(ctx context.Context, batch []echogate.ToolCall) ([]tools.Result, []error) {
	if len(batch) == 1 {
		r.one[0], r.oneErr[0] = r.execute(ctx, batch[0])
		return r.one[:], r.oneErr[:]
	}
	results := make([]tools.Result, len(batch))
	errs := make([]error, len(batch))
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
