package channeltest

import (
	"context"
	"fmt"
	"slices"

	"github.com/echogate/echogate"
)

// Calls returns a copy of every recorded call, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// CallsOf returns the recorded calls of op, in order.
func (f *Fake) CallsOf(op string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Sent returns the Outbound of every successful Send, in order.
func (f *Fake) Sent() []echogate.Outbound {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []echogate.Outbound
	for _, c := range f.calls {
		if c.Op == OpSend && !c.Ref.IsZero() {
			out = append(out, c.Out)
		}
	}
	return out
}

// Messages returns the messages the fake shows, oldest first.
func (f *Fake) Messages() []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Message, len(f.msgs))
	for i, m := range f.msgs {
		out[i] = *m
		out[i].Reactions = slices.Clone(m.Reactions)
	}
	return out
}

// Texts returns the text of every message the fake shows in channel, oldest first.
func (f *Fake) Texts(channel string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.msgs {
		if m.Ref.Channel == channel {
			out = append(out, m.Text)
		}
	}
	return out
}

// TurnEvents returns every observed turn event, in order.
func (f *Fake) TurnEvents() []echogate.TurnEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.turns)
}

// Typing reports how many typing indicators are active.
func (f *Fake) Typing() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.typing
}

// WaitFor blocks until cond reports true or ctx ends. cond is evaluated at once and after every
// change to the fake (a call, an event, Run starting or ending); it may call the fake's
// accessors. It returns ctx's error, wrapped, when ctx ends first.
func (f *Fake) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("channeltest: waiting for a condition: %w", ctx.Err())
		}
	}
}
