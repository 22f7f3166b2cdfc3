package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

const (
	maxPromptArgs   = 1500 // characters of tool arguments shown in an approval prompt
	maxEventPayload = 4000 // characters of tool results carried in turn events
)

// responder carries a turn's output to its channel: streamed deltas, turn events for observing
// channels, and the final message, posted exactly once.
type responder struct {
	p   *Pipeline
	t   *turn
	str streamer
	obs turnObserver

	mu           sync.Mutex
	stream       echogate.Stream
	streamFailed bool
	text         strings.Builder // what was streamed so far
	needSep      bool
	firstToken   bool
	streamCtx    context.Context

	// The plan message, edited in place (rate-limited); planMu is separate from mu so a plan
	// edit never waits on a stream update.
	planMu    sync.Mutex
	planRef   echogate.MessageRef
	planText  string // latest render
	planShown string // what the channel shows
	planAt    time.Time
}

func newResponder(p *Pipeline, t *turn) *responder {
	r := &responder{p: p, t: t, streamCtx: context.Background()}
	r.str, _ = t.rep.(streamer)
	r.obs, _ = t.rep.(turnObserver)
	return r
}

func (r *responder) outbound(kind echogate.OutboundKind, text string) echogate.Outbound {
	ev := r.t.ev
	return echogate.Outbound{Kind: kind, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: text,
		Session: ev.SessionKey(), Turn: r.t.id}
}

// event delivers a turn event to an observing channel. Safe for concurrent use.
func (r *responder) event(e echogate.TurnEvent) {
	if r.obs == nil {
		return
	}
	e.Session, e.Turn, e.EventID = r.t.ev.SessionKey(), r.t.id, r.t.ev.ID
	if e.Time.IsZero() {
		e.Time = r.p.cfg.Now()
	}
	r.obs.ObserveTurn(e)
}

// emit receives the agent loop's events. The loop calls it from tool goroutines too.
func (r *responder) emit(e agent.Event) {
	r.t.act.observe(e)
	switch e.Type {
	case agent.EventLLMRequestStart:
		r.mu.Lock()
		if r.text.Len() > 0 {
			r.needSep = true
		}
		r.mu.Unlock()
	case agent.EventAnswerDelta:
		r.delta(e.Text)
	case agent.EventReasoningDelta:
		r.event(echogate.TurnEvent{Type: echogate.TurnReasoning, Text: e.Text})
	case agent.EventToolCall:
		r.t.writeInput()      // the tool may read it (see startTurn); issued now, awaited there
		r.t.flushUsageAsync() // the turn goes on: its spend so far goes to the ledger now
		r.event(echogate.TurnEvent{Type: echogate.TurnToolCall, Tool: e.Call.Name, CallID: e.Call.ID, Args: RedactArgs(e.Call.Arguments, maxPromptArgs)})
	case agent.EventToolRunEnd:
		text, isErr := e.Result.Content, e.Result.IsError
		if e.Err != nil {
			text, isErr = e.Err.Error(), true
		}
		r.event(echogate.TurnEvent{Type: echogate.TurnToolResult, Tool: e.Call.Name, CallID: e.Call.ID, Text: capText(text, maxEventPayload), IsError: isErr})
	case agent.EventPlan:
		r.event(echogate.TurnEvent{Type: echogate.TurnPlan, Text: e.Text})
		r.plan(e.Text)
	case agent.EventCompressed:
		r.t.log.Info("conversation compressed", "iteration", e.Iteration)
	case agent.EventLLMRequestEnd:
		if e.Err != nil {
			r.t.log.Warn("model call failed", "model", e.Model, "err", e.Err)
		}
	}
}

// plan shows the plan: one message, posted at the first plan and edited in place at most once
// per Config.PlanUpdateInterval; flushPlan brings it up to date at the end of the turn.
func (r *responder) plan(text string) {
	r.planMu.Lock()
	defer r.planMu.Unlock()
	r.planText = text
	now := r.p.cfg.Now()
	if r.planRef.IsZero() {
		ref, err := r.t.rep.Send(r.streamCtx, r.outbound(echogate.OutPlan, text))
		if err != nil {
			r.t.log.Warn("pipeline: post plan", "err", err)
			return
		}
		r.planRef, r.planShown, r.planAt = ref, text, now
		return
	}
	ed, ok := r.t.rep.(editor)
	if !ok || now.Sub(r.planAt) < r.p.cfg.PlanUpdateInterval {
		return
	}
	if err := ed.Edit(r.streamCtx, r.planRef, text); err != nil {
		r.t.log.Warn("pipeline: update plan", "err", err)
		return
	}
	r.planShown, r.planAt = text, now
}

func (r *responder) flushPlan(ctx context.Context) {
	r.planMu.Lock()
	defer r.planMu.Unlock()
	if r.planText == "" || r.planText == r.planShown {
		return
	}
	if ed, ok := r.t.rep.(editor); ok && !r.planRef.IsZero() {
		if err := ed.Edit(ctx, r.planRef, r.planText); err != nil {
			r.t.log.Warn("pipeline: update plan", "err", err)
			return
		}
	} else {
		ref, err := r.t.rep.Send(ctx, r.outbound(echogate.OutPlan, r.planText))
		if err != nil {
			r.t.log.Warn("pipeline: post plan", "err", err)
			return
		}
		r.planRef = ref
	}
	r.planShown, r.planAt = r.planText, r.p.cfg.Now()
}

// planNote encodes the plan message's reference for agent.State.Notes.
const planNoteKey = "plan_ref"

func (r *responder) restorePlan(st *agent.State) {
	if st == nil || st.Plan == nil || st.Notes[planNoteKey] == "" {
		return
	}
	parts := strings.SplitN(st.Notes[planNoteKey], "\x1f", 3)
	if len(parts) != 3 {
		return
	}
	r.planRef = echogate.MessageRef{Platform: parts[0], Channel: parts[1], ID: parts[2]}
	r.planText = st.Plan.Render()
	r.planShown = r.planText
}

func (r *responder) savePlan(st *agent.State) {
	r.planMu.Lock()
	defer r.planMu.Unlock()
	if r.planRef.IsZero() {
		return
	}
	if st.Notes == nil {
		st.Notes = map[string]string{}
	}
	st.Notes[planNoteKey] = r.planRef.Platform + "\x1f" + r.planRef.Channel + "\x1f" + r.planRef.ID
}

func (r *responder) delta(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.firstToken {
		r.firstToken = true
		r.p.d.Metrics.TimeToFirstToken(r.t.ev.Conversation.Platform, r.p.cfg.Now().Sub(r.t.start))
	}
	if r.needSep {
		text = "\n\n" + text
		r.needSep = false
	}
	r.text.WriteString(text)
	r.event(echogate.TurnEvent{Type: echogate.TurnDelta, Text: text})
	if r.str == nil || r.streamFailed {
		return
	}
	if r.stream == nil {
		s, err := r.str.StartStream(r.streamCtx, r.outbound(echogate.OutReply, ""))
		if err != nil {
			r.t.log.Warn("pipeline: start streaming; the answer will be posted at the end", "err", err)
			r.streamFailed = true
			return
		}
		r.stream = s
	}
	if err := r.stream.Append(r.streamCtx, text); err != nil {
		r.t.log.Warn("pipeline: stream update failed", "err", err)
	}
}

// finish posts the final text: it completes the open stream, or sends one message. It posts once.
func (r *responder) finish(ctx context.Context, kind echogate.OutboundKind, text string) (echogate.MessageRef, error) {
	r.mu.Lock()
	s := r.stream
	r.stream = nil
	r.mu.Unlock()
	if s != nil {
		refs, err := s.Finish(ctx, text)
		if err == nil || len(refs) > 0 {
			var ref echogate.MessageRef
			if len(refs) > 0 {
				ref = refs[len(refs)-1]
			}
			return ref, err
		}
		r.t.log.Warn("pipeline: finishing the stream failed; posting the answer as a new message", "err", err)
	}
	return r.t.rep.Send(ctx, r.outbound(kind, text))
}

func (r *responder) streamed() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String(), r.stream != nil
}

// respond is the ResponseStage: it persists the new messages, posts the final answer (or the
// approval prompt / question of a pause), records the turn, and cleans up ephemeral sessions.
func (p *Pipeline) respond(ctx context.Context, t *turn, rec echogate.TurnRecord, res agent.Result, resumed bool) {
	key := t.ev.SessionKey()
	// Unless a tool or the delay made it written already, the question is appended with the
	// answer (see startTurn). A pause saves it first: the pause outlives this turn.
	var input []echogate.Message
	if res.Status != agent.StatusPaused {
		input = t.foldInput()
	}
	if err := t.started(ctx); err != nil {
		// The turn record or the user's message could not be written: fail the turn rather
		// than keep an answer whose question is not in the transcript.
		res = agent.Result{Status: agent.StatusError, Err: err, Answer: res.Answer, Usage: res.Usage, Model: res.Model, RouteReason: res.RouteReason}
	}
	status := echogate.TurnStatus(res.Status)
	t.out.flushPlan(ctx)
	var final string
	var postErr error
	switch res.Status {
	case agent.StatusDone:
		final = res.Answer
		if strings.TrimSpace(final) == "" {
			final = "_(the model returned an empty answer)_"
		}
		_, postErr = t.out.finish(ctx, echogate.OutReply, final)
	case agent.StatusAborted:
		if errors.Is(res.Err, agent.ErrBudget) {
			final = joinText(res.Answer, "⚠️ "+budgetText(res.Err))
			t.log.Info("turn stopped by budget", "err", res.Err)
		} else {
			final = joinText(res.Answer, "_(stopped)_")
		}
		_, postErr = t.out.finish(ctx, echogate.OutReply, final)
	case agent.StatusPaused:
		final, postErr = p.pause(ctx, t, res)
	default:
		status = echogate.TurnFailed
		p.d.Metrics.DegradedAnswer()
		t.log.Error("turn failed", "err", res.Err)
		final = joinText(res.Answer, p.cfg.FallbackText+" (ref "+t.id+")")
		_, postErr = t.out.finish(ctx, echogate.OutNotice, final)
		rec.Error = errText(res.Err)
		t.out.event(echogate.TurnEvent{Type: echogate.TurnError, Text: final})
	}
	if postErr != nil {
		t.log.Error("pipeline: post answer", "err", postErr)
		if rec.Error == "" {
			rec.Error = "post answer: " + postErr.Error()
		}
	}

	t.mu.Lock()
	rec.InputTokens, rec.OutputTokens, rec.CostUSD = t.usageIn, t.usageOut, t.cost
	t.mu.Unlock()
	rec.Status, rec.EndedAt = status, p.cfg.Now()
	if res.Model != "" {
		rec.Model, rec.RouteReason = res.Model, res.RouteReason
	}
	// Transcript, turn record and the event's completion: one round trip (group commit).
	msgs := res.Messages
	if len(input) > 0 {
		msgs = append(append(make([]echogate.Message, 0, len(input)+len(msgs)), input...), msgs...)
	}
	if p.finisher != nil {
		// One call: one queue entry and one wake-up instead of three.
		end := echogate.TurnEnd{Session: key, Messages: msgs, Turn: rec, At: p.cfg.Now(), Usage: t.takeUsage()}
		if c := completionFrom(ctx); c != nil && c.take() {
			end.EventKey = c.key
		}
		if err := p.finisher.FinishTurn(ctx, end); err != nil {
			t.log.Error("pipeline: record the end of the turn", "usage_entries", len(end.Usage), "err", err)
		}
		for _, u := range end.Usage {
			if u.ID != 0 {
				t.observeUsage(u)
			}
		}
		t.ledger.Wait() // usage writes issued during the turn land before "done"
	} else {
		p.finishTurn(ctx, t, key, msgs, rec)
	}
	p.afterFinish(ctx, t, key, status, rec, final, resumed)
}

// finishTurn writes the end of a turn with three concurrent calls, which a store's group commit
// joins into one transaction (see TurnFinisher).
func (p *Pipeline) finishTurn(ctx context.Context, t *turn, key echogate.SessionKey, msgs []echogate.Message, rec echogate.TurnRecord) {
	_ = parallel(
		func() error {
			if len(msgs) > 0 {
				if err := p.d.Store.AppendMessages(ctx, key, t.id, msgs, p.cfg.Now()); err != nil {
					t.log.Error("pipeline: save transcript", "err", err)
				}
			}
			return nil
		},
		func() error {
			if err := p.d.Store.UpdateTurn(ctx, rec); err != nil {
				t.log.Error("pipeline: record turn", "err", err)
			}
			return nil
		},
		func() error {
			if c := completionFrom(ctx); c != nil {
				c.complete(ctx)
			}
			return nil
		},
		func() error {
			t.ledger.Wait() // usage writes issued during the turn land before "done"
			return nil
		})
}

// afterFinish removes an ephemeral session and announces the end of the turn.
func (p *Pipeline) afterFinish(ctx context.Context, t *turn, key echogate.SessionKey, status echogate.TurnStatus, rec echogate.TurnRecord, final string, resumed bool) {
	// Ephemeral sessions go before "done" is announced: a one-shot client exits on it.
	if status != echogate.TurnPaused && (t.ev.Ephemeral || resumed) {
		waitSessionWrite(ctx) // never delete before the session's own upsert landed
		if info, err := p.d.Store.GetSession(ctx, key); t.ev.Ephemeral || (err == nil && info.Ephemeral) {
			if err := p.d.Store.DeleteSession(ctx, key); err != nil {
				t.log.Warn("pipeline: remove ephemeral session", "err", err)
			}
			p.hist.drop(key)
			p.marks.forget(key)
		}
	}
	t.out.event(echogate.TurnEvent{Type: echogate.TurnDone, Status: string(status), Text: final})
	p.d.Metrics.Turn(t.ev.Conversation.Platform, string(status), p.cfg.Now().Sub(t.start))
	t.log.Info("turn finished", "status", status, "model", rec.Model, "input_tokens", rec.InputTokens,
		"output_tokens", rec.OutputTokens, "cost_usd", rec.CostUSD, "ms", p.cfg.Now().Sub(t.start).Milliseconds(), "resumed", resumed)

	if status == echogate.TurnDoneSt {
		sum := TurnSummary{Turn: t.id, Session: key, UserID: t.userID, Channel: t.channel, Status: status}
		for _, h := range p.d.AfterTurn {
			h(ctx, sum)
		}
	}
}

// pause persists the paused state and posts the approval prompt or the question.
func (p *Pipeline) pause(ctx context.Context, t *turn, res agent.Result) (string, error) {
	pz := res.Pause
	text, streaming := t.out.streamed()
	var body string
	if pz.Kind == echogate.PauseAsk {
		body = "❓ " + pz.Question
	} else {
		body = approvalPrompt(pz.Call, t.userID)
	}
	// Close the streamed message with what was said so far; the prompt is its own message so
	// that reactions on it are unambiguous.
	if streaming {
		if _, err := t.out.finish(ctx, echogate.OutReply, text); err != nil {
			t.log.Warn("pipeline: finish streamed text before pause", "err", err)
		}
	} else if strings.TrimSpace(res.Answer) != "" {
		body = res.Answer + "\n\n" + body
	}
	out := t.out.outbound(echogate.OutApprovalPrompt, body)
	if pz.Kind == echogate.PauseAsk {
		out.Kind = echogate.OutReply
	} else {
		out.Reactions = []string{echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny}
	}
	t.out.savePlan(&res.State)
	state, err := json.Marshal(res.State)
	if err != nil {
		return body, fmt.Errorf("pipeline: encode paused state: %w", err)
	}
	pend := echogate.PendingTurn{Session: t.ev.SessionKey(), Turn: t.id, Kind: pz.Kind, CallID: pz.Call.ID, Tool: pz.Call.Name,
		State: state, RequestedBy: t.userID, CreatedAt: p.cfg.Now()}
	if pz.Kind == echogate.PauseApproval && p.cfg.OnTimeout == OnTimeoutDeny {
		pend.ExpiresAt = p.cfg.Now().Add(p.cfg.ApprovalTimeout)
	}
	// Save before posting, so a decision can never arrive for a pause that is not stored yet;
	// then save again with the prompt's reference.
	if err := p.savePending(ctx, pend); err != nil {
		return body, fmt.Errorf("pipeline: save paused turn: %w", err)
	}
	p.d.Metrics.ApprovalPending(1)
	ref, err := t.rep.Send(ctx, out)
	if err != nil {
		return body, fmt.Errorf("pipeline: post approval prompt: %w", err)
	}
	pend.Prompt = ref
	if err := p.savePending(ctx, pend); err != nil {
		return body, fmt.Errorf("pipeline: save prompt reference: %w", err)
	}
	if pz.Kind == echogate.PauseAsk {
		t.out.event(echogate.TurnEvent{Type: echogate.TurnAsk, Text: pz.Question, CallID: pz.Call.ID, Tool: pz.Call.Name})
	} else {
		t.out.event(echogate.TurnEvent{Type: echogate.TurnApprovalRequest, Text: body, CallID: pz.Call.ID, Tool: pz.Call.Name,
			Args: RedactArgs(pz.Call.Arguments, maxPromptArgs)})
	}
	t.log.Info("turn paused", "kind", pz.Kind, "tool", pz.Call.Name, "call", pz.Call.ID)
	return body, nil
}

func approvalPrompt(call echogate.ToolCall, requester string) string {
	args := RedactArgs(call.Arguments, maxPromptArgs)
	return fmt.Sprintf("🔐 **Approval needed**: I want to run `%s` with:\n```\n%s\n```\n"+
		"React ✅ to approve once, 🔁 to approve `%s` for this conversation, or ❌ to deny (or reply `approve` / `deny`). "+
		"Only %s or an approver can decide.", call.Name, args, call.Name, requester)
}

var secretKey = regexp.MustCompile(`(?i)(pass(word)?|secret|token|api[_-]?key|authorization|auth|cookie|credential|private[_-]?key)`)

// RedactArgs renders tool arguments for people: JSON indented, values of secret-looking keys
// (password, token, api_key, authorization, …) replaced by "***", length capped at max bytes
// without splitting a UTF-8 sequence. Approval prompts, turn events and the console use it.
func RedactArgs(args string, max int) string {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err == nil {
		v = redactValue(v)
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			args = string(b)
		}
	}
	return capText(args, max)
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKey.MatchString(k) {
				x[k] = "***"
			} else {
				x[k] = redactValue(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = redactValue(x[i])
		}
	}
	return v
}

func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more characters)", len(s)-cut)
}

func joinText(a, b string) string {
	if strings.TrimSpace(a) == "" {
		return b
	}
	return a + "\n\n" + b
}

// budgetText is the user-facing text of a budget error: the limit, and when it resets.
func budgetText(err error) string {
	s := err.Error()
	s = strings.TrimSuffix(s, ": "+agent.ErrBudget.Error())
	return "Stopped: " + s
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
