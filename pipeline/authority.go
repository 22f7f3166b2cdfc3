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
	// rightDecide: the event is the paused turn's to act on, whatever it says: approve, deny,
	// stop, answer, or a new message that supersedes the pending call.
	rightDecide pausedRight = iota
	// rightIgnore: the event must not touch the pause and starts nothing: a stranger's
	// reaction or button, or a stranger's "approve", "deny" or "stop".
	rightIgnore
	// rightOwnTurn: a stranger's new message is their own turn, recorded under their own id,
	// answered now with the pause left alone for its owner.
	rightOwnTurn
)

// pausedAuthority decides who owns a decision on a paused turn: only the user who started the
// turn (requestedBy, a qualified id such as "slack:U123"), a listed approver, or the gateway
// itself (timeouts, its own events) may stop, deny, approve, answer or supersede it, by any
// means. Everyone else's events are ignored, except a new message, which is its sender's own turn.
func pausedAuthority(ev echogate.InboundEvent, requestedBy string, approvers map[string]bool) pausedRight {
	if ev.Actor.IsSelf {
		return rightDecide
	}
	actor := ev.Actor.QualifiedID(ev.Conversation.Platform)
	if ev.Actor.ID != "" && (actor == requestedBy || approvers[actor]) {
		return rightDecide
	}
	switch ev.Kind {
	case echogate.KindMessage, echogate.KindDirect, echogate.KindMention:
	default:
		return rightIgnore // a reaction, a button, anything but a message
	}
	if isStop(&ev) || isDecisionWord(ev.Text) || ev.Actor.IsBot {
		return rightIgnore
	}
	if strings.TrimSpace(ev.Text) == "" && len(ev.Attachments) == 0 {
		return rightIgnore
	}
	return rightOwnTurn
}

// isDecisionWord reports the text replies that decide an approval.
func isDecisionWord(text string) bool {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "approve", "approved", "approve session", "deny", "denied", "reject":
		return true
	}
	return false
}

// ownTurn answers a stranger's new message in a session whose turn is paused for someone else:
// it is the stranger's own turn (their id, their budget), and the pause stays for its owner.
func (p *Pipeline) ownTurn(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev echogate.InboundEvent) {
	log.Info("new message from another user while a turn is paused: answering it as their own turn", "actor",
		ev.Actor.QualifiedID(ev.Conversation.Platform))
	if name, _, ok := parseCommand(ev.Text); ok && name == cmdNew {
		// /new forgets the conversation, the requester's pause with it: not a stranger's to do.
		p.answerCommand(ctx, log, ev, "Another user's tool call is waiting for approval in this conversation, "+
			"so it can't be cleared now. Try again once it is decided.")
		return
	}
	if p.command(ctx, log, &ev) {
		return
	}
	p.runTurn(ctx, ctl, log, &ev, []echogate.Message{userMessage(&ev)}, withPauseHeld())
}

// mayStop reports whether ev stops the turn ctl runs right away: only once a turn runs (runTurn
// names its user) and only for that user or an approver. Any other stop waits in the mailbox and
// is judged in order: by the paused turn's rule, or as a stop with nothing running.
func (p *Pipeline) mayStop(ctl *turnCtl, ev echogate.InboundEvent) bool {
	owner := ctl.owner.Load()
	return owner != nil && pausedAuthority(ev, *owner, p.approvers) == rightDecide
}

// setOwner records whose turn ctl runs (runTurn calls it; ctl may be nil in tests).
func (c *turnCtl) setOwner(user string) {
	if c != nil {
		c.owner.Store(&user)
	}
}
