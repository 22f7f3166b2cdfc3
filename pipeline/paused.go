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
	"github.com/echogate/echogate/internal/ids"
)

// decision is what an event means for a paused turn.
type decision struct {
	ignore bool   // not a decision (another message's reaction, a stranger, an old timeout)
	stop   string // cancel the pause, telling the user this
	resume agent.Resume
	grant  bool               // approve the tool for the session too
	extra  []echogate.Message // a new message that superseded the pause, handled after it
	name   string             // approved, approved_session, denied, answered, superseded, timeout
	notice string             // posted before the resumed turn runs
}

// handlePaused applies an event to the session's paused turn: a decision resumes it (a new
// turn, durable together with the decision before anything acts on it), a stop cancels it,
// anything else leaves it waiting.
func (p *Pipeline) handlePaused(ctx context.Context, ctl *turnCtl, log *slog.Logger, evp *echogate.InboundEvent, pend echogate.PendingTurn) {
	ev := *evp
	st, err := decodePaused(pend)
	if err != nil {
		p.dropUnreadable(ctx, ctl, log, ev, pend, err)
		return
	}
	prof := p.profileOfTurn(ctx, pend.Turn, ev) // the paused turn's agent: its approvers decide, it resumes under it
	if !p.authorized(ctx, ctl, log, ev, pend, prof) {
		return
	}
	if ev.Kind != echogate.KindReaction && !ev.Actor.IsSelf && !isStop(&ev) && p.commandOf(ctx, ctl, log, &ev, pend.RequestedBy) {
		return // a command leaves the pause as it is
	}
	d := p.decide(ev, pend, log)
	switch {
	case d.ignore:
		return
	case d.stop != "":
		p.cancelPaused(ctx, log, ev, pend, d.stop)
		return
	}
	actor := ev.Actor.QualifiedID(ev.Conversation.Platform)
	r, err := p.resumeDurably(ctx, ev, pend, d, actor, prof)
	if err != nil {
		log.Error("pipeline: record the decision on a paused turn", "turn", pend.Turn, "err", err)
		return
	}
	p.d.Metrics.ApprovalPending(-1)
	p.d.Metrics.ApprovalDecided(d.name, p.cfg.Now().Sub(pend.CreatedAt))
	log.Info("pause resolved", "turn", pend.Turn, "resumed_as", r.Turn, "tool", pend.Tool, "decision", d.name, "by", actor)
	p.showDecision(ctx, log, ev, pend, st, d.name)
	if d.grant {
		// The requester's grant, for that tool only: another participant's calls still ask.
		if err := p.d.Store.GrantTool(ctx, ev.SessionKey(), pend.RequestedBy, pend.Tool, actor, p.cfg.Now()); err != nil {
			log.Error("pipeline: record session grant", "tool", pend.Tool, "err", err)
		}
	}
	if d.notice != "" {
		p.notify(ctx, log, ev, d.notice)
	}
	p.runTurn(ctx, ctl, log, &ev, d.extra, withResume(r, st, &d.resume), withProfile(prof))
}

// resumeDurably writes the decision and the resumed turn's record in place of the pause, in one
// TurnLog call (write-ahead: a crash from here on finds the resumed turn and finishes it). Of
// two replicas deciding at once, only the one whose call removed the pause gets nil.
func (p *Pipeline) resumeDurably(ctx context.Context, ev echogate.InboundEvent, pend echogate.PendingTurn, d decision, actor string, prof *profile) (echogate.TurnResume, error) {
	rs, err := json.Marshal(d.resume)
	if err != nil {
		return echogate.TurnResume{}, fmt.Errorf("pipeline: encode decision: %w", err)
	}
	now := p.cfg.Now()
	r := echogate.TurnResume{Turn: ids.New("t_"), Session: ev.SessionKey(), Paused: pend, EventKey: ev.DedupeKey(),
		Decision: rs, DecidedBy: actor, At: now}
	rec := echogate.TurnRecord{ID: r.Turn, Session: r.Session, EventKey: r.EventKey, UserID: pend.RequestedBy,
		Agent: prof.Name, Status: echogate.TurnRunning, Model: prof.Model, StartedAt: now}
	if err := p.d.Store.ResumeTurn(ctx, r, rec); err != nil {
		return r, err
	}
	p.pending.remove(r.Session)
	return r, nil
}

// decodePaused reads a pause's agent state.
func decodePaused(pend echogate.PendingTurn) (*agent.State, error) {
	var st agent.State
	if err := json.Unmarshal(pend.State, &st); err != nil {
		return nil, err
	}
	if len(st.Pending) == 0 {
		return nil, errors.New("no pending call in the paused state")
	}
	return &st, nil
}

// dropUnreadable removes a pause whose state cannot be read; a message is then handled as new.
func (p *Pipeline) dropUnreadable(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn, err error) {
	log.Error("pipeline: paused state unreadable, dropping it", "turn", pend.Turn, "err", err)
	_ = p.deletePending(ctx, ev.SessionKey())
	p.d.Metrics.ApprovalPending(-1)
	p.closePausedTurn(ctx, pend, echogate.TurnFailed)
	if ev.Kind != echogate.KindReaction && !ev.Actor.IsSelf {
		p.runTurn(ctx, ctl, log, &ev, []echogate.Message{userMessage(&ev)})
	}
}

// authorized routes ev through authority (authority_paused.go): only the requester, an
// approver or the gateway decides, the conversation's starter may also stop; a destructive or
// approvers_only call only an approver approves. Someone else's new message is their own
// turn, anything else of theirs is ignored (answered with who can when they should be told).
// It reports whether ev may act on the pause.
func (p *Pipeline) authorized(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn, prof *profile) bool {
	right, refused := p.pausedAuthority(ctx, &ev, pend, prof) // the gateway's and the agent's approvers
	switch right {
	case rightIgnore:
		what := "approval message ignored"
		if ev.Kind == echogate.KindReaction {
			what = "approval reaction ignored"
		}
		log.Warn(what+": not the requester or an approver, or an approver's decision", "actor", ev.Actor.QualifiedID(ev.Conversation.Platform), "turn", pend.Turn, "tool", pend.Tool)
		if refused != "" {
			p.answerPrivately(ctx, log, ev, refused)
		}
		return false
	case rightOwnTurn:
		p.ownTurn(ctx, ctl, log, ev, pend)
		return false
	}
	return true
}

// decide says what ev means for the paused turn pend.
func (p *Pipeline) decide(ev echogate.InboundEvent, pend echogate.PendingTurn, log *slog.Logger) decision {
	d := decision{resume: agent.Resume{CallID: pend.CallID}}
	switch {
	case ev.Actor.IsSelf && strings.HasPrefix(ev.ID, timeoutPrefix):
		if ev.ID != timeoutPrefix+pend.Turn {
			return decision{ignore: true} // a timeout for an earlier pause
		}
		d.resume.Reason = fmt.Sprintf("not approved: nobody approved within %s", p.cfg.ApprovalTimeout)
		d.name = "timeout"
		d.notice = fmt.Sprintf("⏱ Nobody approved `%s` within %s, so it was not run.", pend.Tool, p.cfg.ApprovalTimeout)
		return d
	case pend.Kind == echogate.PauseAsk:
		return decideAsk(ev, d)
	case ev.Kind == echogate.KindReaction:
		return p.decideReaction(ev, pend, d, log)
	}
	return p.decideText(ev, pend, d, log)
}

// decideAsk: the next message answers the question; stop cancels it.
func decideAsk(ev echogate.InboundEvent, d decision) decision {
	switch {
	case ev.Kind == echogate.KindReaction:
		return decision{ignore: true}
	case isStop(&ev):
		return decision{stop: "Stopped. I won't wait for an answer."}
	}
	d.resume.Answer, d.name = ev.Text, "answered"
	return d
}

// decideReaction: ✅ 🔁 ❌ 🛑 on the prompt, by someone who may decide.
func (p *Pipeline) decideReaction(ev echogate.InboundEvent, pend echogate.PendingTurn, d decision, log *slog.Logger) decision {
	if pend.Prompt.ID != "" && ev.Target.ID != pend.Prompt.ID {
		return decision{ignore: true} // a reaction on some other message
	}
	switch ev.Reaction {
	case echogate.ReactionApprove:
		d.resume.Approved, d.name = true, "approved"
	case echogate.ReactionApproveSession:
		d.resume.Approved, d.grant, d.name = true, true, "approved_session"
	case echogate.ReactionDeny:
		d.resume.Reason, d.name = p.denial(&ev), "denied"
	case echogate.ReactionStop:
		return decision{stop: "Stopped. The pending tool call was not run."}
	default:
		return decision{ignore: true}
	}
	return d
}

// decideText: approve / deny / stop typed as a reply; any other message supersedes the pause
// (the pending call is denied and the message handled after it).
func (p *Pipeline) decideText(ev echogate.InboundEvent, pend echogate.PendingTurn, d decision, log *slog.Logger) decision {
	word := strings.ToLower(strings.TrimSpace(ev.Text))
	if isStopCommand(word) {
		word = "stop"
	}
	switch word {
	case "approve", "approved", "approve session", "deny", "denied", "reject": // decisionWord's
		switch word {
		case "approve", "approved":
			d.resume.Approved, d.name = true, "approved"
		case "approve session":
			d.resume.Approved, d.grant, d.name = true, true, "approved_session"
		default:
			d.resume.Reason, d.name = p.denial(&ev), "denied"
		}
	case "stop":
		return decision{stop: "Stopped. The pending tool call was not run."}
	default:
		d.resume.Reason, d.name = "not approved: user sent a new message", "superseded"
		d.extra = []echogate.Message{userMessage(&ev)}
	}
	return d
}

// cancelPaused removes the pause and closes its turn as stopped.
func (p *Pipeline) cancelPaused(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn, text string) {
	if err := p.deletePending(ctx, ev.SessionKey()); err != nil {
		log.Error("pipeline: clear pending turn", "err", err)
		return
	}
	p.showDecision(ctx, log, ev, pend, nil, outcomeStopped)
	p.d.Metrics.ApprovalPending(-1)
	p.closePausedTurn(ctx, pend, echogate.TurnAborted)
	p.answerCommand(ctx, log, ev, text) // ends the exchange of the stop
}

// closePausedTurn gives the record of a turn whose pause went away its final status, so no
// turn shows `paused` once nothing waits.
func (p *Pipeline) closePausedTurn(ctx context.Context, pend echogate.PendingTurn, status echogate.TurnStatus) {
	if t, err := p.d.Store.GetTurn(ctx, pend.Turn); err == nil && t.Status == echogate.TurnPaused {
		t.Status, t.EndedAt = status, p.cfg.Now()
		_ = p.d.Store.UpdateTurn(ctx, t)
	}
}
