package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
)

// answerQuestion takes ev as the answer to its session's open question (Elicit) when it is one:
// a press of the question's buttons, or a message of the person asked (or an approver) while
// the question waits. It is called by Submit before the event queues (the session's mailbox is
// busy with the turn whose tool call waits for the answer). handled is false when ev is no
// answer: it then queues as usual. A button press by anyone else is refused with a private
// note; a typed answer that does not fit the form is explained privately and the question
// keeps waiting.
func (p *Pipeline) answerQuestion(ctx context.Context, ev *echogate.InboundEvent) (handled bool) {
	press := ev.Kind == echogate.KindReaction && strings.HasPrefix(ev.Reaction, choicePrefix)
	oq := p.questions.get(ev.SessionKey())
	if oq == nil {
		if press { // a button of a question that has ended
			p.claimAnswer(ctx, ev, func() { p.tellAnswerer(ctx, ev, "That question has already ended.") })
			return true
		}
		return false
	}
	who := ev.Actor.QualifiedID(ev.Conversation.Platform)
	may := who == oq.requester || oq.approvers[who]
	var reply Reply
	switch {
	case press:
		p.questions.mu.Lock()
		prompt := oq.prompt
		p.questions.mu.Unlock()
		if !prompt.IsZero() && ev.Target.ID != prompt.ID {
			p.claimAnswer(ctx, ev, func() { p.tellAnswerer(ctx, ev, "That question has already ended.") })
			return true
		}
		if !may {
			p.log.Info("question answer refused: not the person asked or an approver", "session", ev.SessionKey(), "actor", who)
			p.claimAnswer(ctx, ev, func() {
				p.tellAnswerer(ctx, ev, "Only the person this question was put to, or an approver, can answer it.")
			})
			return true
		}
		r, ok := oq.pressed(ev.Reaction)
		if !ok {
			return false
		}
		reply = r
	case !may || ev.Kind == echogate.KindReaction || ev.Interaction != "" || strings.TrimSpace(ev.Text) == "":
		return false // a stranger's message is theirs; a command stays a command
	default:
		if _, _, cmd := parseCommand(ev.Text); cmd || isStop(ev) {
			return false
		}
		r, err := oq.form.parseAnswer(ev.Text)
		if err != nil {
			p.claimAnswer(ctx, ev, func() {
				p.tellAnswerer(ctx, ev, fmt.Sprintf("I could not read that as the answer: %v. Reply again, or `decline`.", err))
			})
			return true
		}
		reply = r
	}
	p.claimAnswer(ctx, ev, func() {
		by := ev.Actor.Name
		if by == "" {
			by = ev.Actor.ID
		}
		select {
		case oq.answer <- answered{reply: reply, by: by}:
			p.log.Info("question answered", "session", ev.SessionKey(), "question", oq.id, "action", reply.Action, "actor", who)
			if p.caps[ev.Conversation.Platform].Observer != nil {
				p.answerCommand(ctx, p.log, *ev, "Answer sent to "+oq.q.From+".")
			}
		default:
			p.tellAnswerer(ctx, ev, "That question has already been answered.")
		}
	})
	return true
}

// claimAnswer records ev as handled and runs do once: a redelivered press or message does not
// answer (or get refused) twice.
func (p *Pipeline) claimAnswer(ctx context.Context, ev *echogate.InboundEvent, do func()) {
	first, err := p.d.Store.ClaimEvent(ctx, ev.DedupeKey(), nil, ev.ReceivedAt)
	if err != nil {
		p.log.Warn("pipeline: record a question's answer", "event_id", ev.ID, "err", err)
		return
	}
	if !first {
		return
	}
	do()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	_ = p.d.Store.CompleteEvent(cctx, ev.DedupeKey(), p.cfg.Now())
}

// tellAnswerer answers ev's sender alone (the web chat and terminal: as the end of their
// message's exchange).
func (p *Pipeline) tellAnswerer(ctx context.Context, ev *echogate.InboundEvent, text string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	if p.caps[ev.Conversation.Platform].Observer != nil {
		p.answerCommand(cctx, p.log, *ev, text)
		return
	}
	user := ev.Actor.QualifiedID(ev.Conversation.Platform)
	if err := p.sendPrivately(cctx, ev.Conversation, ev.SessionKey(), user, text); err != nil {
		p.log.Warn("pipeline: answer about a question privately", "event_id", ev.ID, "err", err)
	}
}
