package pipeline

import (
	"context"
	"errors"
	"strings"
	"time"

	"log/slog"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/metrics"
)

const (
	// postBudget bounds posting the final message, retries included (adapters retry inside
	// the context they are given): it stays below stageTimeout, so a platform that keeps
	// failing leaves time to tell the user and to record the turn's end.
	postBudget = stageTimeout / 2
	// endTimeout bounds the write of the turn's end, on a context of its own: whatever the
	// posting did, the turn never stays running.
	endTimeout = 10 * time.Second
)

// ResponseStage posts the turn's outcome (the answer, the stopped or failed text, or the
// approval prompt / question of a pause), then writes the turn's end in one TurnLog call:
// the new transcript messages, the final record, the last usage and the event's completion.
// Ephemeral sessions are removed and AfterTurn hooks run afterwards.
type ResponseStage struct {
	store    Store
	metrics  *metrics.Metrics
	now      func() time.Time
	fallback string // Config.FallbackText
	// A pause: how long it waits (Config.ApprovalTimeout, OnTimeout), its write (the store's,
	// with the index of paused sessions, pending.go) and who may approve it (authority.go).
	onTimeout       OnTimeout
	approvalTimeout time.Duration
	savePending     func(context.Context, echogate.PendingTurn) error
	approverNote    func(tool string, approvers map[string]bool) string
	requesterName   func(*Turn) string // names.go
	notify          func(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, text string)
	// The history cache the ending turn writes through (histthrough.go) and the session marks
	// an ephemeral session's removal forgets; soleWriter as in ContextStage.
	hist           *historyCache
	marks          *sessionMarks
	soleWriter     bool
	afterTurn      []func(context.Context, TurnSummary)
	afterScheduled func(context.Context, ScheduledEnd)
}

// responseStage is the pipeline's ResponseStage.
func (p *Pipeline) responseStage() *ResponseStage {
	return &ResponseStage{store: p.d.Store, metrics: p.d.Metrics, now: p.cfg.Now, fallback: p.cfg.FallbackText,
		onTimeout: p.cfg.OnTimeout, approvalTimeout: p.cfg.ApprovalTimeout, savePending: p.savePending, approverNote: p.approverNote,
		requesterName: p.requesterName,
		notify:        p.notify, hist: p.hist, marks: p.marks, soleWriter: !p.shared.replicas(), afterTurn: p.d.AfterTurn, afterScheduled: p.d.AfterScheduled}
}

// Process implements Stage. It runs on a context of its own (the turn's may be cancelled by
// a stop); the post is bounded by postBudget and the end's write by endTimeout.
func (s *ResponseStage) Process(ctx context.Context, t *Turn) error {

	// A turn whose lifecycle refused a move fails: its outcome is not trusted (refuse).
	refused := t.refused()
	if refused != nil {
		t.res = agent.Result{Status: agent.StatusError, Err: refused, Answer: t.res.Answer, Usage: t.res.Usage, Model: t.res.Model, RouteReason: t.res.RouteReason}
	}
	res := t.res
	// Unless a tool or the delay made it written already, the question is appended with the
	// answer (see beginTurn). A pause saves it first: the pause outlives this turn.
	var input []echogate.Message
	if res.Status != agent.StatusPaused {
		input = t.w.Fold()
	}
	// The turn's record is the write-ahead of the post (its id is the reply id): it must be
	// durable before anything is posted. A record or question that could not be written
	// fails the turn rather than keep an answer whose question is not in the transcript.
	if err := t.w.Durable(ctx); err != nil {
		res = agent.Result{Status: agent.StatusError, Err: err, Answer: res.Answer, Usage: res.Usage, Model: res.Model, RouteReason: res.RouteReason}
		t.res = res
	}
	t.out.flushPlan(ctx)
	pctx, cancel := context.WithTimeout(ctx, postBudget)
	final, postErr := s.post(pctx, t, res)
	t.out.retire(pctx) // a dead turn's partial message this turn's outcome did not go into
	cancel()
	if postErr != nil {
		s.undelivered(ctx, t, postErr)
	}
	if err := t.refused(); refused == nil && err != nil {
		s.failRefused(ctx, t, err) // refused while posting
	}
	if t.life.State() == StateResponse {
		t.enter(StateDone)
	}
	s.endTurn(ctx, t, res, input)
	s.afterFinish(ctx, t, final)
	s.endScheduled(ctx, t, t.res, postErr)
	return postErr
}

// post posts the outcome of res and moves the turn to the state it ends in.
func (s *ResponseStage) post(ctx context.Context, t *Turn, res agent.Result) (string, error) {
	var final string
	var err error
	switch res.Status {
	case agent.StatusDone:
		t.enter(StateResponse)
		final = res.Answer
		if t.quietAnswer(final) { // scheduled.go: recorded, not posted
			t.sched.quiet = true
			break
		}
		if strings.TrimSpace(final) == "" {
			final = "_(the model returned an empty answer)_"
		}
		t.sched.posted, err = t.out.finish(ctx, echogate.OutReply, final)
		t.recordRunPost() // scheduled.go
	case agent.StatusAborted:
		t.enter(StateStopped)
		if errors.Is(res.Err, agent.ErrBudget) {
			final = joinText(res.Answer, "⚠️ "+budgetText(res.Err))
			t.log.Info("turn stopped by budget", "err", res.Err)
		} else {
			final = joinText(res.Answer, "_(stopped)_")
		}
		if t.scheduled() == nil { // a scheduled run's failure is recorded; max_failures alerts once
			_, err = t.out.finish(ctx, echogate.OutReply, final)
		}
	case agent.StatusPaused:
		final, err = s.pause(ctx, t, res)
	default:
		s.metrics.DegradedAnswer()
		t.log.Error("turn failed", "err", res.Err)
		final = joinText(res.Answer, s.fallback+" (ref "+t.id+")")
		t.rec.Error = errText(res.Err)
		if t.scheduled() == nil {
			_, err = t.out.finish(ctx, echogate.OutNotice, final)
		}
		// The error event comes right before done, after the fallback text was posted.
		if t.enter(StateFailed) {
			t.out.event(echogate.TurnEvent{Type: echogate.TurnError, Text: final, Detail: errText(res.Err)})
		}
	}
	return final, err
}

// undelivered handles a final message the platform did not take within the post budget: the
// turn fails (its answer is in the transcript all the same), and the user is told, where the
// platform takes any message at all, with one short notice.
func (s *ResponseStage) undelivered(ctx context.Context, t *Turn, err error) {
	t.log.Error("pipeline: post answer", "err", err)
	if t.rec.Error == "" {
		t.rec.Error = "post answer: " + err.Error()
	}
	switch st := t.life.State(); {
	case st.Resting():
		return // the pause is saved; a decision on any message of the session counts
	case st == StateFailed:
		return // the failure's own notice did not go through
	}
	failed := t.life.State() == StateResponse && t.enter(StateFailed)
	nctx, cancel := context.WithTimeout(ctx, stageTimeout-postBudget-endTimeout)
	defer cancel()
	s.notify(nctx, t.log, t.ev, "⚠️ I couldn't deliver my answer to this conversation (ref "+t.id+"). Please try again.")
	if failed { // the error event comes right before done
		t.out.event(echogate.TurnEvent{Type: echogate.TurnError, Text: "the answer could not be delivered"})
	}
}

// failRefused fails a turn whose lifecycle refused a move while its outcome was posted: the
// user is told with the fallback text, and the turn ends failed (finalStatus).
func (s *ResponseStage) failRefused(ctx context.Context, t *Turn, err error) {
	s.metrics.DegradedAnswer()
	if t.rec.Error == "" {
		t.rec.Error = errText(err)
	}
	_, _ = t.life.Enter(StateFailed) // refused again when terminal: finalStatus says failed all the same
	text := s.fallback + " (ref " + t.id + ")"
	nctx, cancel := context.WithTimeout(ctx, stageTimeout-postBudget-endTimeout)
	defer cancel()
	s.notify(nctx, t.log, t.ev, text)
	t.out.event(echogate.TurnEvent{Type: echogate.TurnError, Text: text})
}

// finalStatus is the turn record's status for the state the turn ended in. A turn whose
// lifecycle refused a move failed, whatever state it reached.
func (t *Turn) finalStatus() echogate.TurnStatus {
	if t.refused() != nil {
		return echogate.TurnFailed
	}
	return statusOf(t.life.State())
}

// endTurn writes the turn's end: one TurnLog.FinishTurn on a bounded context of its own, with
// the new transcript messages (input first), the record's final state, the last usage entries
// and the event's completion. It waits for the usage writes issued during the turn.
func (s *ResponseStage) endTurn(ctx context.Context, t *Turn, res agent.Result, input []echogate.Message) {
	rec := t.rec
	rec.InputTokens, rec.OutputTokens, rec.CachedInputTokens, rec.CostUSD = t.usage.totals()
	rec.Status, rec.EndedAt = t.finalStatus(), s.now()
	rec.Skills = t.skills.names() // skills.go
	if res.Model != "" {
		rec.Model, rec.RouteReason = res.Model, res.RouteReason
	}
	t.rec = rec
	msgs := res.Messages
	if len(input) > 0 {
		msgs = append(append(make([]echogate.Message, 0, len(input)+len(msgs)), input...), msgs...)
	}
	end := echogate.TurnEnd{Session: t.rec.Session, Messages: msgs, Turn: rec, At: s.now(), Usage: t.usage.take(), ReleaseSession: t.releaseWithEnd()}
	if key, ok := t.ctl.takeCompletion(); ok {
		end.EventKey = key
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
	defer cancel()
	err := s.store.FinishTurn(ectx, end)
	if err != nil {
		t.log.Error("pipeline: record the end of the turn", "usage_entries", len(end.Usage), "err", err)
	}
	s.writeThrough(t, end, input, err == nil)
	for _, u := range end.Usage {
		if u.ID != 0 {
			t.observeUsage(u)
		}
	}
	t.usage.inFlight.Wait() // usage writes issued during the turn land before "done"
}

// releaseWithEnd reports whether the turn's end is the last write its session's cross-replica
// lock guards, so the store may give the lock back in the end's round trip
// (TurnEnd.ReleaseSession): the lock drain took is this session's, and nothing after the end
// needs it. A pause keeps it until drain's unlock (the pause outlives the turn); an ephemeral
// or resumed session may be deleted after the end, and a scheduled run's outcome is recorded
// after it.
func (t *Turn) releaseWithEnd() bool {
	switch {
	case t.ctl == nil || t.ctl.lockKey == "" || t.ctl.lockKey != t.key:
		return false
	case t.finalStatus() == echogate.TurnPaused, t.ev.Ephemeral, t.resume != nil:
		return false
	case t.scheduled() != nil || strings.HasPrefix(string(t.key), scheduledPrefix):
		return false
	}
	return true
}

// afterFinish removes an ephemeral session and announces the end of the turn.
func (s *ResponseStage) afterFinish(ctx context.Context, t *Turn, final string) {
	key, status, rec, resumed := t.key, t.rec.Status, t.rec, t.resume != nil
	// Ephemeral sessions go before "done" is announced: a one-shot client exits on it.
	if status != echogate.TurnPaused && (t.ev.Ephemeral || resumed) {
		t.ctl.waitSessionWrite() // never delete before the session's own upsert landed
		if info, err := s.store.GetSession(ctx, key); t.ev.Ephemeral || (err == nil && info.Ephemeral) {
			if err := s.store.DeleteSession(ctx, key); err != nil {
				t.log.Warn("pipeline: remove ephemeral session", "err", err)
			}
			s.hist.drop(key)
			s.marks.forget(key)
		}
	}
	t.out.event(echogate.TurnEvent{Type: echogate.TurnDone, Status: string(status), Text: final})
	t.log.Info("turn finished", "status", status, "state", t.life.State(), "model", rec.Model, "input_tokens", rec.InputTokens,
		"output_tokens", rec.OutputTokens, "cached_input_tokens", rec.CachedInputTokens, "cost_usd", rec.CostUSD, "ms", s.now().Sub(t.start).Milliseconds(), "resumed", resumed)

	if status == echogate.TurnDoneSt {
		sum := TurnSummary{Turn: t.id, Session: key, UserID: t.userID, Channel: t.channel, Status: status}
		for _, h := range s.afterTurn {
			h(ctx, sum)
		}
	}
}

// finishFailed ends a turn whose ContextStage failed: it is answered and recorded as failed by
// the ResponseStage's own path, decorators included (so the turn is counted).
func (p *Pipeline) finishFailed(ctx context.Context, t *Turn, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	t.res = agent.Result{Status: agent.StatusError, Err: err}
	_ = p.stages.Response.Process(ctx, t)
}
