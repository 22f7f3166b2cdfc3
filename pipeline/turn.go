package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
	"github.com/echogate/echogate/agent/router"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/tools"
)

// stageTimeout bounds the ResponseStage's own writes and posts, which run on a fresh context so a
// stopped or timed-out turn still gets its final message and records.
const stageTimeout = 30 * time.Second

// handle processes one dequeued event. It never returns an error: failures are answered with the
// fallback text and logged with the turn id.
func (p *Pipeline) handle(ctx context.Context, ctl *turnCtl, it item) {
	ev := it.ev
	key := ev.SessionKey()
	log := p.log.With("session", key, "event_id", ev.ID, "channel", ev.Conversation.Platform)
	done := &completion{p: p, key: ev.DedupeKey(), log: log}
	ctx = withCompletion(ctx, done)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
		defer cancel()
		done.complete(cctx)
	}()
	if ev.Actor.IsBot && !ev.Actor.IsSelf {
		return // adapters drop these; never answer a bot
	}
	var resumeOpts []turnOption
	if it.replay && p.closeInterruptedTurns(ctx, log, ev) {
		// The dead turn saved the user's message already: answer it without saving it again.
		resumeOpts = append(resumeOpts, withInputSaved())
	}

	// The session record is written while the pause is looked up and the turn starts: nothing
	// reads it before the turn ends, and its write joins the turn's first commit (group commit).
	// A session active in the last minute has it already (see sessionMarks).
	now := p.cfg.Now()
	info := echogate.SessionInfo{Key: key, Conversation: ev.Conversation, UserID: ev.Actor.QualifiedID(ev.Conversation.Platform),
		Ephemeral: ev.Ephemeral, CreatedAt: now, UpdatedAt: now}
	upserted := make(chan error, 1)
	switch {
	case ev.Actor.IsSelf:
		upserted <- nil
	case p.marks.fresh(key, now):
		upserted <- nil
		resumeOpts = append(resumeOpts, withUnrecordedSession(info))
	default:
		// Not tied to the turn: a stop must not leave the session unrecorded.
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
		go func() {
			defer ucancel()
			err := p.d.Store.UpsertSession(uctx, info)
			if err == nil {
				p.marks.mark(key, now)
			}
			upserted <- err
		}()
	}
	waitSession := sync.OnceFunc(func() {
		if err := <-upserted; err != nil {
			log.Error("pipeline: upsert session", "err", err)
		}
	})
	defer waitSession()
	ctx = context.WithValue(ctx, sessionWriteKey{}, waitSession)
	pend, err := p.getPending(ctx, key)
	switch {
	case err == nil:
		if it.replay && p.pausedBy(ctx, pend, ev) {
			// A crash came after this event's turn paused but before the event was completed:
			// the pause is its own outcome, not a new message that supersedes it. When the
			// prompt's reference was not saved (the crash came while it was posted), a
			// decision on any message of the session counts, and replying works too.
			log.Info("replayed event had already paused its turn; waiting for the decision", "turn", pend.Turn, "tool", pend.Tool,
				"prompt_saved", !pend.Prompt.IsZero())
			return
		}
		p.handlePaused(ctx, ctl, log, ev, pend)
		return
	case !errors.Is(err, echogate.ErrNotFound):
		log.Error("pipeline: load pending turn", "err", err)
		p.fail(ctx, log, ev, "", err)
		return
	}

	switch {
	case ev.Actor.IsSelf:
		return // an internal event for a pause that no longer exists
	case ev.Kind == echogate.KindReaction:
		return // reactions only matter on approval prompts (stop is handled by Submit)
	case p.command(ctx, log, ev):
		return
	case isStop(ev):
		return // nothing is running
	case strings.TrimSpace(ev.Text) == "" && len(ev.Attachments) == 0:
		return
	}
	user := userMessage(ev)
	p.runTurn(ctx, ctl, log, ev, nil, nil, []echogate.Message{user}, resumeOpts...)
}

// handlePaused decides what an event means for a paused turn.
func (p *Pipeline) handlePaused(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn) {
	var st agent.State
	if err := json.Unmarshal(pend.State, &st); err != nil || len(st.Pending) == 0 {
		log.Error("pipeline: paused state unreadable, dropping it", "turn", pend.Turn, "err", err)
		_ = p.deletePending(ctx, ev.SessionKey())
		p.d.Metrics.ApprovalPending(-1)
		if ev.Kind != echogate.KindReaction && !ev.Actor.IsSelf {
			p.runTurn(ctx, ctl, log, ev, nil, nil, []echogate.Message{userMessage(ev)})
		}
		return
	}
	platform := ev.Conversation.Platform
	actor := ev.Actor.QualifiedID(platform)
	switch pausedAuthority(ev, pend.RequestedBy, p.approvers) {
	case rightIgnore:
		what := "approval message ignored"
		if ev.Kind == echogate.KindReaction {
			what = "approval reaction ignored"
		}
		log.Warn(what+": not the requester or an approver", "actor", actor, "turn", pend.Turn, "tool", pend.Tool)
		return
	case rightOwnTurn:
		p.ownTurn(ctx, ctl, log, ev)
		return
	}
	if ev.Kind != echogate.KindReaction && !ev.Actor.IsSelf && !isStop(ev) && p.command(ctx, log, ev) {
		return // a command leaves the pause as it is
	}

	var (
		rs       agent.Resume
		grant    bool
		extra    []echogate.Message
		decision string
		notice   string
	)
	rs.CallID = pend.CallID

	switch {
	case ev.Actor.IsSelf && strings.HasPrefix(ev.ID, timeoutPrefix):
		if ev.ID != timeoutPrefix+pend.Turn {
			return // a timeout for an earlier pause
		}
		rs.Reason = fmt.Sprintf("not approved: nobody approved within %s", p.cfg.ApprovalTimeout)
		decision = "timeout"
		notice = fmt.Sprintf("⏱ Nobody approved `%s` within %s, so it was not run.", pend.Tool, p.cfg.ApprovalTimeout)
	case pend.Kind == echogate.PauseAsk:
		if ev.Kind == echogate.KindReaction {
			return
		}
		if isStop(ev) {
			p.cancelPaused(ctx, log, ev, pend, "Stopped. I won't wait for an answer.")
			return
		}
		rs.Answer = ev.Text
		decision = "answered"
	case ev.Kind == echogate.KindReaction:
		if pend.Prompt.ID != "" && ev.Target.ID != pend.Prompt.ID {
			return // a reaction on some other message
		}
		switch ev.Reaction {
		case echogate.ReactionApprove:
			rs.Approved, decision = true, "approved"
		case echogate.ReactionApproveSession:
			rs.Approved, grant, decision = true, true, "approved_session"
		case echogate.ReactionDeny:
			rs.Reason, decision = "not approved: "+actor+" denied it", "denied"
		case echogate.ReactionStop:
			p.cancelPaused(ctx, log, ev, pend, "Stopped. The pending tool call was not run.")
			return
		default:
			return
		}
	default:
		word := strings.ToLower(strings.TrimSpace(ev.Text))
		if isStopCommand(word) {
			word = "stop"
		}
		switch word {
		case "approve", "approved", "approve session", "deny", "denied", "reject":
			switch word {
			case "approve", "approved":
				rs.Approved, decision = true, "approved"
			case "approve session":
				rs.Approved, grant, decision = true, true, "approved_session"
			default:
				rs.Reason, decision = "not approved: "+actor+" denied it", "denied"
			}
		case "stop":
			p.cancelPaused(ctx, log, ev, pend, "Stopped. The pending tool call was not run.")
			return
		default:
			// A new message while paused: deny the pending call and handle the message.
			rs.Reason = "not approved: user sent a new message"
			decision = "superseded"
			extra = []echogate.Message{userMessage(ev)}
		}
	}

	// Delete first: with several replicas, only the one that removes the pause resumes it.
	if err := p.deletePending(ctx, ev.SessionKey()); err != nil {
		log.Error("pipeline: clear pending turn", "turn", pend.Turn, "err", err)
		return
	}
	p.d.Metrics.ApprovalPending(-1)
	p.d.Metrics.ApprovalDecided(decision, p.cfg.Now().Sub(pend.CreatedAt))
	log.Info("pause resolved", "turn", pend.Turn, "tool", pend.Tool, "decision", decision, "by", actor)
	p.showDecision(ctx, log, ev, pend, &st, decision)
	if grant {
		if err := p.d.Store.GrantTool(ctx, ev.SessionKey(), pend.Tool, actor, p.cfg.Now()); err != nil {
			log.Error("pipeline: record session grant", "tool", pend.Tool, "err", err)
		}
	}
	if notice != "" {
		p.notify(ctx, log, ev, notice)
	}
	// The resumed turn belongs to the user who started it, whoever decided.
	p.runTurn(ctx, ctl, log, ev, &st, &rs, extra, withRequester(pend.RequestedBy))
}

// pausedBy reports whether the paused turn was started by ev itself.
func (p *Pipeline) pausedBy(ctx context.Context, pend echogate.PendingTurn, ev echogate.InboundEvent) bool {
	t, err := p.d.Store.GetTurn(ctx, pend.Turn)
	return err == nil && t.EventKey == ev.DedupeKey()
}

func (p *Pipeline) cancelPaused(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn, text string) {
	if err := p.deletePending(ctx, ev.SessionKey()); err != nil {
		log.Error("pipeline: clear pending turn", "err", err)
		return
	}
	p.showDecision(ctx, log, ev, pend, nil, outcomeStopped)
	p.d.Metrics.ApprovalPending(-1)
	if t, err := p.d.Store.GetTurn(ctx, pend.Turn); err == nil {
		t.Status, t.EndedAt = echogate.TurnAborted, p.cfg.Now()
		_ = p.d.Store.UpdateTurn(ctx, t)
	}
	p.answerCommand(ctx, log, ev, text) // ends the exchange of the stop
}

type turnOption func(*turn)

func withRequester(id string) turnOption { return func(t *turn) { t.userID = id } }

// withPauseHeld marks a turn that runs while another user's turn of the session is paused: a
// tool that would ask for approval is refused instead, since the session's pause is taken.
func withPauseHeld() turnOption { return func(t *turn) { t.pauseHeld = true } }

// withInputSaved marks a turn whose input messages are already in the transcript (a replay).
func withInputSaved() turnOption { return func(t *turn) { t.inputSaved = true } }

// withUnrecordedSession marks a turn whose session record was not written because it was
// written recently (sessionMarks); buildContext writes it when the transcript shows it may be
// gone.
func withUnrecordedSession(info echogate.SessionInfo) turnOption {
	return func(t *turn) { t.unrecorded = &info }
}

// turn is the state of one running turn.
type turn struct {
	p       *Pipeline
	id      string
	ev      echogate.InboundEvent
	log     *slog.Logger
	userID  string
	channel string
	start   time.Time
	rep     Replier
	out     *responder
	act     *activity // nil unless the channel shows activity
	// pauseHeld: another user's paused turn holds the session's pause (withPauseHeld).
	pauseHeld bool

	mu       sync.Mutex
	usageIn  int64
	usageOut int64
	cost     float64
	grants   map[string]bool
	loaded   bool
	ledger   sync.WaitGroup         // in-flight usage writes
	usageBuf []echogate.UsageRecord // ledger entries not written yet (see reportUsage)
	// inputSaved: the input messages are in the transcript already (replay of a dead turn).
	inputSaved bool
	// unrecorded: the session record this turn did not write (see withUnrecordedSession).
	unrecorded *echogate.SessionInfo
	// The turn's start writes (see startTurn): the record (startDone, startErr) and the
	// input messages (issued at most once by inputOnce, or folded into the ResponseStage's
	// append; inputDone, inputErr).
	startDone  chan struct{}
	startErr   error
	inputOnce  sync.Once
	inputDone  chan struct{}
	inputErr   error
	startTimer *time.Timer
	startInput []echogate.Message
	startStop  context.CancelCauseFunc
	startCtx   context.Context
}

// startWriteDelay is how long a turn runs before the user's message is written if nothing
// needed it earlier: the question of a long turn is in the transcript within this time.
const startWriteDelay = 2 * time.Second

// startTurn writes the turn's record (status running) in the background, and arranges the
// write of its input messages. Neither is read by the ContextStage or the model call, so
// neither holds them up. The input messages are written behind:
//   - when a tool is about to run (the model asked for one; a file tool reads the transcript),
//   - when the turn has run for startWriteDelay,
//   - or, in most turns, by the ResponseStage: the question is appended together with the
//     answer, in the round trip that records the turn's end anyway.
//
// That takes the turn's first write round trip off its path and halves the transcript pages
// a turn writes (bench/turns, 1000 sessions). With a store shared by replicas (a
// SessionLocker) both are written at once and the model is called only once they landed:
// another replica that takes the event over after this process died finds the running turn,
// closes it as failed and knows whether the question was saved. A failed write stops the turn
// with the error as its cause, and the ResponseStage fails it.
func (t *turn) startTurn(ctx context.Context, stop context.CancelCauseFunc, rec echogate.TurnRecord, input []echogate.Message) {
	t.startDone, t.inputDone = make(chan struct{}), make(chan struct{})
	t.startInput, t.startStop = input, stop
	t.startCtx = context.WithoutCancel(ctx)
	wctx, cancel := context.WithTimeout(t.startCtx, stageTimeout)
	go func() {
		defer cancel()
		err := t.p.d.Store.CreateTurn(wctx, rec)
		if err != nil {
			err = fmt.Errorf("pipeline: create turn: %w", err)
		}
		t.startErr = err
		close(t.startDone)
		if err != nil {
			stop(err)
		}
	}()
	if len(input) == 0 {
		t.inputOnce.Do(func() { close(t.inputDone) })
		return
	}
	t.startTimer = time.AfterFunc(startWriteDelay, t.writeInput)
	if t.p.replicas {
		t.writeInput()
	}
}

// writeInput issues the write of the input messages unless it was issued or folded already.
// It does not wait for it: see started.
func (t *turn) writeInput() {
	if t.inputDone == nil {
		return
	}
	t.inputOnce.Do(func() {
		t.startTimer.Stop()
		wctx, cancel := context.WithTimeout(t.startCtx, stageTimeout)
		go func() {
			defer cancel()
			err := t.p.d.Store.AppendMessages(wctx, t.ev.SessionKey(), t.id, t.startInput, t.p.cfg.Now())
			if err != nil {
				err = fmt.Errorf("pipeline: save user message: %w", err)
			}
			t.inputErr = err
			close(t.inputDone)
			if err != nil {
				t.startStop(err)
			}
		}()
	})
}

// foldInput takes the write of the input messages over for the ResponseStage when it was not
// issued yet: it returns them, to be appended before the answer. It returns nil when they
// were written (or are being written) already.
func (t *turn) foldInput() []echogate.Message {
	if t.inputDone == nil {
		return nil
	}
	folded := false
	t.inputOnce.Do(func() {
		t.startTimer.Stop()
		folded = true
		close(t.inputDone)
	})
	if !folded {
		return nil
	}
	return t.startInput
}

// started issues the input write if needed, waits for the start writes and returns their
// error, or ctx's.
func (t *turn) started(ctx context.Context) error {
	if t.startDone == nil {
		return nil
	}
	t.writeInput()
	for _, done := range []chan struct{}{t.startDone, t.inputDone} {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(t.startErr, t.inputErr)
}

// runTurn runs the three stages for one event. st and rs are set when resuming a paused turn;
// msgs are the messages the event adds (the user's message).
func (p *Pipeline) runTurn(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, st *agent.State, rs *agent.Resume, msgs []echogate.Message, opts ...turnOption) {
	t := &turn{p: p, id: ids.New("t_"), ev: ev, start: p.cfg.Now(),
		userID: ev.Actor.QualifiedID(ev.Conversation.Platform), channel: ev.Conversation.Platform + ":" + ev.Conversation.Channel}
	for _, o := range opts {
		o(t)
	}
	ctl.setOwner(t.userID)
	t.log = log.With("turn", t.id)
	t.rep = p.d.Repliers[ev.Conversation.Platform]
	if t.rep == nil {
		t.log.Error("pipeline: no replier for platform; dropping event", "platform", ev.Conversation.Platform)
		return
	}
	ctx, endTurn := p.span(ctx, "echogate.turn", map[string]string{
		"echogate.session": string(ev.SessionKey()), "echogate.turn": t.id, "echogate.channel": ev.Conversation.Platform,
		"echogate.event_id": ev.ID, "echogate.resumed": fmt.Sprint(st != nil)})
	var turnErr error
	turnAttrs := map[string]string{}
	defer func() { endTurn(turnErr, turnAttrs) }()
	t.out = newResponder(p, t)
	t.out.restorePlan(st)
	key := ev.SessionKey()
	rec := echogate.TurnRecord{ID: t.id, Session: key, EventKey: ev.DedupeKey(), UserID: t.userID, Status: echogate.TurnRunning, Model: p.cfg.Model, StartedAt: t.start}
	t.out.event(echogate.TurnEvent{Type: echogate.TurnStarted})
	defer t.startActivity(ctx)() // cleared when the turn ends, however it ends

	// The turn record and the user's message are written while the context is built and the
	// model runs (see startTurn).
	ctx, stopTurn := context.WithCancelCause(ctx)
	defer stopTurn(nil)
	var input []echogate.Message
	if st == nil && !t.inputSaved {
		input = msgs
	}
	t.startTurn(ctx, stopTurn, rec, input)

	// ContextStage.
	cctx, endContext := p.span(ctx, "echogate.context", nil)
	in, err := p.buildContext(cctx, t, st, rs, msgs)
	if p.replicas && err == nil {
		err = t.started(ctx) // see startTurn
	}
	endContext(err, map[string]string{"echogate.history_messages": fmt.Sprint(len(in.Messages))})
	if err != nil {
		turnErr = err
		p.finishFailed(t, rec, err)
		return
	}

	// InferenceStage. A routing model reports the usage of failed attempts through the context,
	// attributed to this turn.
	res := agent.Run(router.WithUsageReporter(ctx, t.reportUsage), in, p.runtime(ctx, ctl, t))

	// ResponseStage runs on its own bounded context: a stopped or timed-out turn is still
	// answered and recorded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	rctx, endResponse := p.span(rctx, "echogate.response", nil)
	p.respond(rctx, t, rec, res, st != nil)
	endResponse(nil, nil)
	turnErr = res.Err
	turnAttrs["echogate.status"] = string(res.Status)
	turnAttrs["gen_ai.response.model"] = res.Model
	turnAttrs["echogate.route_reason"] = res.RouteReason
}

// userMessage is the transcript message of an inbound event.
func userMessage(ev echogate.InboundEvent) echogate.Message {
	text := withThreadContext(ev, ev.Text)
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

// runtime builds the agent.Runtime of a turn.
func (p *Pipeline) runtime(ctx context.Context, ctl *turnCtl, t *turn) agent.Runtime {
	rt := agent.Runtime{
		Model: p.d.Model,
		Params: agent.Params{
			Model:           p.cfg.Model,
			MaxIterations:   p.cfg.MaxIterations,
			MaxTokens:       p.cfg.MaxTokens,
			ToolConcurrency: p.cfg.ToolConcurrency,
			Plan:            !p.cfg.NoPlan,
			Hints: agent.Hints{Session: t.ev.SessionKey(), UserID: t.userID, Channel: t.channel,
				Attachments: len(t.ev.Attachments), Override: p.modelOverride(t.ev.SessionKey())},
		},
		Tools:       t.toolSpecs(),
		Authorize:   t.authorize,
		ExecuteTool: t.executeTool,
		IsStopping:  ctl.stopping.Load,
		Emit:        t.out.emit,
		ReportUsage: t.reportUsage,
	}
	if p.d.Budget != nil {
		rt.BeforeModelCall = func(ctx context.Context, req agent.Request) error {
			// The check must see this turn's spend so far.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
			t.flushUsage(fctx)
			cancel()
			t.ledger.Wait()
			return p.d.Budget.Check(ctx, cost.Scope{Turn: t.id, UserID: t.userID, Channel: t.channel,
				Session: t.ev.SessionKey(), Trigger: echogate.TriggerMessage}, req)
		}
	}
	if p.d.Compactor != nil {
		rt.Compact = func(ctx context.Context, msgs []echogate.Message) ([]echogate.Message, bool, error) {
			return p.d.Compactor.Compact(ctx, t.ev.SessionKey(), msgs, t.reportUsage)
		}
	}
	return rt
}

// toolSpecs is the catalogue this conversation may use.
func (t *turn) toolSpecs() []tools.Spec {
	all := t.p.d.Tools.Specs()
	if t.p.d.ToolFilter == nil {
		return all
	}
	out := all[:0]
	for _, s := range all {
		if t.allowed(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

func (t *turn) allowed(tool string) bool {
	return t.p.d.ToolFilter == nil || t.p.d.ToolFilter(tool, t.channel, t.userID)
}

// authorize is the ApprovalGate: policy override, then safety class; an ask is satisfied by a
// session grant or by an auto-approving event.
func (t *turn) authorize(ctx context.Context, call echogate.ToolCall, spec tools.Spec) agent.Decision {
	v, ok := t.p.policy[call.Name]
	if !ok {
		if spec.Safety == tools.Safe {
			v = agent.Allow
		} else {
			v = agent.Ask
		}
	}
	switch v {
	case agent.Allow:
		return agent.Decision{Verdict: agent.Allow}
	case agent.Deny:
		t.p.d.Metrics.ToolCall(call.Name, "denied", 0)
		return agent.Decision{Verdict: agent.Deny, Reason: fmt.Sprintf("not allowed: the gateway's policy denies tool %s (tools.%s.approval: deny)", call.Name, call.Name)}
	}
	if t.ev.AutoApprove {
		return agent.Decision{Verdict: agent.Allow}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded {
		t.loaded = true
		t.grants = map[string]bool{}
		gs, err := t.p.d.Store.Grants(ctx, t.ev.SessionKey())
		if err != nil {
			t.log.Warn("pipeline: load session grants", "err", err)
		}
		for _, g := range gs {
			t.grants[g] = true
		}
	}
	if t.grants[call.Name] {
		return agent.Decision{Verdict: agent.Allow}
	}
	if t.pauseHeld {
		return agent.Decision{Verdict: agent.Deny, Reason: "not run: another user's tool call waits for approval in this conversation; ask again once it is decided"}
	}
	return agent.Decision{Verdict: agent.Ask}
}

// executeTool runs one call with the per-tool timeout; panics become tool errors.
func (t *turn) executeTool(ctx context.Context, call echogate.ToolCall) (res tools.Result, err error) {
	if err := t.started(ctx); err != nil {
		return tools.Result{}, err // the turn fails with it (see startTurn)
	}
	tool, ok := t.p.d.Tools.Get(call.Name)
	if !ok || !t.allowed(call.Name) {
		return tools.Errorf("tool %s is not available in this conversation", call.Name), nil
	}
	start := time.Now()
	ctx, endSpan := t.p.span(ctx, "execute_tool "+call.Name, map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.Name, "gen_ai.tool.call.id": call.ID})
	cctx, cancel := context.WithTimeout(ctx, t.p.cfg.ToolTimeout)
	defer cancel()
	defer func() {
		var spanErr error
		if err != nil {
			spanErr = err
		} else if res.IsError {
			spanErr = errors.New(capText(res.Content, 200))
		}
		endSpan(spanErr, nil)
	}()
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("tool panicked", "tool", call.Name, "panic", r)
			res, err = tools.Errorf("tool %s failed: internal error (panic)", call.Name), nil
		}
		result := "ok"
		switch {
		case err != nil:
			result = "failed"
		case res.IsError:
			result = "error"
		}
		t.p.d.Metrics.ToolCall(call.Name, result, time.Since(start))
	}()
	args := json.RawMessage(call.Arguments)
	if len(strings.TrimSpace(call.Arguments)) == 0 {
		args = json.RawMessage("{}")
	}
	cctx = tools.WithCaller(cctx, tools.Caller{UserID: t.userID, Session: t.ev.SessionKey(), Channel: t.channel, Turn: t.id})
	res, err = tool.Call(cctx, args)
	if err != nil {
		var ask *tools.AskUserError
		switch {
		case errors.As(err, &ask):
			return res, err
		case ctx.Err() != nil:
			return res, err // the turn itself ended
		case cctx.Err() != nil:
			return tools.Errorf("tool %s timed out after %s", call.Name, t.p.cfg.ToolTimeout), nil
		}
		// A tool's own failure is something the model can work around; log it for operators.
		t.log.Warn("tool failed", "tool", call.Name, "err", err)
		return tools.Errorf("tool %s failed: %v", call.Name, err), nil
	}
	return res, nil
}

// reportUsage is the single entry point of usage into the ledger.
func (t *turn) reportUsage(u echogate.Usage) {
	if t.p.d.Pricer != nil && u.CostUSD == 0 {
		u.CostUSD = t.p.d.Pricer.Price(u)
	}
	t.mu.Lock()
	t.usageIn += u.InputTokens
	t.usageOut += u.OutputTokens
	t.cost += u.CostUSD
	t.mu.Unlock()
	t.p.d.Metrics.ModelCall(u.Model, u.Failed, u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CostUSD, string(u.Kind))
	rec := echogate.UsageRecord{Turn: t.id, Session: t.ev.SessionKey(), UserID: t.userID,
		Channel: t.channel, Trigger: echogate.TriggerMessage, Usage: u, At: t.p.cfg.Now()}
	if t.p.finisher != nil {
		// Kept until the model asks for a tool (the turn goes on: written then, see
		// flushUsageAsync), the next model call's budget check (flushUsage) or the
		// ResponseStage's FinishTurn, which records it in the turn's last round trip.
		t.mu.Lock()
		t.usageBuf = append(t.usageBuf, rec)
		t.mu.Unlock()
		return
	}
	t.recordAsync(rec)
}

// recordAsync writes one ledger entry in the background. It does not hold up the agent loop;
// the ResponseStage waits for it before it announces the turn done, so a finished turn's usage
// is always in the ledger.
func (t *turn) recordAsync(rec echogate.UsageRecord) {
	t.ledger.Add(1)
	go func() {
		defer t.ledger.Done()
		ctx, cancel := context.WithTimeout(context.Background(), stageTimeout)
		defer cancel()
		t.record(ctx, rec)
	}()
}

// record writes one ledger entry and tells the usage observers.
func (t *turn) record(ctx context.Context, rec echogate.UsageRecord) {
	id, err := t.p.d.Store.RecordUsage(ctx, rec)
	if err != nil {
		t.log.Error("pipeline: record usage in ledger", "model", rec.Usage.Model, "err", err)
		return
	}
	rec.ID = id
	t.observeUsage(rec)
}

// takeUsage returns the buffered ledger entries (see reportUsage) and empties the buffer.
func (t *turn) takeUsage() []echogate.UsageRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := t.usageBuf
	t.usageBuf = nil
	return buf
}

// flushUsage records the buffered ledger entries now: before a budget check, which must see
// this turn's spend so far, and when a turn ends without the ResponseStage's FinishTurn.
func (t *turn) flushUsage(ctx context.Context) {
	for _, rec := range t.takeUsage() {
		t.record(ctx, rec)
	}
}

// flushUsageAsync writes the buffered ledger entries in the background: the model asked for a
// tool, so the turn goes on and its spend so far must reach the ledger (and the budgets of the
// user's other conversations) now, not when the turn ends.
func (t *turn) flushUsageAsync() {
	for _, rec := range t.takeUsage() {
		t.recordAsync(rec)
	}
}

// observeUsage tells the usage observers about a stored ledger entry.
func (t *turn) observeUsage(rec echogate.UsageRecord) {
	for _, o := range t.p.d.UsageObservers {
		o(rec)
	}
}

// notify posts a short notice into the event's conversation.
func (p *Pipeline) notify(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, text string) {
	rep := p.d.Repliers[ev.Conversation.Platform]
	if rep == nil {
		return
	}
	if _, err := rep.Send(ctx, echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: text, Session: ev.SessionKey(),
		Interaction: ev.Interaction}); err != nil {
		log.Error("pipeline: post notice", "err", err)
	}
}

// fail answers with the fallback text after an unrecoverable error before the turn ran.
func (p *Pipeline) fail(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, turnID string, err error) {
	p.d.Metrics.DegradedAnswer()
	log.Error("turn failed", "turn", turnID, "err", err)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	text := p.cfg.FallbackText
	if turnID != "" {
		text += " (ref " + turnID + ")"
	}
	p.notify(cctx, log, ev, text)
}

func (p *Pipeline) finishFailed(t *turn, rec echogate.TurnRecord, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), stageTimeout)
	defer cancel()
	t.flushUsage(ctx)
	if serr := t.started(ctx); serr != nil {
		err = errors.Join(err, serr)
	}
	rec.Status, rec.Error, rec.EndedAt = echogate.TurnFailed, err.Error(), p.cfg.Now()
	if uerr := p.d.Store.UpdateTurn(ctx, rec); uerr != nil && !errors.Is(uerr, echogate.ErrNotFound) {
		t.log.Error("pipeline: record failed turn", "err", uerr)
	}
	p.fail(ctx, t.log, t.ev, t.id, err)
	t.out.event(echogate.TurnEvent{Type: echogate.TurnError, Text: p.cfg.FallbackText})
	t.out.event(echogate.TurnEvent{Type: echogate.TurnDone, Status: string(echogate.TurnFailed), Text: p.cfg.FallbackText})
	p.d.Metrics.Turn(t.ev.Conversation.Platform, string(echogate.TurnFailed), p.cfg.Now().Sub(t.start))
}

// parallel runs fns concurrently and returns the first error. The stores batch concurrent writes
// into one transaction (group commit), so independent writes cost one round trip together.
func parallel(fns ...func() error) error {
	if len(fns) == 1 {
		return fns[0]()
	}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = fn()
		}()
	}
	errs[0] = fns[0]()
	wg.Wait()
	return errors.Join(errs...)
}

// completion marks an event handled exactly once: in the ResponseStage's final round trip when a
// turn ran, else when handling ends.
type completion struct {
	p    *Pipeline
	key  string
	log  *slog.Logger
	once sync.Once
}

// take marks the event as completed by the caller, which writes the completion itself (in a
// TurnFinisher call). It returns false when the completion was written or taken already.
func (c *completion) take() bool {
	taken := false
	c.once.Do(func() { taken = true })
	return taken
}

func (c *completion) complete(ctx context.Context) {
	c.once.Do(func() {
		if err := c.p.d.Store.CompleteEvent(ctx, c.key, c.p.cfg.Now()); err != nil {
			c.log.Error("pipeline: complete event", "err", err)
		}
	})
}

type completionKey struct{}

func withCompletion(ctx context.Context, c *completion) context.Context {
	return context.WithValue(ctx, completionKey{}, c)
}

func completionFrom(ctx context.Context) *completion {
	c, _ := ctx.Value(completionKey{}).(*completion)
	return c
}

// closeInterruptedTurns marks turns of a replayed event that were left running (their process
// died or stopped mid-turn) as failed, so the records show what happened; the replay then answers
// the event in a new turn.
func (p *Pipeline) closeInterruptedTurns(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent) (inputSaved bool) {
	turns, err := p.d.Store.ListTurns(ctx, ev.SessionKey(), 50)
	if err != nil {
		log.Warn("pipeline: list turns of a replayed event", "err", err)
		return false
	}
	dead := map[string]bool{}
	for _, tr := range turns {
		if tr.EventKey != ev.DedupeKey() || tr.Status != echogate.TurnRunning {
			continue
		}
		dead[tr.ID] = true
		tr.Status, tr.Error, tr.EndedAt = echogate.TurnFailed, "interrupted: the gateway stopped during the turn; the event was replayed", p.cfg.Now()
		if err := p.d.Store.UpdateTurn(ctx, tr); err != nil {
			log.Warn("pipeline: close interrupted turn", "turn", tr.ID, "err", err)
			continue
		}
		log.Warn("turn interrupted by a stop or crash; answering the event again", "turn", tr.ID)
	}
	if len(dead) == 0 {
		return false
	}
	// A dead turn may have died before it wrote the user's message (see startTurn).
	hist, err := p.d.Store.History(ctx, ev.SessionKey(), 50)
	if err != nil {
		log.Warn("pipeline: read the transcript of a replayed event", "err", err)
		return false
	}
	for _, m := range hist {
		if dead[m.Turn] && m.Message.Role == echogate.RoleUser {
			return true
		}
	}
	return false
}

type sessionWriteKey struct{}

// waitSessionWrite waits until the session record of the event being handled is written.
func waitSessionWrite(ctx context.Context) {
	if f, ok := ctx.Value(sessionWriteKey{}).(func()); ok {
		f()
	}
}
