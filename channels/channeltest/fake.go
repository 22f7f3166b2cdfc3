// Package channeltest holds a fake channel for pipeline tests and RunConformance, the suite every
// real channel adapter passes.
package channeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// Sentinel errors of the fake.
var (
	// ErrNotRunning is returned by Inject after Run returned.
	ErrNotRunning = errors.New("channeltest: fake channel is not running")
	// ErrStreamFinished is returned by a Stream's Append or Finish after Finish.
	ErrStreamFinished = errors.New("channeltest: stream already finished")
	// ErrUnknownMessage is returned by Edit, React and Unreact for a ref the fake never posted.
	ErrUnknownMessage = errors.New("channeltest: unknown message")
)

// Operations recorded in Call.Op and accepted by FailNext and SetError.
const (
	OpSend         = "send"
	OpStreamStart  = "stream_start"
	OpStreamAppend = "stream_append"
	OpStreamFinish = "stream_finish"
	OpEdit         = "edit"
	OpReact        = "react"
	OpUnreact      = "unreact"
	OpTypingStart  = "typing_start"
	OpTypingStop   = "typing_stop"
)

// Call is one recorded call on the Fake.
type Call struct {
	Op           string
	Ref          echogate.MessageRef      // the message concerned (send, stream_*, edit, react, unreact)
	Out          echogate.Outbound        // send and stream_start
	Text         string                   // send: the text; stream_append: the delta; stream_finish: the final text; edit: the new text
	Emoji        string                   // react, unreact
	Conversation echogate.ConversationRef // typing_start, typing_stop
}

// Message is one message the fake shows, as a user of the platform would see it now.
type Message struct {
	Ref       echogate.MessageRef
	Kind      echogate.OutboundKind
	Text      string   // after edits and stream finishes
	Reactions []string // the bot's reactions on it, in the order added
	Edits     int      // edits and stream updates after the first post
	Final     bool     // false while a stream is open on it
}

// Fake is a deterministic in-memory channel. It implements channels.Channel, Streamer, Editor,
// Reactor, Typer, TurnObserver and Health, records every call, and injects events into the sink
// given to Run. It is safe for concurrent use. The zero value is not usable; call NewFake.
type Fake struct {
	platform string

	mu       sync.Mutex
	sink     channels.Sink
	started  chan struct{} // closed when Run starts
	runState int           // 0 new, 1 running, 2 ended
	seq      int
	calls    []Call
	msgs     []*Message
	turns    []echogate.TurnEvent
	typing   int
	failNext map[string][]error
	failAll  map[string]error
	ready    bool
	detail   string
	changed  chan struct{} // closed and replaced on every change
}

var (
	_ channels.Channel      = (*Fake)(nil)
	_ channels.Streamer     = (*Fake)(nil)
	_ channels.Editor       = (*Fake)(nil)
	_ channels.Reactor      = (*Fake)(nil)
	_ channels.Typer        = (*Fake)(nil)
	_ channels.TurnObserver = (*Fake)(nil)
	_ channels.Health       = (*Fake)(nil)
)

// NewFake returns a fake channel for platform ("fake" when empty).
func NewFake(platform string) *Fake {
	if platform == "" {
		platform = "fake"
	}
	return &Fake{
		platform: platform,
		started:  make(chan struct{}),
		failNext: make(map[string][]error),
		failAll:  make(map[string]error),
		ready:    true,
		detail:   "connected",
		changed:  make(chan struct{}),
	}
}

// Name returns the fake's platform.
func (f *Fake) Name() string { return f.platform }

// Run stores sink and blocks until ctx ends; it returns nil. It may be called once.
func (f *Fake) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("channeltest: Run: sink is nil")
	}
	f.mu.Lock()
	if f.runState != 0 {
		f.mu.Unlock()
		return errors.New("channeltest: Run called twice")
	}
	f.sink = sink
	f.runState = 1
	close(f.started)
	f.notifyLocked()
	f.mu.Unlock()

	<-ctx.Done()

	f.mu.Lock()
	f.runState = 2
	f.notifyLocked()
	f.mu.Unlock()
	return nil
}

// Ready reports what SetReady set (true, "connected" by default) while Run runs, false otherwise.
func (f *Fake) Ready() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.runState {
	case 0:
		return false, "not started"
	case 2:
		return false, "stopped"
	}
	return f.ready, f.detail
}

// SetReady sets what Ready reports while Run runs.
func (f *Fake) SetReady(ok bool, detail string) {
	f.mu.Lock()
	f.ready, f.detail = ok, detail
	f.notifyLocked()
	f.mu.Unlock()
}

// Inject hands ev to the sink as the platform would. It waits for Run to start (or ctx to end)
// and returns the sink's error. An empty Conversation.Platform is set to the fake's platform and
// a zero ReceivedAt to the current time; everything else is passed as given.
func (f *Fake) Inject(ctx context.Context, ev echogate.InboundEvent) error {
	select {
	case <-f.started:
	case <-ctx.Done():
		return fmt.Errorf("channeltest: inject %s: %w", ev.ID, ctx.Err())
	}
	f.mu.Lock()
	sink, state := f.sink, f.runState
	f.mu.Unlock()
	if state != 1 {
		return ErrNotRunning
	}
	if ev.Conversation.Platform == "" {
		ev.Conversation.Platform = f.platform
	}
	if ev.ReceivedAt.IsZero() {
		ev.ReceivedAt = time.Now()
	}
	return sink(ctx, ev)
}

// DirectMessage injects a KindDirect message from user in the DM conversation channel and
// returns the event it injected, with a new ID.
func (f *Fake) DirectMessage(ctx context.Context, channel, user, text string) (echogate.InboundEvent, error) {
	f.mu.Lock()
	f.seq++
	id := "in" + strconv.Itoa(f.seq)
	f.mu.Unlock()
	ev := echogate.InboundEvent{
		ID:           id,
		Kind:         echogate.KindDirect,
		Conversation: echogate.ConversationRef{Platform: f.platform, Channel: channel, DM: true},
		Actor:        echogate.Actor{ID: user},
		Text:         text,
		Message:      echogate.MessageRef{Platform: f.platform, Channel: channel, ID: id},
	}
	return ev, f.Inject(ctx, ev)
}

// Reaction injects a KindReaction event: user added emoji to the bot's message target.
func (f *Fake) Reaction(ctx context.Context, conv echogate.ConversationRef, user string, target echogate.MessageRef, emoji string) (echogate.InboundEvent, error) {
	f.mu.Lock()
	f.seq++
	id := "rx" + strconv.Itoa(f.seq)
	f.mu.Unlock()
	ev := echogate.InboundEvent{
		ID:           id,
		Kind:         echogate.KindReaction,
		Conversation: conv,
		Actor:        echogate.Actor{ID: user},
		Reaction:     emoji,
		Target:       target,
		Message:      target,
	}
	return ev, f.Inject(ctx, ev)
}

// FailNext makes the next call of op (Op* constant) fail with err. Calls queue up in order.
func (f *Fake) FailNext(op string, err error) {
	f.mu.Lock()
	f.failNext[op] = append(f.failNext[op], err)
	f.mu.Unlock()
}

// SetError makes every call of op fail with err until SetError(op, nil).
func (f *Fake) SetError(op string, err error) {
	f.mu.Lock()
	if err == nil {
		delete(f.failAll, op)
	} else {
		f.failAll[op] = err
	}
	f.mu.Unlock()
}

// failLocked returns the injected error for op, if any.
func (f *Fake) failLocked(op string) error {
	if q := f.failNext[op]; len(q) > 0 {
		f.failNext[op] = q[1:]
		return q[0]
	}
	return f.failAll[op]
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fake) newRefLocked(conv echogate.ConversationRef) echogate.MessageRef {
	f.seq++
	return echogate.MessageRef{Platform: f.platform, Channel: conv.Channel, ID: "out" + strconv.Itoa(f.seq)}
}

func (f *Fake) messageLocked(ref echogate.MessageRef) *Message {
	for _, m := range f.msgs {
		if m.Ref == ref {
			return m
		}
	}
	return nil
}

// Send records out, shows it with out.Reactions added and returns its new reference.
func (f *Fake) Send(ctx context.Context, out echogate.Outbound) (echogate.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return echogate.MessageRef{}, fmt.Errorf("channeltest: send: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failLocked(OpSend); err != nil {
		f.calls = append(f.calls, Call{Op: OpSend, Out: out, Text: out.Text})
		f.notifyLocked()
		return echogate.MessageRef{}, fmt.Errorf("channeltest: send: %w", err)
	}
	ref := f.newRefLocked(out.Conversation)
	f.calls = append(f.calls, Call{Op: OpSend, Ref: ref, Out: out, Text: out.Text})
	f.msgs = append(f.msgs, &Message{Ref: ref, Kind: out.Kind, Text: out.Text, Reactions: slices.Clone(out.Reactions), Final: true})
	f.notifyLocked()
	return ref, nil
}

// StartStream shows an empty message that the returned stream fills.
func (f *Fake) StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("channeltest: start stream: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failLocked(OpStreamStart); err != nil {
		f.calls = append(f.calls, Call{Op: OpStreamStart, Out: out})
		f.notifyLocked()
		return nil, fmt.Errorf("channeltest: start stream: %w", err)
	}
	ref := f.newRefLocked(out.Conversation)
	f.calls = append(f.calls, Call{Op: OpStreamStart, Ref: ref, Out: out})
	f.msgs = append(f.msgs, &Message{Ref: ref, Kind: out.Kind})
	f.notifyLocked()
	return &fakeStream{f: f, ref: ref}, nil
}

type fakeStream struct {
	f        *Fake
	ref      echogate.MessageRef
	finished bool // guarded by f.mu
}

func (s *fakeStream) Append(ctx context.Context, delta string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("channeltest: stream append: %w", err)
	}
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.finished {
		return ErrStreamFinished
	}
	if err := f.failLocked(OpStreamAppend); err != nil {
		return fmt.Errorf("channeltest: stream append: %w", err)
	}
	f.calls = append(f.calls, Call{Op: OpStreamAppend, Ref: s.ref, Text: delta})
	if m := f.messageLocked(s.ref); m != nil {
		m.Text += delta
		m.Edits++
	}
	f.notifyLocked()
	return nil
}

func (s *fakeStream) Finish(ctx context.Context, final string) ([]echogate.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("channeltest: stream finish: %w", err)
	}
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.finished {
		return nil, ErrStreamFinished
	}
	if err := f.failLocked(OpStreamFinish); err != nil {
		return nil, fmt.Errorf("channeltest: stream finish: %w", err)
	}
	s.finished = true
	f.calls = append(f.calls, Call{Op: OpStreamFinish, Ref: s.ref, Text: final})
	if m := f.messageLocked(s.ref); m != nil {
		m.Text = final
		m.Edits++
		m.Final = true
	}
	f.notifyLocked()
	return []echogate.MessageRef{s.ref}, nil
}

// Edit replaces the text of a posted message.
func (f *Fake) Edit(ctx context.Context, ref echogate.MessageRef, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("channeltest: edit %s: %w", ref.ID, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Op: OpEdit, Ref: ref, Text: text})
	f.notifyLocked()
	if err := f.failLocked(OpEdit); err != nil {
		return fmt.Errorf("channeltest: edit %s: %w", ref.ID, err)
	}
	m := f.messageLocked(ref)
	if m == nil {
		return fmt.Errorf("channeltest: edit %s: %w", ref.ID, ErrUnknownMessage)
	}
	m.Text = text
	m.Edits++
	return nil
}

// React adds the bot's emoji to a posted message (idempotent).
func (f *Fake) React(ctx context.Context, ref echogate.MessageRef, emoji string) error {
	return f.react(ctx, OpReact, ref, emoji)
}

// Unreact removes the bot's emoji from a posted message (idempotent).
func (f *Fake) Unreact(ctx context.Context, ref echogate.MessageRef, emoji string) error {
	return f.react(ctx, OpUnreact, ref, emoji)
}

func (f *Fake) react(ctx context.Context, op string, ref echogate.MessageRef, emoji string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("channeltest: %s %s on %s: %w", op, emoji, ref.ID, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Op: op, Ref: ref, Emoji: emoji})
	f.notifyLocked()
	if err := f.failLocked(op); err != nil {
		return fmt.Errorf("channeltest: %s %s on %s: %w", op, emoji, ref.ID, err)
	}
	m := f.messageLocked(ref)
	if m == nil {
		// Reactions on inbound (user) messages are allowed: the fake does not track those.
		return nil
	}
	i := slices.Index(m.Reactions, emoji)
	switch {
	case op == OpReact && i < 0:
		m.Reactions = append(m.Reactions, emoji)
	case op == OpUnreact && i >= 0:
		m.Reactions = slices.Delete(m.Reactions, i, i+1)
	}
	return nil
}

// StartTyping records the indicator; the returned stop is idempotent.
func (f *Fake) StartTyping(_ context.Context, conv echogate.ConversationRef, on echogate.MessageRef) (stop func()) {
	f.mu.Lock()
	f.typing++
	f.calls = append(f.calls, Call{Op: OpTypingStart, Ref: on, Conversation: conv})
	f.notifyLocked()
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.typing--
			f.calls = append(f.calls, Call{Op: OpTypingStop, Ref: on, Conversation: conv})
			f.notifyLocked()
			f.mu.Unlock()
		})
	}
}

// ObserveTurn records ev. It never blocks.
func (f *Fake) ObserveTurn(ev echogate.TurnEvent) {
	f.mu.Lock()
	f.turns = append(f.turns, ev)
	f.notifyLocked()
	f.mu.Unlock()
}
