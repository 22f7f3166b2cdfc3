package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// Run is the interactive conversation: each line read from In is a message (the line "stop"
// stops the running turn); answers stream to Out. Lines typed while a turn runs wait for it. At
// the end of In (Ctrl-D) Run waits for the running turn (at most Config.Timeout) and returns nil;
// it also returns nil when ctx ends. A sink error is shown and the line dropped.
func (c *Channel) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("console: Run: sink is nil")
	}
	if err := c.useSession(false); err != nil {
		return err
	}
	defer c.release()
	stop := make(chan struct{})
	defer close(stop)
	l := newLoop(c, ctx, sink, false)
	l.lines = c.readLines(stop)
	if c.cfg.IsTTY {
		c.info("echogate chat: session %s. Type stop to stop a turn, Ctrl-D to quit.", c.conv.Channel)
	}
	l.showPrompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ln := <-l.lines:
			l.onLine(ln)
		case <-c.q.notify:
			items := c.q.take()
			for _, it := range items {
				l.onItem(it)
			}
			c.q.processed(len(items))
		case <-l.turnTimer.C:
			l.turnTimedOut()
		case <-l.graceC:
			l.graceExpired()
		}
		if l.eof && l.idle() {
			return nil
		}
	}
}

// ErrNeedsTerminal is returned by RunOnce when the turn asked the user a question and no terminal
// is there to answer it.
var ErrNeedsTerminal = errors.New("console: the question needs an interactive session")

// ErrAborted is returned by RunOnce when the turn was stopped (a stop, an exhausted budget).
var ErrAborted = errors.New("console: the turn was aborted")

// ErrTurnFailed is returned by RunOnce when the turn failed; the channel printed why already.
var ErrTurnFailed = errors.New("console: the turn failed")

// RunOnce sends text as one message, waits for the turn to end and prints only the final answer
// (and a newline) to Out; progress goes to Err. Without a terminal an approval request is denied
// (the reply says so) unless Config.AutoApprove; a question the model asks is printed and
// ErrNeedsTerminal returned. Waiting is bounded by ctx and Config.Timeout; when either ends the
// turn is asked to stop and the error says why. A failed or aborted turn returns its partial
// answer with an error.
func (c *Channel) RunOnce(ctx context.Context, sink channels.Sink, text string) (answer string, err error) {
	if sink == nil {
		return "", errors.New("console: RunOnce: sink is nil")
	}
	if strings.TrimSpace(text) == "" {
		return "", errors.New("console: the message is empty: pass the text to send")
	}
	if err := c.useSession(true); err != nil {
		return "", err
	}
	defer c.release()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	l := newLoop(c, ctx, sink, true)
	l.stopCh = stop
	if err := l.submit(c.event(echogate.KindDirect, text), true); err != nil {
		return "", err
	}
	for !l.ended {
		select {
		case <-ctx.Done():
			l.stopTurn()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return l.partial(), fmt.Errorf("console: no answer within %s: %w", c.cfg.Timeout, ctx.Err())
			}
			return l.partial(), fmt.Errorf("console: waiting for the answer: %w", ctx.Err())
		case ln := <-l.lines:
			l.onLine(ln)
		case <-c.q.notify:
			items := c.q.take()
			for _, it := range items {
				if !l.ended {
					l.onItem(it)
				}
			}
			c.q.processed(len(items))
		case <-l.graceC:
			l.graceExpired()
		}
	}
	return l.answer, l.err
}

// loop is the state of one conversation, driven by one goroutine (Run or RunOnce).
type loop struct {
	c       *Channel
	ctx     context.Context
	sink    channels.Sink
	oneShot bool

	lines  <-chan line   // nil when no input is read
	stopCh chan struct{} // RunOnce: stops a lazily started reader
	eof    bool

	inflight  string // id of the event whose turn we wait for; "" when idle
	turnSeen  bool   // a turn event arrived since inflight was set
	turnTimer *time.Timer

	turn       string // the current turn id
	answered   string // answer text of the current turn (printed or collected)
	segment    string // answer text since the last tool call
	atLineEnd  bool   // Out ends with a newline (or is untouched)
	finalDone  bool   // the final text of the current turn was printed
	shown      bool   // some answer text of the current turn was shown
	lastFinal  string // the final text of the last finished turn
	failedTurn string // the turn that reported an error; its done is skipped
	reply      string // the OutReply text sent for the current turn

	approval      *echogate.TurnEvent // the approval request of the paused turn
	approvalShown bool
	prompt        echogate.MessageRef // its prompt message
	question      string              // the ask_user question of the paused turn
	awaiting      bool                // the next line is an approval decision
	answering     bool                // RunOnce on a terminal: the next line answers the question
	pendingEmoji  string              // a decision waiting for its prompt message
	denyReason    string              // why a deny was sent when nobody could be asked (noTerminalReason)
	turnNotices   []string            // notices of the running turn, printed when it ends
	command       bool                // the message waited for is a /command: its answer is the gateway's Markdown
	graceTimer    *time.Timer
	graceC        <-chan time.Time
	decisions     int

	queued []string // lines typed while a turn runs

	// asked: a tool call of the running turn put a question (a TurnAsk without a call id, see
	// question.go); lines typed now answer it at once. answers are those lines' event ids.
	asked   bool
	answers map[string]bool

	ended  bool // RunOnce: done
	answer string
	err    error
}

func newLoop(c *Channel, ctx context.Context, sink channels.Sink, oneShot bool) *loop {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &loop{c: c, ctx: ctx, sink: sink, oneShot: oneShot, turnTimer: t, atLineEnd: true}
}

func (l *loop) idle() bool {
	return l.inflight == "" && l.pendingEmoji == "" && !l.awaiting && len(l.queued) == 0
}

func (l *loop) out(s string) {
	if s == "" {
		return
	}
	if strings.TrimSpace(s) != "" {
		l.shown = true
	}
	_, _ = io.WriteString(l.c.cfg.Out, s)
	l.atLineEnd = strings.HasSuffix(s, "\n")
}

func (l *loop) endLine() {
	if !l.atLineEnd {
		l.out("\n")
	}
}

func (l *loop) showPrompt() {
	if l.c.cfg.IsTTY && !l.oneShot && l.idle() {
		fmt.Fprint(l.c.cfg.Err, "> ")
	}
}

// submit hands ev to the sink; track makes it the event whose turn we wait for.
func (l *loop) submit(ev echogate.InboundEvent, track bool) error {
	if err := l.sink(l.ctx, ev); err != nil {
		err = fmt.Errorf("console: submit %s: %w", ev.ID, err)
		if d, ok := echogate.RetryAfter(err); ok {
			l.c.info("the gateway is busy: try again in %s", d.Round(time.Second))
		} else if !l.oneShot {
			l.c.info("not delivered: %v", err)
		}
		return err
	}
	if track {
		l.inflight = ev.ID
		l.turnSeen = false
		l.command = ev.Kind == echogate.KindDirect && strings.HasPrefix(strings.TrimSpace(ev.Text), "/")
		if !l.oneShot {
			l.turnTimer.Reset(l.c.cfg.Timeout)
		}
	}
	return nil
}

func (l *loop) finishWait() {
	l.inflight = ""
	l.turnTimer.Stop()
}

// finish ends RunOnce.
func (l *loop) finish(answer string, err error) {
	l.ended, l.answer, l.err = true, answer, err
}

func (l *loop) partial() string {
	if l.answered != "" {
		return l.answered
	}
	return l.reply
}

// stopTurn asks the pipeline to stop the running turn (RunOnce giving up).
func (l *loop) stopTurn() {
	if l.inflight == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), time.Second)
	defer cancel()
	if err := l.sink(ctx, l.c.event(echogate.KindDirect, "stop")); err != nil {
		l.c.log.Warn("could not stop the turn", "session", string(l.c.key), "err", err)
	}
}

func (l *loop) turnTimedOut() {
	if l.inflight == "" {
		return
	}
	l.endLine()
	l.c.info("no answer within %s: stopping the turn", l.c.cfg.Timeout)
	l.stopTurn()
	l.finishWait()
	l.next()
}

// onLine handles one line (or the end) of input.
func (l *loop) onLine(ln line) {
	if ln.err != nil {
		l.lines = nil
		l.eof = true
		if ln.err != io.EOF {
			l.c.info("reading input: %v", ln.err)
		}
		switch {
		case l.awaiting:
			l.awaiting = false
			fmt.Fprintln(l.c.cfg.Err)
			l.submitDecision(echogate.ReactionDeny)
		case l.answering:
			l.answering = false
			l.finish(l.question, fmt.Errorf("%w: no answer was typed", ErrNeedsTerminal))
		}
		return
	}
	text := ln.text
	switch {
	case l.awaiting:
		l.awaiting = false
		l.submitDecision(parseDecision(text))
		return
	case l.answering:
		l.answering = false
		if strings.TrimSpace(text) == "" {
			l.finish(l.question, fmt.Errorf("%w: the answer was empty", ErrNeedsTerminal))
			return
		}
		l.message(text)
		return
	}
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		l.showPrompt()
	case l.asked && l.inflight != "" && !strings.EqualFold(t, "stop"):
		l.answerQuestion(text)
	case strings.EqualFold(t, "stop"):
		if err := l.submit(l.c.event(echogate.KindDirect, "stop"), false); err == nil && l.inflight != "" {
			l.c.info("stopping…")
		}
	case !l.idle():
		if len(l.queued) >= maxPendingLines {
			l.c.info("too many lines waiting: %q dropped", preview(text, 40))
			return
		}
		l.queued = append(l.queued, text)
	default:
		l.message(text)
	}
}

func parseDecision(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "y", "yes":
		return echogate.ReactionApprove
	case "s", "session":
		return echogate.ReactionApproveSession
	}
	return echogate.ReactionDeny
}

// message sends text as the user's next message.
func (l *loop) message(text string) {
	if err := l.submit(l.c.event(echogate.KindDirect, text), true); err != nil && l.oneShot {
		l.finish(l.partial(), err)
	}
}

// next sends the next line typed during the last turn, or shows the prompt.
func (l *loop) next() {
	if l.oneShot || l.inflight != "" || l.pendingEmoji != "" || l.awaiting {
		return
	}
	for len(l.queued) > 0 {
		text := l.queued[0]
		l.queued = l.queued[1:]
		l.message(text)
		if l.inflight != "" {
			return
		}
	}
	l.showPrompt()
}
