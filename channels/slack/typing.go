package slack

import (
	"context"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/echogate/echogate"
)

const typingStatus = "is thinking…"

// StartTyping shows that a turn is running in conv: the assistant thread status ("is
// thinking…", refreshed every TypingRefresh so long tool runs keep it) where the workspace
// supports it, else a 👀 reaction on the message being answered (on). stop removes the
// indicator; it is idempotent, blocks until the removal was attempted (bounded by the request
// timeout) and also runs when ctx ends. Indicator calls use the low end of the channel's budget;
// removal uses the high end, so a turn never ends with a stale indicator.
func (c *Channel) StartTyping(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) (stop func()) {
	_, stop = c.startTyping(ctx, conv, on, false)
	return stop
}

// startTyping starts the indicator; t is nil when there is nowhere to show it. With session,
// a thread of the agent experience (a threaded DM) is also marked as processing for the turn
// (agents.sessions.setStatus), which shows Slack's native stop button.
func (c *Channel) startTyping(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef, session bool) (t *typing, stop func()) {
	ch := conv.Channel
	if ch == "" {
		ch = on.Channel
	}
	if ch == "" {
		return nil, func() {}
	}
	thread := conv.Thread
	if thread == "" && !conv.DM && !isDMChannel(ch) && c.cfg.replyInThread() {
		thread = on.ID
	}
	t = &typing{c: c, ch: ch, thread: thread, on: on, text: typingStatus, session: session && thread != "",
		stopc: make(chan struct{}), done: make(chan struct{}), poke: make(chan struct{}, 1)}
	go t.run(ctx)
	var once sync.Once
	return t, func() {
		once.Do(func() { close(t.stopc) })
		<-t.done
	}
}

// StartActivity shows what a turn in conv is doing: the assistant thread status names the
// running tools ("is running http_fetch…") and follows every change at the channel's low
// budget; without thread status, the 👀 reaction. End clears it like StartTyping's stop.
func (c *Channel) StartActivity(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) echogate.ActivityView {
	v := &activityView{c: c}
	v.t, v.end = c.startTyping(ctx, conv, on, conv.DM)
	if v.t != nil && v.t.thread != "" {
		v.key, v.act = msgKey(v.t.ch, v.t.thread), &threadActivity{}
		c.acts.Store(v.key, v.act)
	}
	return v
}

type activityView struct {
	c   *Channel
	t   *typing // nil when nothing is shown (no channel)
	end func()
	key string          // "C:thread" of act
	act *threadActivity // the task cards of a reply streamed in the thread; nil outside threads
}

func (v *activityView) Show(a echogate.Activity) {
	if v.act != nil {
		if changed, s := v.act.update(a); changed && s != nil {
			s.poke()
		}
	}
	if v.t == nil || a.Status == "" {
		return
	}
	v.t.mu.Lock()
	changed := v.t.text != a.Status
	v.t.text = a.Status
	v.t.mu.Unlock()
	if changed {
		select {
		case v.t.poke <- struct{}{}:
		default:
		}
	}
}

func (v *activityView) End() {
	if v.act != nil {
		v.c.acts.CompareAndDelete(v.key, v.act)
	}
	v.end()
}

type typing struct {
	c       *Channel
	ch      string
	thread  string
	on      echogate.MessageRef
	stopc   chan struct{}
	done    chan struct{}
	poke    chan struct{} // the status text changed
	session bool          // mark the agent session processing while the turn runs

	mu   sync.Mutex
	text string // the status to show

	status  bool // assistant status shown
	reacted bool // 👀 added
}

func (t *typing) run(ctx context.Context) {
	defer close(t.done)
	defer t.c.recovered(nil, "typing")
	defer t.clear(ctx)
	if t.session {
		t.session = t.c.agentSession(ctx, t.ch, t.thread, slack.AgentSessionStatusProcessing, prioLow)
	}
	retry := t.c.cfg.StreamUpdateInterval
	next := t.show(ctx)
	for {
		wait := t.c.cfg.TypingRefresh
		if !next {
			wait = retry // indicator not shown yet (budget): try again soon
		} else if !t.status {
			wait = 24 * time.Hour // a reaction needs no refresh
		}
		select {
		case <-ctx.Done():
			return
		case <-t.stopc:
			return
		case <-t.c.cfg.Clock.After(wait):
			next = t.show(ctx)
		case <-t.poke:
			if t.status || t.thread != "" && !t.c.statusOff.Load() {
				next = t.show(ctx)
			}
		}
	}
}

// show sets or refreshes the indicator; false means it could not be shown yet.
func (t *typing) show(ctx context.Context) bool {
	c := t.c
	if t.thread != "" && !c.statusOff.Load() {
		t.mu.Lock()
		text := t.text
		t.mu.Unlock()
		err := c.call(ctx, "assistant.threads.setStatus", t.ch, prioLow, func(rctx context.Context) error {
			// Once sent, a status update is not cut off by the turn's end: Slack may still apply
			// a request the client gave up on, after the clear that follows it, and the thread
			// would be left showing the status. It stays bounded by RequestTimeout.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(rctx), c.cfg.RequestTimeout)
			defer cancel()
			return c.api.SetAssistantThreadsStatusContext(sctx, slack.AssistantThreadsSetStatusParameters{ChannelID: t.ch, ThreadTS: t.thread, Status: safeText(text)})
		})
		if err == nil {
			t.status = true
			return true
		}
		if _, api := apiCode(err); !api {
			return false
		}
		if !c.statusOff.Swap(true) {
			c.log.Info("slack assistant thread status unavailable; showing progress with a reaction", "error", err)
		}
	}
	if t.reacted || t.on.ID == "" {
		return true
	}
	if err := c.reaction(ctx, t.on, echogate.ReactionWorking, true, prioLow); err != nil {
		_, api := apiCode(err)
		return api // a permanent refusal will not get better by retrying
	}
	t.reacted = true
	return true
}

func (t *typing) clear(ctx context.Context) {
	c := t.c
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RequestTimeout)
	defer cancel()
	if t.session {
		c.agentSession(cctx, t.ch, t.thread, slack.AgentSessionStatusActive, prioHigh)
	}
	if t.status {
		err := c.call(cctx, "assistant.threads.setStatus", t.ch, prioHigh, func(ctx context.Context) error {
			return c.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: t.ch, ThreadTS: t.thread, Status: ""})
		})
		if err != nil {
			c.log.Warn("slack thread status not cleared", "slack_channel", t.ch, "error", err)
		}
	}
	if t.reacted {
		if err := c.reaction(cctx, t.on, echogate.ReactionWorking, false, prioHigh); err != nil {
			c.log.Warn("slack progress reaction not removed", "slack_channel", t.ch, "error", err)
		}
	}
}

// agentSession sets the agent session status of a thread and reports whether it was set.
// Workspaces (or apps) without agent sessions refuse it: then it is not tried again.
func (c *Channel) agentSession(ctx context.Context, ch, thread, status string, prio priority) bool {
	if c.agentOff.Load() {
		return false
	}
	err := c.call(ctx, "agents.sessions.setStatus", ch, prio, func(ctx context.Context) error {
		_, err := c.api.SetAgentSessionStatusContext(ctx, slack.AgentSessionSetStatusParameters{Status: status, ChannelID: ch, ThreadTS: thread})
		return err
	})
	if err == nil {
		return true
	}
	if _, api := apiCode(err); api && !c.agentOff.Swap(true) {
		c.log.Info("slack agent sessions unavailable; the native stop button is not shown (stop, 🛑 and /echogate stop work)", "error", err)
	}
	return false
}
