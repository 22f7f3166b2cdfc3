package pipeline

import (
	"context"
	"log/slog"
	"strings"

	"github.com/echogate/echogate"
)

// pausedRight is what an event may do to a paused turn (an approval or a question waiting for
// its user).
type pausedRight uint8

const (
	// rightDecide: the event acts on the paused turn: approve, deny, stop, answer, or a new
	// message that supersedes the pending call.
	rightDecide pausedRight = iota
	// rightIgnore: the event must not touch the pause and starts nothing: a reaction that
	// decides nothing, or a decision or stop its sender may not take (authority).
	rightIgnore
	// rightOwnTurn: a new message of someone who may not decide the pause is their own turn,
	// recorded under their own id, answered now with the pause left alone for its owner.
	rightOwnTurn
)

// pausedAction is what ev asks of a paused turn of kind; ok is false for a reaction that
// decides nothing (another emoji).
func pausedAction(ev *echogate.InboundEvent, kind echogate.PauseKind) (a action, ok bool) {
	if ev.Kind == echogate.KindReaction {
		switch ev.Reaction {
		case echogate.ReactionApprove, echogate.ReactionApproveSession:
			return actApprove, kind == echogate.PauseApproval
		case echogate.ReactionDeny:
			return actDeny, kind == echogate.PauseApproval
		case echogate.ReactionStop:
			return actStop, true
		}
		return actMessage, false
	}
	switch {
	case isStop(ev):
		return actStop, true
	case kind == echogate.PauseAsk:
		return actAnswer, true
	}
	switch decisionWord(ev.Text) {
	case "approve":
		return actApprove, true
	case "deny":
		return actDeny, true
	}
	return actSupersede, true
}

// pausedAuthority applies authority to an event on a paused turn: only the turn's requester,
// an approver or the gateway itself decides, answers or supersedes it; the conversation's
// starter may also stop it; a destructive or approvers_only call only an approver approves.
// A refused new message is its sender's own turn; any other refused event is ignored, and
// refused says who can when the sender should be told (they typed it, or they are the
// requester whose own approval does not count).
func (p *Pipeline) pausedAuthority(ctx context.Context, ev *echogate.InboundEvent, pend echogate.PendingTurn, prof *profile) (right pausedRight, refused string) {
	a, ok := pausedAction(ev, pend.Kind)
	if !ok {
		return rightIgnore, ""
	}
	who := parties{requester: pend.RequestedBy, approvers: prof.approvers, dm: ev.Conversation.DM}
	if a == actApprove {
		who.needsApprover = p.needsApprover(pend.Tool)
	}
	if p.allowed(ctx, ev, a, &who) {
		return rightDecide, ""
	}
	if (a == actSupersede || a == actAnswer) && !ev.Actor.IsBot && ev.Actor.ID != "" &&
		(strings.TrimSpace(ev.Text) != "" || len(ev.Attachments) > 0) {
		return rightOwnTurn, ""
	}
	if ev.Actor.IsBot || ev.Actor.ID == "" {
		return rightIgnore, ""
	}
	requester := ev.Actor.QualifiedID(ev.Conversation.Platform) == pend.RequestedBy
	if ev.Kind == echogate.KindReaction && !requester && ev.Interaction == "" {
		return rightIgnore, "" // a stranger's reaction or button: no public answer to it
	}
	return rightIgnore, whoCan(a, who, pend.Tool, p.nameOf)
}

// decisionWord names the text replies that decide an approval: "approve" (also "approved",
// "approve session"), "deny" (also "denied", "reject"), or "".
func decisionWord(text string) string {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "approve", "approved", "approve session":
		return "approve"
	case "deny", "denied", "reject":
		return "deny"
	}
	return ""
}

// ownTurn answers a new message of someone who may not decide the session's paused turn pend:
// it is their own turn (their id, their budget), and the pause stays for its owner. Their
// commands are judged as anyone's: !new, which forgets the pause with the conversation, only
// the conversation's starter or an approver may give.
func (p *Pipeline) ownTurn(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent, pend echogate.PendingTurn) {
	log.Info("new message from another user while a turn is paused: answering it as their own turn", "actor",
		ev.Actor.QualifiedID(ev.Conversation.Platform))
	if name, arg, ok := parseCommand(ev.Text); ok && name == cmdNew {
		if who := p.commandAuthority(ctx, ctl, &ev, name, arg, pend.RequestedBy); who != "" {
			p.refuseCommand(ctx, log, ev, "Another user's tool call is waiting for approval in this conversation, "+
				"so it can't be cleared now. Try again once it is decided. "+who)
			return
		}
	}
	if p.commandOf(ctx, ctl, log, &ev, pend.RequestedBy) {
		return
	}
	p.runTurn(ctx, ctl, log, &ev, []echogate.Message{userMessage(&ev)}, withPauseHeld())
}
