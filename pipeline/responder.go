package pipeline

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/metrics"
)

const (
	maxPromptArgs   = 1500 // characters of tool arguments shown in an approval prompt
	maxEventPayload = 4000 // characters of tool results carried in turn events
)

// responder carries a turn's output to its channel: streamed deltas, turn events for observing
// channels, and the final message, posted exactly once.
type responder struct {
	t         *Turn
	str       Streamer
	obs       TurnObserver
	now       func() time.Time
	planEvery time.Duration    // Config.PlanUpdateInterval: the plan message's edits at most this often
	metrics   *metrics.Metrics // time to first token

	mu           sync.Mutex
	stream       echogate.Stream
	streamFailed bool
	text         strings.Builder // what was streamed so far
	needSep      bool
	firstToken   bool
	// streamCtx is the turn's detached context (Turn.detached): the stream and the plan
	// message outlive a stop, since the stopped turn's final text goes into them.
	streamCtx context.Context
	contUsed  bool // the turn's answer went into Turn.cont (posting.go)

	// The plan message, edited in place (rate-limited); planMu is separate from mu so a plan
	// edit never waits on a stream update.
	planMu    sync.Mutex
	planRef   echogate.MessageRef
	planText  string // latest render
	planShown string // what the channel shows
	planAt    time.Time
}

func newResponder(t *Turn, now func() time.Time, planEvery time.Duration, m *metrics.Metrics) *responder {
	return &responder{t: t, str: t.caps.Streamer, obs: t.caps.Observer, now: now, planEvery: planEvery, metrics: m}
}

func (r *responder) outbound(kind echogate.OutboundKind, text string) echogate.Outbound {
	ev := &r.t.ev
	return echogate.Outbound{Kind: kind, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: text,
		Session: r.t.key, Turn: r.t.id}
}

// event delivers a turn event to an observing channel. Safe for concurrent use.
func (r *responder) event(e echogate.TurnEvent) {
	if r.obs == nil {
		return
	}
	e.Session, e.Turn, e.EventID = r.t.key, r.t.id, r.t.ev.ID
	if e.Time.IsZero() {
		e.Time = r.now()
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
	now := r.now()
	if r.planRef.IsZero() {
		ref, err := r.t.rep.Send(r.streamCtx, r.outbound(echogate.OutPlan, text))
		if err != nil {
			r.t.log.Warn("pipeline: post plan", "err", err)
			return
		}
		r.planRef, r.planShown, r.planAt = ref, text, now
		return
	}
	ed := r.t.caps.Editor
	if ed == nil || now.Sub(r.planAt) < r.planEvery {
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
	if ed := r.t.caps.Editor; ed != nil && !r.planRef.IsZero() {
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
	r.planShown, r.planAt = r.planText, r.now()
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
		r.metrics.TimeToFirstToken(r.t.ev.Conversation.Platform, r.now().Sub(r.t.start))
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
		s, err := r.openStream(r.streamCtx, echogate.OutReply)
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
	if s == nil && !r.t.cont.IsZero() && !r.contUsed && r.str != nil {
		// The answer goes into the dead turn's partial message, streamed or not.
		var err error
		if s, err = r.openStream(ctx, kind); err != nil {
			r.t.log.Warn("pipeline: continue the interrupted turn's message; posting the answer as a new message", "err", err)
		}
	}
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
