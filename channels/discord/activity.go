package discord

import (
	"context"
	"strings"
	"sync"

	"github.com/echogate/echogate"
)

// activityState is what a running turn in one Discord channel is doing: the typing indicator
// plus a status line ("-# ⏳ running http_fetch…") under the reply being streamed there. The
// final answer never carries the line.
type activityState struct {
	mu     sync.Mutex
	status string
	stream *stream // the reply streamed in the channel, once there is one
}

// line is the status line to show under streamed text, or "".
func (a *activityState) line() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status == "" {
		return ""
	}
	return "-# ⏳ " + strings.TrimPrefix(a.status, "is ")
}

func (a *activityState) attach(s *stream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stream = s
}

// StartActivity shows that a turn runs in conv: the typing indicator, refreshed, and the
// turn's current activity as a status line under its streamed reply. End stops both; the
// reply's final edit shows the answer alone.
func (c *Channel) StartActivity(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) echogate.ActivityView {
	st := &activityState{}
	if conv.Channel != "" {
		c.activity.Store(conv.Channel, st)
	}
	return &activityView{c: c, ch: conv.Channel, st: st, stopTyping: c.StartTyping(ctx, conv, on)}
}

type activityView struct {
	c          *Channel
	ch         string
	st         *activityState
	stopTyping func()
	once       sync.Once
}

func (v *activityView) Show(a echogate.Activity) {
	v.st.mu.Lock()
	changed := v.st.status != a.Status
	v.st.status = a.Status
	s := v.st.stream
	v.st.mu.Unlock()
	if changed && s != nil {
		s.touch()
	}
}

func (v *activityView) End() {
	v.once.Do(func() {
		v.st.mu.Lock()
		v.st.status = ""
		v.st.mu.Unlock()
		v.c.activity.CompareAndDelete(v.ch, v.st)
		v.stopTyping()
	})
}

// activityOf returns the activity of a turn running in channel, or nil.
func (c *Channel) activityOf(channel string) *activityState {
	if v, ok := c.activity.Load(channel); ok {
		return v.(*activityState)
	}
	return nil
}
