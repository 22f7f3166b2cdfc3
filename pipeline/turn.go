package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/metrics"
	"github.com/echogate/echogate/internal/turnstart"
)

// stageTimeout bounds the ResponseStage's own writes and posts, which run on a fresh context so a
// stopped or timed-out turn still gets its final message and records.
const stageTimeout = 30 * time.Second

// Turn is one pass of an event through the stages: what the event asked, what each stage
// produced, and where the turn is in its lifecycle. The ContextStage fills in, the
// InferenceStage res, the ResponseStage posts and records them. Its fields are written by the
// goroutine running the turn; the lifecycle, the usage ledger and the grants are also used by
// tool goroutines and guard themselves.
type Turn struct {
	// What the turn reaches outside itself, given at construction (newTurn): the clock, the
	// metrics and the store its own writes go to (usage, postings, tool runs, grants).
	now     func() time.Time
	metrics *metrics.Metrics
	store   Store
	tools   toolEnv  // the catalogue, the gate's policy and what runs a call (tool_env.go)
	lib     skillLib // the installed skills (skills.go)
	// onTimeout is what an approval nobody decided in time becomes (Config.OnTimeout).
	onTimeout OnTimeout

	id      string
	ev      echogate.InboundEvent
	key     echogate.SessionKey // ev's, built once (SessionKey builds a string)
	log     *slog.Logger
	userID  string
	channel string
	prof    *profile // the agent serving the turn, fixed for its whole run (profile.go)
	start   time.Time
	rep     Replier
	caps    Caps
	out     *responder
	act     *activity // nil unless the channel shows activity
	ctl     *turnCtl
	life    *Lifecycle
	// stop cancels the turn's stages with a cause (runTurn); refusal is the first transition
	// the lifecycle refused, which fails the turn (refuse).
	stop    context.CancelCauseFunc
	refusal atomic.Pointer[error]
	// detached is the turn's context without its cancellation, bounded by the turn's longest
	// life (runTurn): what must outlive a stop (the stream, usage writes) derives from it, so
	// the turn's values (span, logger) flow and nothing outlives the turn.
	detached context.Context

	// What the turn continues from: a resumed turn's paused state and the decision (nil for
	// a new turn), the durable record of that decision, and the messages the event adds.
	resume   *agent.State
	decision *agent.Resume
	approved *echogate.TurnResume
	msgs     []echogate.Message

	rec echogate.TurnRecord // the turn log's record; final fields set by the ResponseStage
	in  agent.Input         // built by the ContextStage
	res agent.Result        // produced by the InferenceStage

	w      *turnstart.Start   // the start writes, in the store's order (start.go); nil for a resumed turn
	input  []echogate.Message // the input messages the start writes (nil: resumed, or saved already)
	usage  usageLedger        // spend (usage.go)
	grants grantCache         // the user's session grants (inference_gate.go)
	// fetched: a tool that fetches outside content ran in this turn (tainted).
	fetched atomic.Bool
	skills  turnSkills // the skills the turn loaded (skills.go)
	// pauseHeld: another user's paused turn holds the session's pause (withPauseHeld).
	pauseHeld bool
	// inputSaved: the input messages are in the transcript already (replay of a dead turn).
	inputSaved bool
	// unrecorded: the session record this turn did not write (see withUnrecordedSession).
	unrecorded *echogate.SessionInfo
	// histLast is the newest transcript entry the context was built on, when histBase
	// (noteHistory, histthrough.go).
	histLast echogate.StoredMessage
	histBase bool
	// cont: the partial streamed message of a dead turn this turn's answer goes into
	// (withContinued, posting.go).
	cont echogate.MessageRef
	// sched: a scheduled run's state (scheduled.go); zero for a turn of a message.
	sched schedState
}

// turn is Turn's name in the files of the ContextStage's helpers.
type turn = Turn

type turnOption func(*Turn)

func withRequester(id string) turnOption { return func(t *Turn) { t.userID = id } }

// withPauseHeld marks a turn that runs while another user's turn of the session is paused: a
// tool that would ask for approval is refused instead, since the session's pause is taken.
func withPauseHeld() turnOption { return func(t *Turn) { t.pauseHeld = true } }

// withInputSaved marks a turn whose input messages are already in the transcript (a replay).
func withInputSaved() turnOption { return func(t *Turn) { t.inputSaved = true } }

// withUnrecordedSession marks a turn whose session record was not written because it was
// written recently (sessionMarks); buildContext writes it when the transcript shows it may be
// gone.
func withUnrecordedSession(info echogate.SessionInfo) turnOption {
	return func(t *Turn) { t.unrecorded = &info }
}

// withResume makes the turn the continuation of a paused one: it starts in the pause's state
// with its agent state and decision, under the id and record the decision wrote (ResumeTurn).
func withResume(r echogate.TurnResume, st *agent.State, rs *agent.Resume) turnOption {
	return func(t *Turn) {
		t.id, t.resume, t.decision, t.approved = r.Turn, st, rs, &r
		t.sched.run = pausedRun(st)     // scheduled.go: a scheduled run resumed after its approval
		t.userID = r.Paused.RequestedBy // the resumed turn belongs to the user who started it
	}
}

// newTurn is the turn of ev; ok is false when no replier serves its platform.
func (p *Pipeline) newTurn(ctl *turnCtl, log *slog.Logger, ev *echogate.InboundEvent, msgs []echogate.Message, opts ...turnOption) (*Turn, bool) {
	t := &Turn{now: p.cfg.Now, metrics: p.d.Metrics, store: p.d.Store, tools: p.toolEnv(), lib: p.skillLib(), onTimeout: p.cfg.OnTimeout, id: ids.New("t_"), ev: *ev, key: ev.SessionKey(), start: p.cfg.Now(), ctl: ctl, msgs: msgs,
		userID: ev.Actor.QualifiedID(ev.Conversation.Platform), channel: ev.Conversation.Platform + ":" + ev.Conversation.Channel,
		prof: p.profileFor(*ev)}
	if pr := p.scheduledProfile(*ev); pr != nil {
		t.prof = pr // the job's agent (scheduled.go)
	}
	for _, o := range opts {
		o(t)
	}
	ctl.setOwner(t.userID, t.prof.approvers)
	t.log = log.With("turn", t.id, "agent", t.prof.Name)
	t.rep = p.d.Repliers[ev.Conversation.Platform]
	if t.rep == nil {
		t.log.Error("pipeline: no replier for platform; dropping event", "platform", ev.Conversation.Platform)
		return nil, false
	}
	t.caps = p.caps[ev.Conversation.Platform]
	if t.scheduled() != nil {
		t.caps.Streamer = nil // nobody watches; a quiet answer must not appear while it streams
	}
	t.usage.pricer, t.usage.observers = p.d.Pricer, p.d.UsageObservers
	t.sched.runBudget = p.d.RunBudget
	t.life = NewLifecycle(StateIdle)
	if t.resume != nil {
		t.life = NewLifecycle(StateWaitingApproval)
		if t.approved.Paused.Kind == echogate.PauseAsk {
			t.life = NewLifecycle(StateClarifying)
		}
	}
	t.out = newResponder(t, p.cfg.Now, p.cfg.PlanUpdateInterval, p.d.Metrics)
	t.out.restorePlan(t.resume)
	t.rec = echogate.TurnRecord{ID: t.id, Session: t.key, EventKey: ev.DedupeKey(), UserID: t.userID,
		Agent: t.prof.Name, Status: echogate.TurnRunning, Model: t.prof.Model, StartedAt: t.start}
	return t, true
}

// enter moves the turn's lifecycle to `to` and announces the transition's turn event, if it
// has one without data (the start). It reports whether the state changed. An illegal move
// leaves the state as it was and fails the turn (refuse).
func (t *Turn) enter(to State) bool {
	from := t.life.State()
	changed, err := t.life.Enter(to)
	if err != nil {
		t.refuse(from, to, err)
		return false
	}
	if typ, ok := turnEventOf(from, to); changed && ok && typ == echogate.TurnStarted {
		t.out.event(echogate.TurnEvent{Type: typ})
	}
	return changed
}

// refuse fails the turn on a move its lifecycle refused: a pipeline bug, never the user's
// doing. The refusal is counted and logged with the turn id and both states, the turn's stages
// are stopped (no tool runs after it), and the ResponseStage answers and records the turn as
// failed, whatever state it reached (failRefused, refusedStatus). Tests fail on any refusal
// they did not ask for (refusals, TestMain).
func (t *Turn) refuse(from, to State, err error) {
	refusals.Add(1)
	t.metrics.RefusedTransition(from.String(), to.String())
	t.log.Error("pipeline: refused turn transition; the turn fails", "from", from.String(), "to", to.String(), "err", err)
	if t.refusal.CompareAndSwap(nil, &err) && t.stop != nil {
		t.stop(err)
	}
}

// refused is the error of the first transition the turn's lifecycle refused, or nil.
func (t *Turn) refused() error {
	if e := t.refusal.Load(); e != nil {
		return *e
	}
	return nil
}

// refusals counts every refused transition of the process; the package's tests fail when it
// is not what they expected (TestMain).
var refusals atomic.Int64

// RefusedTransitions is how many turn transitions the lifecycle refused in this process, over
// every Pipeline (each failed its turn and is in echogate_turn_refused_transitions_total). Any
// is a pipeline bug: test binaries that run turns check that it stays zero.
func RefusedTransitions() int64 { return refusals.Load() }

// runTurn runs the three stages for one event.
func (p *Pipeline) runTurn(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev *echogate.InboundEvent, msgs []echogate.Message, opts ...turnOption) {
	t, ok := p.newTurn(ctl, log, ev, msgs, opts...)
	if !ok {
		return
	}
	attrs := map[string]string{
		"echogate.session": string(t.rec.Session), "echogate.turn": t.id, "echogate.channel": ev.Conversation.Platform,
		"echogate.event_id": ev.ID, "echogate.resumed": fmt.Sprint(t.resume != nil)}
	if r := ev.Scheduled; r != nil { // a scheduled run's trace names its job and slot
		attrs["echogate.schedule.job"], attrs["echogate.schedule.slot"] = r.Job, r.Slot.UTC().Format(time.RFC3339)
	}
	ctx, endTurn := p.span(ctx, "echogate.turn", attrs)
	defer func() {
		endTurn(t.res.Err, map[string]string{"echogate.status": string(t.res.Status),
			"gen_ai.response.model": t.res.Model, "echogate.route_reason": t.res.RouteReason})
	}()
	defer t.startActivity(ctx)() // cleared when the turn ends, however it ends
	defer t.releaseBudget()      // after the ResponseStage recorded the last call's usage
	// The longest a turn lives: its timeout, then the ResponseStage's own bound.
	detached, endDetached := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.TurnTimeout+stageTimeout)
	defer endDetached()
	t.detached, t.out.streamCtx = detached, detached
	ctx, stopTurn := context.WithCancelCause(ctx)
	defer stopTurn(nil)
	t.stop = stopTurn
	t.enter(t.firstState())

	// The turn record and the user's message are written in the store's order while the
	// context is built (see beginTurn).
	var input []echogate.Message
	if t.resume == nil && !t.inputSaved {
		input = msgs
	}
	t.beginTurn(ctx, input, p.startReads(t, input))

	if err := p.stages.Context.Process(ctx, t); err != nil {
		p.finishFailed(ctx, t, err)
		return
	}
	_ = p.stages.Inference.Process(ctx, t)
	// The ResponseStage runs on its own bounded context: a stopped or timed-out turn is still
	// answered and recorded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	_ = p.stages.Response.Process(rctx, t)
}

// firstState is the state a turn enters first: Processing, or for a resumed approval the
// approved call's execution.
func (t *Turn) firstState() State {
	if t.decision != nil && t.decision.Approved {
		return StateToolExec
	}
	return StateProcessing
}

// userMessage is the transcript message of an inbound event.
func userMessage(ev *echogate.InboundEvent) echogate.Message {
	text := withThreadContext(*ev, ev.Text)
	if len(ev.Attachments) > 0 {
		var b strings.Builder
		b.WriteString(text)
		b.WriteString("\n\n[attachments: ")
		for i, a := range ev.Attachments {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%s, %d bytes, id %s)", a.Name, a.MIME, a.Size, a.ID)
		}
		b.WriteString("]")
		text = b.String()
	}
	return echogate.Message{Role: echogate.RoleUser, Content: text, Name: ev.Actor.Name, Attachments: ev.Attachments}
}
