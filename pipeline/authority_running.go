package pipeline

import (
	"context"
	"log/slog"

	"github.com/echogate/echogate"
)

// turnOwner is whose turn a turnCtl runs and who else decides over it.
type turnOwner struct {
	user      string          // the requester (qualified id)
	approvers map[string]bool // the serving agent's approvers, the gateway's among them
}

// setOwner records whose turn ctl runs, under which agent's approvers (runTurn calls it; ctl
// may be nil in tests).
func (c *turnCtl) setOwner(user string, approvers map[string]bool) {
	if c != nil {
		c.owner.Store(&turnOwner{user: user, approvers: approvers})
	}
}

// partiesOf are the people with a say over the turn ctl runs, as far as they are known without
// I/O (the starter is read only when needed, see stopRunning); ok is false until a turn runs
// (runTurn names its user).
func (c *turnCtl) partiesOf(ev *echogate.InboundEvent) (who parties, ok bool) {
	o := c.owner.Load()
	if o == nil {
		return parties{}, false
	}
	return parties{requester: o.user, approvers: o.approvers, dm: ev.Conversation.DM}, true
}

// mayStop reports whether ev stops the turn ctl runs right away, by what authority knows
// without reading the store: the requester, an approver, the person of a DM. A turn that does
// not run yet is not stopped here: its stop waits in the mailbox and is judged in order.
func (p *Pipeline) mayStop(ctl *turnCtl, ev echogate.InboundEvent) bool {
	who, ok := ctl.partiesOf(&ev)
	return ok && authority(&ev, actStop, who)
}

// stopRunning applies a of ev (a stop or an interrupt) to key's turn running in this process:
// it stops it when ev's sender may (authority; the conversation's starter is read from the
// store only when the cheaper facts refuse, outside the shard's lock). want, when not nil, is
// the turn to stop: no other (an interrupt stops the turn that ran when its message came, never
// the message's own). running is false when no such turn runs here (a stop then queues as
// usual); who is what authority judged by.
func (p *Pipeline) stopRunning(ctx context.Context, key echogate.SessionKey, ev *echogate.InboundEvent, a action, want *turnCtl) (running, stopped bool, who parties) {
	sh := p.shardFor(key)
	sh.mu.Lock()
	mb := sh.boxes[key]
	if mb == nil || mb.cur == nil || (want != nil && mb.cur != want) {
		sh.mu.Unlock()
		return false, false, parties{}
	}
	ctl := mb.cur
	who, ok := ctl.partiesOf(ev)
	if !ok {
		sh.mu.Unlock()
		return false, false, parties{}
	}
	if authority(ev, a, who) {
		ctl.stop()
		sh.mu.Unlock()
		return true, true, who
	}
	sh.mu.Unlock()
	if who.dm {
		return true, false, who
	}
	if who.starter = p.starterOf(ctx, ev.SessionKey()); !authority(ev, a, who) {
		return true, false, who
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.boxes[key] != mb || mb.cur != ctl {
		return false, false, who // the turn ended meanwhile
	}
	ctl.stop()
	return true, true, who
}

// submitStop handles a stop in Submit when a turn of its session runs here: stopped at once
// when its sender may, else answered with who can. handled is false when no turn runs here:
// the stop then queues, for a paused turn it may cancel.
func (p *Pipeline) submitStop(ctx context.Context, key echogate.SessionKey, ev echogate.InboundEvent) (handled bool) {
	running, stopped, who := p.stopRunning(ctx, key, &ev, actStop, nil)
	switch {
	case !running:
		return false
	case stopped:
		p.stopped(ctx, ev)
		p.answerStop(ctx, ev)
		return true
	}
	p.refuseStop(ctx, ev, who)
	return true
}

// refuseStop answers a stop its sender may not make, once per event, with who can, privately
// (answerPrivately) when they typed it or used a command; a 🛑 reaction gets no answer (on
// platforms without private messages it would be a public one). The event is recorded as handled, so a redelivery is not answered again.
func (p *Pipeline) refuseStop(ctx context.Context, ev echogate.InboundEvent, who parties) {
	log := p.log.With("session", ev.SessionKey(), "event_id", ev.ID, "channel", ev.Conversation.Platform)
	log.Info("stop refused: not the starter, the requester or an approver", "actor", ev.Actor.QualifiedID(ev.Conversation.Platform))
	first, err := p.d.Store.ClaimEvent(ctx, ev.DedupeKey(), nil, ev.ReceivedAt)
	if err != nil || !first {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	defer func() { _ = p.d.Store.CompleteEvent(cctx, ev.DedupeKey(), p.cfg.Now()) }()
	if ev.Kind == echogate.KindReaction && ev.Interaction == "" {
		return
	}
	p.answerPrivately(cctx, log, ev, whoCan(actStop, who, "", p.nameOf))
}

// interrupt stops cur, key's turn that ran when ev came, for ev, a new message under
// agent.on_busy: interrupt, when its sender may (authority); anyone else's message just waits
// its turn.
func (p *Pipeline) interrupt(ctx context.Context, key echogate.SessionKey, ev echogate.InboundEvent, cur *turnCtl) {
	if _, stopped, _ := p.stopRunning(ctx, key, &ev, actInterrupt, cur); stopped {
		p.log.Info("running turn interrupted by a new message", "session", key, "event_id", ev.ID)
	}
}

// refuseCommand answers a command authority refused, with who can, privately.
func (p *Pipeline) refuseCommand(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, text string) {
	log.Info("command refused: not the starter, the requester or an approver", "actor", ev.Actor.QualifiedID(ev.Conversation.Platform))
	p.answerPrivately(ctx, log, ev, text)
}

// answerPrivately answers ev's sender alone where the platform can: through the interaction
// ev came with, or as a message only they see (Outbound.PrivateTo: Slack's ephemeral
// messages; elsewhere a reply in the conversation). Channels that observe turns (the web chat,
// the terminal: one person each) get it as the end of the exchange, as any command's answer.
func (p *Pipeline) answerPrivately(ctx context.Context, log *slog.Logger, ev echogate.InboundEvent, text string) {
	rep := p.d.Repliers[ev.Conversation.Platform]
	if rep == nil || (p.caps[ev.Conversation.Platform].Observer != nil && ev.Interaction == "") {
		p.answerCommand(ctx, log, ev, text)
		return
	}
	out := echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: text,
		Session: ev.SessionKey(), Interaction: ev.Interaction}
	if ev.Interaction == "" {
		out.PrivateTo = ev.Actor.ID
	}
	if _, err := rep.Send(ctx, out); err != nil {
		log.Error("pipeline: answer privately", "err", err)
	}
}
