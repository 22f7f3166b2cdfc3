package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/tools"
)

// toolSpecs is the catalogue this conversation may use.
func (t *Turn) toolSpecs() []tools.Spec {
	all := t.tools.reg.Specs()
	out := all[:0]
	for _, s := range all {
		if t.allowed(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

func (t *Turn) allowed(tool string) bool {
	return t.prof.allowsTool(tool) && (t.tools.filter == nil || t.tools.filter(tool, t.channel, t.userID)) && t.skillToolAllowed(tool) && t.scheduledTool(tool)
}

// executeTool runs one call with the per-tool timeout; panics become tool errors. The turn's
// start writes are durable before any tool runs (a file tool reads the transcript; recovery
// must find the turn). What looks like a secret in the result is masked before the model, the
// transcript or a channel sees it (Deps.Redactor).
func (t *Turn) executeTool(ctx context.Context, call echogate.ToolCall) (res tools.Result, err error) {
	defer func() { res.Content = t.tools.redactor.Redact(res.Content) }()
	if err := t.w.Durable(ctx); err != nil {
		return tools.Result{}, err // the turn fails with it (see beginTurn)
	}
	tool, ok := t.tools.reg.Get(call.Name)
	if !ok || !t.allowed(call.Name) {
		return tools.Errorf("tool %s is not available in this conversation", call.Name), nil
	}
	if tool.Spec().Fetches {
		defer t.fetched.Store(true) // its result is in the turn from now on (tainted)
	}
	if t.approved != nil && t.decision.Approved && t.approved.Paused.CallID == call.ID {
		return t.runApproved(ctx, tool, call)
	}
	return t.runTool(ctx, tool, call)
}

// runTool runs the call under its span and metrics.
func (t *Turn) runTool(ctx context.Context, tool tools.Tool, call echogate.ToolCall) (res tools.Result, err error) {
	start := time.Now()
	var endSpan func(error, map[string]string)
	if t.tools.tracer != nil { // the span's name and attributes are built only for a tracer
		ctx, endSpan = t.tools.tracer.Start(ctx, "execute_tool "+call.Name, map[string]string{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.Name, "gen_ai.tool.call.id": call.ID})
	}
	defer func() {
		if endSpan != nil {
			var spanErr error
			if err != nil {
				spanErr = err
			} else if res.IsError {
				spanErr = errors.New(capText(res.Content, 200))
			}
			endSpan(spanErr, nil)
		}
		result := "ok"
		switch {
		case err != nil:
			result = "failed"
		case res.IsError:
			result = "error"
		}
		t.metrics.ToolCall(call.Name, result, time.Since(start))
	}()
	return t.callTool(ctx, tool, call)
}

// callTool is one call of the tool: the timeout, the caller, panics and failures turned into
// results the model can work around. A Go error means the turn itself ended (or asks the user).
func (t *Turn) callTool(ctx context.Context, tool tools.Tool, call echogate.ToolCall) (res tools.Result, err error) {
	cctx, cancel := context.WithTimeout(ctx, t.tools.timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("tool panicked", "tool", call.Name, "panic", r)
			res, err = tools.Errorf("tool %s failed: internal error (panic)", call.Name), nil
		}
	}()
	args := json.RawMessage(call.Arguments)
	if len(strings.TrimSpace(call.Arguments)) == 0 {
		args = json.RawMessage("{}")
	}
	cctx = tools.WithCaller(cctx, tools.Caller{UserID: t.userID, Session: t.key, Channel: t.channel, Turn: t.id,
		Conversation: t.ev.Conversation, Agent: t.prof.Name})
	cctx = t.withSkillAccess(cctx)
	res, err = tool.Call(cctx, args)
	if err == nil {
		return res, nil
	}
	return t.toolFailed(ctx, cctx, call, res, err)
}

// toolFailed is callTool's answer to a call that returned err (apart, so that a call that
// succeeds does not pay for the error target, which escapes).
func (t *Turn) toolFailed(ctx, cctx context.Context, call echogate.ToolCall, res tools.Result, err error) (tools.Result, error) {
	var ask *tools.AskUserError
	switch {
	case errors.As(err, &ask):
		return res, err
	case ctx.Err() != nil:
		return res, err // the turn itself ended
	case cctx.Err() != nil:
		return tools.Errorf("tool %s timed out after %s", call.Name, t.tools.timeout), nil
	}
	// A tool's own failure is something the model can work around; log it for operators.
	t.log.Warn("tool failed", "tool", call.Name, "err", err)
	return tools.Errorf("tool %s failed: %v", call.Name, err), nil
}
