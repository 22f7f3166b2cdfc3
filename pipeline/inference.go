package pipeline

import (
	"context"

	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
)

// InferenceStage runs the agent loop (agent.Run) on the input the ContextStage built: the
// model ⇄ tools loop, with every call that is not safe passing the ApprovalGate
// (inference_gate.go) and every call running through executeTool (inference_tools.go). It
// sets t.res; a failed, stopped or paused loop is a result, not an error, so the
// ResponseStage answers it.
type InferenceStage struct {
	model     agent.Model
	limits    inferenceLimits
	budget    budgetCaps      // the gateway-wide budget (the agent's own is on the turn's profile)
	people    *people         // the shared conversation's compaction (history_people.go)
	overrides *modelOverrides // the sessions' /model choices (commands.go)
}

// inferenceLimits are the agent loop's configured bounds.
type inferenceLimits struct {
	maxIterations, maxTokens, toolConcurrency int
	noPlan                                    bool
}

// inferenceStage is the pipeline's InferenceStage.
func (p *Pipeline) inferenceStage(pp *people) *InferenceStage {
	return &InferenceStage{model: p.d.Model, budget: budgetCapsOf(p.d.Budget), people: pp, overrides: p.overrides,
		limits: inferenceLimits{maxIterations: p.cfg.MaxIterations, maxTokens: p.cfg.MaxTokens, toolConcurrency: p.cfg.ToolConcurrency, noPlan: p.cfg.NoPlan}}
}

// Process implements Stage. It blocks for the whole loop; ctx's cancellation (a stop, the
// turn timeout) ends the model stream and the running tools.
func (s *InferenceStage) Process(ctx context.Context, t *Turn) error {
	// A routing model reports the usage of failed attempts to Runtime.ReportUsage (the loop
	// puts it on every agent.Request), attributed to this turn.
	t.res = agent.Run(ctx, t.in, s.runtime(t))
	// The turn's context is not needed any more, nor, unless the turn pauses, the conversation
	// in its state: neither is kept while the ResponseStage posts and waits for its writes.
	t.in = agent.Input{}
	if t.res.Status != agent.StatusPaused {
		t.res.State.Messages = nil
	}
	return nil
}

// runtime builds the agent.Runtime of a turn.
func (s *InferenceStage) runtime(t *Turn) agent.Runtime {
	rt := agent.Runtime{
		Model: s.model,
		Params: agent.Params{
			Model:           t.prof.Model,
			MaxIterations:   s.limits.maxIterations,
			MaxTokens:       s.limits.maxTokens,
			ToolConcurrency: s.limits.toolConcurrency,
			Plan:            !s.limits.noPlan && t.allowed(agent.PlanToolName), // under the agent's allow-list
			Hints: agent.Hints{Session: t.key, UserID: t.userID, Channel: t.channel,
				Attachments: len(t.ev.Attachments), Override: s.overrides.get(t.key)},
		},
		Tools:       t.toolSpecs(),
		Authorize:   t.authorizeSkills, // the active skills' allowed-tools and skill scripts, then authorize (skills.go)
		ExecuteTool: t.executeTool,
		IsStopping:  t.ctl.stopping.Load,
		Emit:        t.emit,
		ReportUsage: t.reportUsage,
	}
	t.prof.hints(&rt.Params.Hints)
	budgets := s.budget.budget != nil || t.prof.budget.budget != nil || t.scheduled() != nil
	rt.BeforeModelCall = func(ctx context.Context, req agent.Request) error {
		// A tool the model asked for that did not run (denied, unknown, the plan) left the
		// question and the spend due (writeProgress): the turn goes on, they are written now.
		t.w.Flush()
		if !budgets {
			return nil
		}
		// The check must see this turn's spend so far.
		if t.usage.buffered() {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
			t.flushUsage(fctx)
			cancel()
		}
		t.usage.inFlight.Wait()
		// Every earlier call of the turn is in the ledger now: its hold is released, and this
		// call's estimate is held until its own usage is (peruser.go).
		t.releaseBudget()
		scope := cost.Scope{Turn: t.id, UserID: t.userID, Channel: t.channel, Session: t.key, Trigger: t.usageTrigger()}
		if err := t.reserveBudget(ctx, s.budget, scope, req); err != nil {
			return err
		}
		if err := t.reserveRunBudget(ctx, scope, req); err != nil { // a scheduled run's own (scheduled.go)
			return err
		}
		return t.reserveBudget(ctx, t.prof.budget, scope, req) // the agent's own limits, on top
	}
	rt.Compact = s.people.compact(t) // history_people.go: a shared conversation's summary is scrubbed
	return rt
}

// emit receives the agent loop's events (from tool goroutines too): the turn's state follows
// them, and the responder carries them to the channel.
func (t *Turn) emit(e agent.Event) {
	switch e.Type {
	case agent.EventLLMRequestStart:
		t.enter(StateProcessing)
	case agent.EventAnswerDelta:
		t.enter(StateStreaming)
	case agent.EventToolCall:
		t.enter(StateToolExec)
		// The tool may read the question (see beginTurn), and the turn goes on: its spend so
		// far goes to the ledger. Both in one write, which the tool run issues and awaits.
		t.writeProgress()
	case agent.EventToolRunStart:
		t.enter(StateToolExec)
	}
	t.out.emit(e)
}
