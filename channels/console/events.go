package console

import (
	"fmt"
	"strings"

	"github.com/echogate/echogate"
)

func (l *loop) onItem(it item) {
	if it.ev != nil {
		l.onEvent(*it.ev)
		return
	}
	l.onOutbound(*it.out, it.ref)
}

func (l *loop) beginTurn(turn string) {
	if turn == l.turn && turn != "" {
		return
	}
	l.flushNotices("")
	l.turn = turn
	l.answered, l.segment, l.reply = "", "", ""
	l.finalDone, l.shown = false, false
	l.approval, l.approvalShown, l.question = nil, false, ""
}

func (l *loop) onEvent(ev echogate.TurnEvent) {
	if ev.Type == echogate.TurnDone && l.failedTurn != "" && ev.Turn == l.failedTurn {
		l.failedTurn = "" // the done that follows an error: already handled
		return
	}
	if l.answerEvent(ev) {
		return
	}
	l.turnSeen = true
	if ev.Type == echogate.TurnStarted || ev.Turn != l.turn && ev.Turn != "" {
		l.beginTurn(ev.Turn)
	}
	c := l.c
	switch ev.Type {
	case echogate.TurnDelta:
		l.answered += ev.Text
		l.segment += ev.Text
		if !l.oneShot {
			l.out(ev.Text)
		}
	case echogate.TurnToolCall:
		if !l.oneShot && l.segment != "" {
			l.endLine()
		}
		l.segment = ""
		c.dim("→ %s %s", ev.Tool, preview(ev.Args, argsPreview))
	case echogate.TurnToolResult:
		mark := "←"
		if ev.IsError {
			mark = "✗"
		}
		c.dim("%s %s: %s", mark, ev.Tool, preview(ev.Text, argsPreview))
	case echogate.TurnPlan:
		c.dim("plan: %s", ev.Text)
	case echogate.TurnApprovalRequest:
		e := ev
		l.approval = &e
		if !l.oneShot {
			l.endLine()
		}
		if !l.approvalShown {
			c.info("%s", approvalLine(ev))
		}
		l.approvalShown = true
	case echogate.TurnAsk:
		if l.toolQuestion(ev) {
			return
		}
		l.question = ev.Text
		if !l.oneShot {
			l.endLine()
			l.out(ev.Text + "\n")
			l.finalDone = true
		}
	case echogate.TurnDone:
		l.onDone(ev)
	case echogate.TurnError:
		if !l.oneShot {
			l.endLine()
		}
		l.flushNotices(ev.Text)
		shown := ev.Text
		if ev.Detail != "" { // the cause, for the operator at this terminal (ref: the turn)
			shown = ev.Detail + " (ref " + ev.Turn + ")"
		}
		c.info("error: %s", shown)
		l.finishWait()
		l.failedTurn = ev.Turn
		if l.oneShot {
			l.finish(l.partial(), fmt.Errorf("%w: %s", ErrTurnFailed, shown))
			return
		}
		l.next()
	}
}

func (l *loop) onDone(ev echogate.TurnEvent) {
	l.finishWait()
	l.flushNotices("")
	final := ev.Text
	if final == "" {
		final = l.reply
	}
	if l.command && ev.Status != "paused" {
		final = terminalText(final, l.c.cfg.IsTTY) // the gateway's own answer, for the terminal
	}
	status := ev.Status
	if status == "paused" {
		switch {
		case l.approval != nil:
			l.startDecision()
			return
		case l.question != "" || final != "":
			q := l.question
			if q == "" {
				q = final
			}
			l.question = q
			if !l.oneShot {
				if !l.finalDone {
					l.endLine()
					l.out(q + "\n")
					l.finalDone = true
				}
				l.next()
				return
			}
			if l.c.cfg.IsTTY && l.c.cfg.In != nil {
				l.c.info("%s", q)
				fmt.Fprint(l.c.cfg.Err, "answer: ")
				l.answering = true
				l.needLines()
				return
			}
			l.out(q + "\n")
			l.finish(q, fmt.Errorf("%w: run `echogate chat` with this session to answer it", ErrNeedsTerminal))
			return
		}
	}
	if l.oneShot {
		answer := final
		if answer == "" {
			answer = l.segment
		}
		if answer != "" {
			l.out(answer)
			l.endLine()
		}
		switch status {
		case "aborted":
			l.finish(answer, ErrAborted)
		case "error":
			l.finish(answer, ErrTurnFailed)
		default:
			l.finish(answer, nil)
		}
		return
	}
	l.printFinal(final)
	switch status {
	case "aborted":
		l.c.dim("(stopped)")
	case "error":
		l.c.dim("(the turn failed)")
	}
	l.next()
}

// printFinal completes the streamed answer with the final text, never printing it twice.
func (l *loop) printFinal(final string) {
	if l.finalDone {
		return
	}
	l.finalDone = true
	l.lastFinal = final
	switch {
	case final == "":
	case l.answered == "":
		l.out(final)
	case strings.HasPrefix(final, l.segment) && l.segment != "":
		l.out(final[len(l.segment):])
	case strings.HasPrefix(final, l.answered):
		l.out(final[len(l.answered):])
	}
	l.endLine()
}
