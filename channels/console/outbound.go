package console

import (
	"fmt"
	"time"

	"github.com/echogate/echogate"
)

func (l *loop) onOutbound(out echogate.Outbound, ref echogate.MessageRef) {
	c := l.c
	switch out.Kind {
	case echogate.OutReply:
		l.reply = out.Text
		if l.inflight != "" && l.turnSeen {
			return // the turn's done shows it
		}
		answeredWithoutTurn := l.inflight != "" && (out.ReplyTo.ID == "" || out.ReplyTo.ID == l.inflight)
		if l.oneShot {
			if answeredWithoutTurn {
				l.finishWait()
				l.out(terminalText(out.Text, c.cfg.IsTTY))
				l.endLine()
				l.finish(out.Text, nil)
			}
			return
		}
		if out.Text != l.lastFinal && (l.question == "" || out.Text != l.question) {
			// A reply outside any shown turn (a notice-like answer, or after a done without text).
			l.endLine()
			l.out(terminalText(out.Text, c.cfg.IsTTY))
			l.endLine()
			l.lastFinal = out.Text
		}
		if answeredWithoutTurn {
			l.finishWait()
			l.next()
		}
	case echogate.OutApprovalPrompt:
		if out.Turn != "" && out.Turn != l.turn {
			l.beginTurn(out.Turn)
		}
		l.prompt = ref // shown in the terminal's words by its approval_request event (approvalLine)
		if l.pendingEmoji != "" {
			l.submitDecision(l.pendingEmoji)
		}
	case echogate.OutPlan:
		c.dim("plan: %s", out.Text)
	default:
		if out.Turn != "" && out.Turn == l.turn && l.inflight != "" {
			// Held until the turn ends: a failed turn's notice is its error, shown once.
			l.turnNotices = append(l.turnNotices, out.Text)
			return
		}
		l.notice(out.Text)
	}
}

// notice prints a notice of the gateway, rendered for the terminal.
func (l *loop) notice(text string) {
	if !l.oneShot {
		l.endLine()
	}
	l.c.info("notice: %s", terminalText(text, l.c.cfg.IsTTY))
}

// flushNotices prints the notices held for the turn, except skip (the error already shown).
func (l *loop) flushNotices(skip string) {
	for _, n := range l.turnNotices {
		if n != skip {
			l.notice(n)
		}
	}
	l.turnNotices = nil
}

// startDecision decides a paused approval: asked on a terminal, else denied (or approved with
// AutoApprove).
func (l *loop) startDecision() {
	l.decisions++
	if l.decisions > maxDecisions {
		err := fmt.Errorf("console: the turn asked for approval %d times: giving up", l.decisions)
		l.c.info("%v", err)
		if l.oneShot {
			l.finish(l.partial(), err)
		}
		return
	}
	tool := "the tool"
	if l.approval != nil && l.approval.Tool != "" {
		tool = l.approval.Tool
	}
	switch {
	case l.c.cfg.AutoApprove:
		l.c.dim("approved %s (--approve)", tool)
		l.submitDecision(echogate.ReactionApprove)
	case l.c.cfg.IsTTY && l.c.cfg.In != nil:
		fmt.Fprint(l.c.cfg.Err, "approve? [y]es / [s]ession / [N]o ")
		l.awaiting = true
		l.needLines()
	default:
		l.c.info("not run: %s needs approval and there is no terminal to ask (pass --approve to allow it)", tool)
		l.denyReason = noTerminalReason
		l.submitDecision(echogate.ReactionDeny)
	}
}

// submitDecision reacts on the prompt message; without one it waits PromptGrace for it, then
// answers in text.
func (l *loop) submitDecision(emoji string) {
	if l.prompt.IsZero() {
		l.pendingEmoji = emoji
		if l.graceC == nil {
			l.graceTimer = time.NewTimer(l.c.cfg.PromptGrace)
			l.graceC = l.graceTimer.C
		}
		return
	}
	l.stopGrace()
	ev := l.c.event(echogate.KindReaction, "")
	ev.Reaction, ev.Target, ev.Message = emoji, l.prompt, l.prompt
	if emoji == echogate.ReactionDeny {
		ev.Text = l.denyReason // why, when nobody denied it
	}
	l.sendDecision(ev)
}

func (l *loop) graceExpired() {
	l.graceC, l.graceTimer = nil, nil
	if l.pendingEmoji == "" {
		return
	}
	text := "approve"
	if l.pendingEmoji == echogate.ReactionDeny {
		text = "deny"
	}
	l.c.log.Debug("no approval prompt message: deciding in text", "session", string(l.c.key))
	l.sendDecision(l.c.event(echogate.KindDirect, text))
}

func (l *loop) stopGrace() {
	if l.graceTimer != nil {
		l.graceTimer.Stop()
	}
	l.graceC, l.graceTimer = nil, nil
}

func (l *loop) sendDecision(ev echogate.InboundEvent) {
	l.pendingEmoji, l.denyReason = "", ""
	l.approval = nil
	l.prompt = echogate.MessageRef{}
	if err := l.submit(ev, true); err != nil {
		if l.oneShot {
			l.finish(l.partial(), err)
			return
		}
		l.next()
	}
}

// needLines starts reading In for RunOnce's terminal questions.
func (l *loop) needLines() {
	if l.lines == nil && !l.eof {
		l.lines = l.c.readLines(l.stopCh)
	}
}
