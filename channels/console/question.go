package console

import (
	"strings"

	"github.com/echogate/echogate"
)

// maxAnswers bounds the answer lines whose acknowledgement is awaited.
const maxAnswers = 16

// toolQuestion shows a question a tool call of the running turn puts to the user (an MCP
// server's elicitation: a TurnAsk naming the asking tool without a call id, while the turn
// runs; ask_user's carries its call and pauses the turn) and makes the next lines its answer.
// It reports whether ev was one.
func (l *loop) toolQuestion(ev echogate.TurnEvent) bool {
	if ev.Tool == "" || ev.CallID != "" || l.inflight == "" {
		return false
	}
	l.asked = true
	l.endLine()
	l.out(ev.Text + "\n")
	if l.c.cfg.IsTTY && !l.oneShot {
		l.out("answer> ")
		l.atLineEnd = true
	}
	return true
}

// answerQuestion sends a typed line as the answer to the open question, not as a message of
// its own: the pipeline takes it while the turn's tool call waits.
func (l *loop) answerQuestion(text string) {
	ev := l.c.event(echogate.KindDirect, text)
	if l.answers == nil {
		l.answers = map[string]bool{}
	}
	if len(l.answers) >= maxAnswers {
		clear(l.answers)
	}
	if l.submit(ev, false) == nil {
		l.answers[ev.ID] = true
	}
}

// answerEvent handles the events that acknowledge an answer line (the pipeline ends its
// exchange as a command's: a start and a done with a note): the note is shown, and the
// question stays open when the answer could not be read. It reports whether ev was one.
func (l *loop) answerEvent(ev echogate.TurnEvent) bool {
	if ev.EventID == "" || !l.answers[ev.EventID] {
		if ev.Type == echogate.TurnToolResult || ev.Type == echogate.TurnDone {
			l.asked = false // the question's call ended
		}
		return false
	}
	if ev.Type == echogate.TurnDone {
		delete(l.answers, ev.EventID)
		if t := strings.TrimSpace(ev.Text); t != "" {
			l.c.dim("%s", t)
		}
	}
	return true
}
