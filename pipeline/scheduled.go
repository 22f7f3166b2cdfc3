package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
)

// ScheduleToolName is the tool that creates and changes schedules: a scheduled run is never
// offered it, so a run cannot create or change schedules.
const ScheduleToolName = "schedule"

// ScheduledEnd is given to Deps.AfterScheduled when a scheduled run's turn ends (SPEC
// "Scheduled work"): the wiring records the run's outcome from it.
type ScheduledEnd struct {
	Run     echogate.ScheduledRun // empty only for a turn resumed from a pause saved without it: Session names the run
	Session echogate.SessionKey
	EventID string // the slot's event key
	Turn    string
	Status  echogate.TurnStatus
	// Posted is the answer's message as the platform returned it; zero when nothing was
	// posted (quiet, failed, or a posting error).
	Posted echogate.MessageRef
	Quiet  bool   // the answer equalled quiet_if: recorded, not posted
	Budget bool   // a budget stopped the run
	Denied bool   // a sensitive tool call was refused (approval.unattended: deny)
	Err    string // the turn's or the posting's error
}

// schedState is a scheduled run's turn state; zero for other turns.
type schedState struct {
	quiet  bool
	denied atomic.Bool
	posted echogate.MessageRef
	// run is the run a resumed turn continues (its event is the decision's, not the slot's).
	run *echogate.ScheduledRun
	// runBudget makes a run's own budget (Deps.RunBudget, given at construction); nil: none.
	runBudget func(usd float64) (Budget, error)
}

// scheduled returns the run a turn carries: its event's, or for a turn resumed after a
// scheduled run's approval the run's; nil for a turn of a message.
func (t *Turn) scheduled() *echogate.ScheduledRun {
	if t.ev.Scheduled != nil {
		return t.ev.Scheduled
	}
	return t.sched.run
}

// runNote is the agent.State note that carries a scheduled run across its pause.
const runNote = "echogate.scheduled_run"

// saveRun keeps the turn's scheduled run in the state its pause saves: the turn that resumes
// it is the same run (its job's quiet_if, budget and outcome), though its event is a decision.
func (t *Turn) saveRun(st *agent.State) {
	r := t.scheduled()
	if r == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	if st.Notes == nil {
		st.Notes = map[string]string{}
	}
	st.Notes[runNote] = string(b)
}

// pausedRun is the scheduled run a paused state carries (saveRun), nil for other pauses.
func pausedRun(st *agent.State) *echogate.ScheduledRun {
	if st == nil || st.Notes[runNote] == "" {
		return nil
	}
	var r echogate.ScheduledRun
	if json.Unmarshal([]byte(st.Notes[runNote]), &r) != nil || r.Job == "" {
		return nil
	}
	return &r
}

// pauseExpires reports whether the turn's approval pause gets a deadline (approval.timeout):
// under on_timeout: deny every pause; under wait, a scheduled run's too. Nobody watches a
// scheduled run, so it may not wait forever: after the timeout the call is refused, the model
// answers without it, and the run is recorded denied.
func (t *Turn) pauseExpires() bool {
	return t.onTimeout == OnTimeoutDeny || t.scheduled() != nil
}

// refusedByDecision is the reason a resumed scheduled run's call was refused (a person's ❌ or
// the approval timeout), "" when it was approved or the turn did not resume an approval.
func (t *Turn) refusedByDecision() string {
	if t.scheduled() == nil || t.decision == nil || t.approved == nil || t.approved.Paused.Kind != echogate.PauseApproval || t.decision.Approved {
		return ""
	}
	if t.decision.Reason == "" {
		return "not approved"
	}
	return t.decision.Reason
}

// scheduledProfile is the profile a scheduled run names (agent:), or nil to use the place's.
func (p *Pipeline) scheduledProfile(ev echogate.InboundEvent) *profile {
	if ev.Scheduled == nil || ev.Scheduled.Agent == "" {
		return nil
	}
	set := p.agents.Load()
	if set.def.Name == ev.Scheduled.Agent {
		return set.def
	}
	for _, pr := range set.list {
		if pr.Name == ev.Scheduled.Agent {
			return pr
		}
	}
	p.log.Warn("pipeline: a scheduled run names an agent that is gone; the place's agent serves it", "agent", ev.Scheduled.Agent, "event_id", ev.ID)
	return nil
}

// askUserToolName is the tool that asks the person a question and waits for the answer.
const askUserToolName = "ask_user"

// scheduledTool reports whether a scheduled run may be offered tool: never the schedule tool,
// nor ask_user (nobody is there to answer, and a run may not wait forever).
func (t *Turn) scheduledTool(tool string) bool {
	return t.scheduled() == nil || (tool != ScheduleToolName && tool != askUserToolName)
}

// unattendedDecision is the verdict on a call that would ask for approval in a scheduled run:
// denied with a reason unless approval.unattended is prompt (then it asks, and the prompt goes
// to the delivery place, where the owner or an approver decides). ok is false for other turns.
func (t *Turn) unattendedDecision(tool string) (agent.Decision, bool) {
	r := t.scheduled()
	if r == nil || r.Unattended == "prompt" {
		return agent.Decision{}, false
	}
	t.sched.denied.Store(true)
	t.metrics.ToolCall(tool, "denied", 0)
	return agent.Decision{Verdict: agent.Deny, Reason: UnattendedDenialText(tool)}, true
}

// unattendedDenyMark is in the result of every call refused under approval.unattended: deny.
const unattendedDenyMark = "this is a scheduled run with nobody to approve it (approval.unattended: deny)"

// UnattendedDenialText is what the model is told of tool's call refused under
// approval.unattended: deny; it stays in the run's transcript.
func UnattendedDenialText(tool string) string {
	return fmt.Sprintf("not run: %s needs approval and %s; answer without it, or say what a person should do", tool, unattendedDenyMark)
}

// DecisionRefusal reports whether m is the result of a call its approval's decision refused (a
// person's ❌, or the approval timeout), and the reason: a resumed run's "denied" read back
// from its transcript after a restart.
func DecisionRefusal(m echogate.Message) (string, bool) {
	if m.Role != echogate.RoleTool || !m.IsError || !strings.HasPrefix(m.Content, "not approved: ") {
		return "", false
	}
	return m.Content, true
}

// UnattendedDenial reports whether m is the result of a call refused under approval.unattended:
// deny: a run's "denied" read back from its transcript after a restart.
func UnattendedDenial(m echogate.Message) bool {
	return m.Role == echogate.RoleTool && m.IsError && strings.HasPrefix(m.Content, "not run: ") && strings.Contains(m.Content, unattendedDenyMark)
}

// usageTrigger is the trigger the turn's spend is recorded and checked under.
func (t *Turn) usageTrigger() echogate.UsageTrigger {
	if t.scheduled() != nil {
		return echogate.TriggerScheduled
	}
	return echogate.TriggerMessage
}

// reserveRunBudget checks a scheduled run's own budget (budget_usd) before a model call, on
// top of the agent's and the global ones.
func (t *Turn) reserveRunBudget(ctx context.Context, s cost.Scope, req agent.Request) error {
	r := t.scheduled()
	if r == nil || r.BudgetUSD <= 0 || t.sched.runBudget == nil {
		return nil
	}
	b, err := t.sched.runBudget(r.BudgetUSD)
	if err != nil {
		return fmt.Errorf("pipeline: the job's budget: %w", err)
	}
	if err := t.reserveBudget(ctx, budgetCapsOf(b), s, req); err != nil {
		if errors.Is(err, agent.ErrBudget) {
			return fmt.Errorf("the job's budget_usd %.2f for one run is spent (%w)", r.BudgetUSD, err)
		}
		return err
	}
	return nil
}

// quietAnswer reports whether answer is the run's quiet_if text: recorded, not posted.
func (t *Turn) quietAnswer(answer string) bool {
	r := t.scheduled()
	return r != nil && r.QuietIf != "" && strings.TrimSpace(answer) == r.QuietIf
}

// recordRunPost makes a scheduled run's posted answer the turn's posting in the turn log, before
// the turn's end is written: a process killed between the turn's end and the run's outcome
// leaves a done turn whose posting says "delivered", with the message id (nothing streams in a
// scheduled run, so nothing else records it).
func (t *Turn) recordRunPost() {
	if t.scheduled() != nil && !t.sched.posted.IsZero() {
		t.out.recordPosting(t.sched.posted)
	}
}

// ErrOwnerRefused is Submit's error for a scheduled run whose owner the access rules refuse:
// the scheduler records the run failed.
var ErrOwnerRefused = errors.New("pipeline: the job's owner may not use the gateway here (access rules)")

// refusedRun is Submit's answer to an event the access rules refused: nil (nothing happens,
// as for any refused message), or ErrOwnerRefused for a scheduled run.
func refusedRun(ev *echogate.InboundEvent) error {
	if ev.Scheduled != nil {
		return fmt.Errorf("%w: %s", ErrOwnerRefused, ev.Actor.QualifiedID(ev.Conversation.Platform))
	}
	return nil
}

// scheduledNotStarted reports a scheduled run that a per-user limit kept from starting as
// failed; it returns false for other events.
func (p *Pipeline) scheduledNotStarted(ctx context.Context, ev *echogate.InboundEvent, why string) bool {
	if ev.Scheduled == nil {
		return false
	}
	if p.d.AfterScheduled != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterScheduledTimeout)
		defer cancel()
		p.d.AfterScheduled(actx, ScheduledEnd{Run: *ev.Scheduled, Session: ev.SessionKey(), EventID: ev.ID,
			Status: echogate.TurnFailed, Err: "not started: " + why})
	}
	return true
}

// scheduledPrefix starts the sessions of scheduled runs (schedule.SessionKey).
const scheduledPrefix = "schedule:"

// promptSession moves a reaction on the approval prompt of a scheduled run (approval.unattended:
// prompt) into that run's session: the prompt was posted in a conversation whose own session is
// not the run's. Only approval reactions are looked up, with one read.
func (p *Pipeline) promptSession(ctx context.Context, ev *echogate.InboundEvent) {
	if ev.Kind != echogate.KindReaction || ev.Target.IsZero() || ev.Session != "" {
		return
	}
	switch ev.Reaction {
	case echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny:
	default:
		return
	}
	pend, err := p.d.Store.PendingByPrompt(ctx, ev.Target)
	if err == nil && strings.HasPrefix(string(pend.Session), scheduledPrefix) {
		ev.Session = pend.Session
	}
}

// endScheduled tells Deps.AfterScheduled how a scheduled run's turn ended: a run's own turn, or
// the turn that resumed it after an approval (its pause carried the run; for a pause saved
// without it Run is empty and Session names the run). A call refused by the decision (a
// person's ❌, or the approval timeout) makes the run denied.
func (s *ResponseStage) endScheduled(ctx context.Context, t *Turn, res agent.Result, postErr error) {
	r := t.scheduled()
	if r == nil && t.resume != nil && strings.HasPrefix(string(t.key), scheduledPrefix) {
		r = &echogate.ScheduledRun{}
	}
	if r == nil || s.afterScheduled == nil {
		return
	}
	e := ScheduledEnd{Run: *r, Session: t.key, EventID: t.ev.ID, Turn: t.id, Status: t.rec.Status, Posted: t.sched.posted, Quiet: t.sched.quiet,
		Budget: errors.Is(res.Err, agent.ErrBudget), Denied: t.sched.denied.Load(), Err: t.rec.Error}
	if why := t.refusedByDecision(); why != "" && !e.Quiet {
		e.Denied = true
		if e.Err == "" {
			e.Err = why
		}
	}
	if postErr != nil && e.Err == "" {
		e.Err = "post answer: " + postErr.Error()
	}
	if e.Err == "" && res.Err != nil {
		e.Err = res.Err.Error()
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterScheduledTimeout)
	defer cancel()
	s.afterScheduled(actx, e)
}

// afterScheduledTimeout bounds recording a scheduled run's end (it outlives the turn's context).
const afterScheduledTimeout = 30 * time.Second

// replayedNote ends the error of a turn a dead process left running: recovery closed it and
// answers its event again with a new turn.
const replayedNote = " the gateway stopped during the turn; the event was replayed"

// Replayed reports whether rec is a turn recovery closed because its process died, its event
// answered again by a new turn: not how its event ended (a scheduled run's outcome is the new
// turn's).
func Replayed(rec echogate.TurnRecord) bool {
	return rec.Status == echogate.TurnFailed && rec.Error == interruptedPrefix+replayedNote
}
