package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/tools"
)

// interruptedPrefix starts the error of a turn closed because its process died; the event's
// replay answers it in a new turn.
const interruptedPrefix = "interrupted:"

// reconcileTurns bounds how many of the newest turns reconcile looks at.
const reconcileTurns = 1000

// reconcile reopens the events of turns left running whose event was completed anyway: the
// store's event log and transcript commit apart (SQLite), and a crash between the two commits
// kept the completion and lost the turn's end. The replay then recovers them like any other
// (the answer looked up, else answered again). Only for a store no other process writes: at
// start, every running turn is dead.
func (p *Pipeline) reconcile(ctx context.Context) {
	turns, err := p.d.Store.ListTurns(ctx, "", reconcileTurns)
	if err != nil {
		p.log.Warn("pipeline: list turns to reconcile", "err", err)
		return
	}
	var running []echogate.TurnRecord
	for _, tr := range turns {
		if tr.Status == echogate.TurnRunning && tr.EventKey != "" {
			running = append(running, tr)
		}
	}
	if len(running) == 0 {
		return
	}
	evs, err := p.d.Store.UnfinishedEvents(ctx, p.runAt, 0)
	if err != nil {
		p.log.Warn("pipeline: list unfinished events to reconcile", "err", err)
		return
	}
	unfinished := make(map[string]bool, len(evs))
	for _, e := range evs {
		unfinished[e.Key] = true
	}
	for _, tr := range running {
		if unfinished[tr.EventKey] {
			continue
		}
		if err := p.d.Store.ReopenEvent(ctx, tr.EventKey); err != nil {
			p.log.Warn("pipeline: reopen the event of a turn whose end was lost", "turn", tr.ID, "event", tr.EventKey, "err", err)
			continue
		}
		unfinished[tr.EventKey] = true
		p.log.Warn("turn's end was lost while its event was completed; recovering it", "turn", tr.ID, "session", tr.Session)
	}
}

// recovery is what a replayed event's recovery found.
type recovery struct {
	handled    bool // the event's outcome is recorded (or was finished now): nothing more to do
	inputSaved bool // a dead turn saved the user's message: answer without saving it again
	// cont is the message a dead turn had started streaming its answer into: the new answer
	// goes into it (withContinued), so the cut answer does not stay above the full one.
	cont echogate.MessageRef
	// deferred: the turn log could not be read, so nobody can tell what the dead turn did.
	// The event is left unfinished, neither answered nor completed: a later replay (the next
	// start, or a replica's takeover) recovers it. Answering blind would answer it twice, or
	// let it supersede its own pause (a second prompt).
	deferred bool
}

// recoverEvent finishes what a crash interrupted for a replayed event, from the turn log's last
// durable state: a resumed turn (its decision is recorded) is run again from its resume
// record; a turn of the event that ended (or paused) means only the event's completion was
// lost; a turn left running is closed as interrupted, and the event answered again. A turn
// log that cannot be read defers the event (see recovery.deferred).
func (p *Pipeline) recoverEvent(ctx context.Context, ctl *turnCtl, log *slog.Logger, evp *echogate.InboundEvent) recovery {
	ev := *evp
	rp, err := p.readReplayed(ctx, log, ev)
	if err != nil {
		log.Error("pipeline: turn log unreadable; the replayed event is left unfinished for a later replay", "err", err)
		return recovery{deferred: true}
	}
	if rp.resume != nil {
		p.recoverResumed(ctx, ctl, log, ev, *rp.resume)
		return recovery{handled: true}
	}
	pend := rp.pend
	dead := map[string]bool{}
	var cont echogate.MessageRef
	for _, tr := range rp.turns {
		if tr.EventKey != ev.DedupeKey() {
			continue
		}
		switch {
		case tr.Status == echogate.TurnRunning && pend.Turn == tr.ID:
			// It died after its pause was saved, before its end was written: the pause is
			// durable, so the turn's outcome is that pause.
			tr.Status, tr.EndedAt = echogate.TurnPaused, p.cfg.Now()
			if err := p.d.Store.UpdateTurn(ctx, tr); err != nil {
				log.Warn("pipeline: record the pause of an interrupted turn", "turn", tr.ID, "err", err)
			}
			log.Info("replayed event had already paused its turn; waiting for the decision", "turn", tr.ID,
				"prompt_saved", !pend.Prompt.IsZero())
			p.repostPrompt(ctx, log, ev, pend)
			return recovery{handled: true}
		case tr.Status == echogate.TurnPaused:
			// The pause is the event's own outcome, not a new message that supersedes it.
			log.Info("replayed event had already paused its turn; waiting for the decision", "turn", tr.ID)
			if pend.Turn == tr.ID {
				p.repostPrompt(ctx, log, ev, pend)
			}
			return recovery{handled: true}
		case tr.Status == echogate.TurnRunning && p.posted(ctx, ctl, log, ev, tr, nil):
			return recovery{handled: true}
		case tr.Status == echogate.TurnRunning:
			dead[tr.ID] = true
			if cont.IsZero() { // the newest dead turn's message: an older one's may be gone
				cont = p.postingOf(ctx, log, tr.ID)
			}
			p.closeInterrupted(ctx, log, tr)
		case !(tr.Status == echogate.TurnFailed && strings.HasPrefix(tr.Error, interruptedPrefix)):
			log.Info("replayed event's turn had ended; completing the event", "turn", tr.ID, "status", tr.Status)
			return recovery{handled: true}
		}
	}
	if len(dead) == 0 {
		return recovery{}
	}
	return recovery{inputSaved: p.savedInput(ctx, log, ev, dead), cont: cont}
}

// postingOf is the message the dead turn had started streaming its answer into; zero when it
// had none (or it cannot be read: the answer is then posted anew).
func (p *Pipeline) postingOf(ctx context.Context, log *slog.Logger, turn string) echogate.MessageRef {
	ref, err := p.d.Store.GetPosting(ctx, turn)
	if err != nil && !errors.Is(err, echogate.ErrNotFound) {
		log.Warn("pipeline: read the streamed message of an interrupted turn", "turn", turn, "err", err)
	}
	if !ref.IsZero() {
		log.Info("interrupted turn had started streaming its answer; the new answer goes into that message", "turn", turn, "message", ref.ID)
	}
	return ref
}

// repostPrompt handles a pause whose prompt reference was never saved (the crash came before
// or while the prompt was posted). With a replier that can look (ReplyFinder), a prompt that
// landed gets its reference saved, and one that did not is posted again, so the user is never
// left with a pause nobody was shown. Without one the prompt is left as it is, and a decision
// on any message of the session (or a reply) counts.
func (p *Pipeline) repostPrompt(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn) {
	finder := p.caps[ev.Conversation.Platform].Finder
	rep := p.d.Repliers[ev.Conversation.Platform]
	if !pend.Prompt.IsZero() || finder == nil || rep == nil {
		return
	}
	kind := echogate.OutApprovalPrompt
	if pend.Kind == echogate.PauseAsk {
		kind = echogate.OutReply
	}
	ref, _, found, err := finder.FindReply(ctx, ev.Conversation, pend.Turn, kind)
	if err != nil {
		log.Warn("pipeline: look up the prompt of an interrupted pause", "turn", pend.Turn, "err", err)
		return
	}
	if !found {
		st, err := decodePaused(pend)
		if err != nil {
			return
		}
		if ref, err = rep.Send(ctx, p.promptOf(ev, pend, st)); err != nil {
			log.Warn("pipeline: post the prompt of an interrupted pause again", "turn", pend.Turn, "err", err)
			return
		}
		log.Info("posted the prompt of an interrupted pause again", "turn", pend.Turn, "tool", pend.Tool)
	}
	pend.Prompt = ref
	if err := p.savePending(ctx, pend); err != nil {
		log.Warn("pipeline: save the prompt reference of an interrupted pause", "turn", pend.Turn, "err", err)
	}
}

// promptOf is the prompt (or question) of a pause, as pause posts it.
func (p *Pipeline) promptOf(ev echogate.InboundEvent, pend echogate.PendingTurn, st *agent.State) echogate.Outbound {
	out := echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: ev.Conversation, ReplyTo: ev.Message,
		Session: ev.SessionKey(), Turn: pend.Turn, Text: approvalPrompt(st.Pending[0], p.nameOf(pend.RequestedBy)),
		Reactions: []string{echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny}}
	if pend.Kind == echogate.PauseAsk {
		var q struct{ Question string }
		_ = json.Unmarshal([]byte(st.Pending[0].Arguments), &q)
		out = echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, ReplyTo: ev.Message,
			Session: ev.SessionKey(), Turn: pend.Turn, Text: "❓ " + q.Question}
	}
	return out
}

// replyLookups bounds the attempts to ask the platform whether a dead turn posted its answer.
const replyLookups = 3

// posted reports whether the dead turn tr posted its answer before the crash (looked up on the
// platform by the turn's id, with retries); then it records the turn's end from what the
// platform shows (the question, when the dead turn had not saved it, and that answer), so the
// event is not answered twice.
func (p *Pipeline) posted(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, tr echogate.TurnRecord, resumed *echogate.TurnResume) bool {
	finder := p.caps[ev.Conversation.Platform].Finder
	if finder == nil {
		return false
	}
	var (
		ref   echogate.MessageRef
		text  string
		found bool
		err   error
	)
	for attempt := 0; attempt < replyLookups; attempt++ {
		if ref, text, found, err = finder.FindReply(ctx, ev.Conversation, tr.ID, echogate.OutReply); err == nil {
			break
		}
		log.Warn("pipeline: look up whether an interrupted turn posted its answer", "turn", tr.ID, "attempt", attempt+1, "err", err)
	}
	if err != nil || !found {
		return false
	}
	var msgs []echogate.Message
	switch {
	case resumed != nil:
		// The approved call's recorded result, then the answer (sanitizeHistory answers a
		// call without one).
		var res tools.Result
		if len(resumed.ToolResult) > 0 && json.Unmarshal(resumed.ToolResult, &res) == nil {
			msgs = append(msgs, echogate.Message{Role: echogate.RoleTool, ToolCallID: resumed.Paused.CallID, Name: resumed.Paused.Tool,
				Content: res.Content, IsError: res.IsError})
		}
	case !p.savedInput(ctx, log, ev, map[string]bool{tr.ID: true}):
		msgs = append(msgs, userMessage(&ev))
	}
	msgs = append(msgs, echogate.Message{Role: echogate.RoleAssistant, Content: text})
	tr.Status, tr.EndedAt = echogate.TurnDoneSt, p.cfg.Now()
	end := echogate.TurnEnd{Session: ev.SessionKey(), Turn: tr, Messages: msgs, At: p.cfg.Now()}
	if key, ok := ctl.takeCompletion(); ok {
		end.EventKey = key
	}
	if !ref.IsZero() {
		// The posting record is what a scheduled run's outcome reads (delivered, not unconfirmed).
		if err := p.d.Store.RecordPosting(ctx, tr.ID, ref); err != nil {
			log.Warn("pipeline: record the answer an interrupted turn had posted", "turn", tr.ID, "err", err)
		}
	}
	if err := p.d.Store.FinishTurn(ctx, end); err != nil {
		log.Warn("pipeline: record the end of a turn that had posted its answer", "turn", tr.ID, "err", err)
	}
	log.Info("interrupted turn had posted its answer; not answering again", "turn", tr.ID)
	if ev.Scheduled != nil && p.d.AfterScheduled != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterScheduledTimeout)
		defer cancel()
		p.d.AfterScheduled(actx, ScheduledEnd{Run: *ev.Scheduled, Session: ev.SessionKey(), EventID: ev.ID,
			Turn: tr.ID, Status: echogate.TurnDoneSt, Posted: ref})
	}
	return true
}

// closeInterrupted records a turn left running by a dead process as failed.
func (p *Pipeline) closeInterrupted(ctx context.Context, log *slog.Logger, tr echogate.TurnRecord) {
	tr.Status, tr.Error, tr.EndedAt = echogate.TurnFailed, interruptedPrefix+replayedNote, p.cfg.Now()
	if err := p.d.Store.UpdateTurn(ctx, tr); err != nil {
		log.Warn("pipeline: close interrupted turn", "turn", tr.ID, "err", err)
		return
	}
	log.Warn("turn interrupted by a stop or crash; answering the event again", "turn", tr.ID)
}

// savedInput reports whether one of the dead turns wrote the user's message (see beginTurn).
func (p *Pipeline) savedInput(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, dead map[string]bool) bool {
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

// recoverResumed continues a resumed turn whose process died, under its own id, from its
// resume record; a turn that ended already only lost its event's completion.
func (p *Pipeline) recoverResumed(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, r echogate.TurnResume) {
	tr, err := p.d.Store.GetTurn(ctx, r.Turn)
	if err == nil && tr.Status != echogate.TurnRunning {
		return
	}
	if err == nil && p.posted(ctx, ctl, log, ev, tr, &r) {
		return
	}
	if pend, err := p.d.Store.GetPending(ctx, r.Session); err == nil && pend.Turn == r.Turn {
		return // it paused again: the new pause waits for its decision
	}
	st, err := decodePaused(r.Paused)
	var rs agent.Resume
	if err == nil {
		err = json.Unmarshal(r.Decision, &rs)
	}
	if err != nil {
		log.Error("pipeline: resume record unreadable; closing its turn", "turn", r.Turn, "err", err)
		p.closeInterrupted(ctx, log, echogate.TurnRecord{ID: r.Turn, Session: r.Session, EventKey: r.EventKey})
		return
	}
	log.Warn("resumed turn interrupted by a stop or crash; continuing it", "turn", r.Turn, "tool", r.Paused.Tool,
		"tool_started", !r.ToolStartedAt.IsZero(), "tool_result", len(r.ToolResult) > 0)
	d := p.decide(ev, r.Paused, log) // only its superseding message, if any: the decision is the recorded one
	p.runTurn(ctx, ctl, log, &ev, d.extra, withResume(r, st, &rs), withContinued(p.postingOf(ctx, log, r.Turn)))
}

// runApproved runs the approved call of a resumed turn at most once across crashes: its start
// is durable before it runs and its result after. A recovered turn finds the result and feeds
// it back, or finds the call began without one and tells the model it may have run.
func (t *Turn) runApproved(ctx context.Context, tool tools.Tool, call echogate.ToolCall) (tools.Result, error) {
	r := t.approved
	if len(r.ToolResult) > 0 {
		var res tools.Result
		if err := json.Unmarshal(r.ToolResult, &res); err == nil {
			t.log.Info("approved call ran before a restart; using its recorded result", "tool", call.Name, "call", call.ID)
			return res, nil
		}
	}
	if !r.ToolStartedAt.IsZero() {
		t.log.Warn("approved call began before a restart without a recorded result; not running it again", "tool", call.Name, "call", call.ID)
		return tools.Errorf("tool %s was started before the gateway restarted and may or may not have completed; it was not run again", call.Name), nil
	}
	if err := t.store.RecordToolRun(ctx, t.id, call.ID, nil, t.now()); err != nil {
		return tools.Result{}, fmt.Errorf("pipeline: record the start of approved call %s: %w", call.ID, err)
	}
	res, err := t.runTool(ctx, tool, call)
	if err != nil {
		return res, err
	}
	if b, jerr := json.Marshal(res); jerr == nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
		defer cancel()
		if werr := t.store.RecordToolRun(wctx, t.id, call.ID, b, t.now()); werr != nil {
			t.log.Warn("pipeline: record the approved call's result", "tool", call.Name, "err", werr)
		}
	}
	return res, nil
}
