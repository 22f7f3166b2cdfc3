package channeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

// Harness lets RunConformance drive a real adapter: open it, make its platform deliver a direct
// message, deliver it again, and read back what the platform shows.
type Harness struct {
	// Open returns a new, not yet running channel for one subtest. It registers its own cleanup
	// with t (the suite's cleanup, which ends Run, runs before it).
	Open func(t *testing.T) channels.Channel
	// DirectMessage makes the platform deliver a direct message with text from user to ch. It
	// returns after the platform handed the message to the channel (the channel may still be
	// processing it). Required.
	DirectMessage func(t *testing.T, ch channels.Channel, user, text string) Delivery
	// Redeliver makes the platform deliver the same message again (a retry after a lost ack, a
	// reconnect replay, a client retry) and returns after the channel handled it. Optional: nil
	// skips the redelivery check.
	Redeliver func(t *testing.T, ch channels.Channel, d Delivery)
	// Posted returns the text of every message the platform shows in conv, oldest first, as a
	// user of the platform would see them now (after edits). Required.
	Posted func(t *testing.T, ch channels.Channel, conv echogate.ConversationRef) []string
	// Timeout bounds each wait of the suite. Default 10s.
	Timeout time.Duration
}

// Delivery is what the platform delivered, and what the resulting event must carry.
type Delivery struct {
	// Handle is the harness's own value for Redeliver.
	Handle any
	// Conversation is what the event's Conversation must be (Platform, Channel, Thread and DM
	// are compared). Its Platform defaults to the channel's Name.
	Conversation echogate.ConversationRef
	// User is the expected Actor.ID; default: the user passed to DirectMessage.
	User string
}

// RunConformance checks the behaviour every channel adapter shares:
//   - a direct message reaches the sink once, as a KindDirect event with a non-empty ID, the
//     expected Conversation and Actor, the text, a ReceivedAt and never AutoApprove;
//   - a redelivered message reaches the sink again only with the same ID;
//   - Send returns a reference on the platform, in the conversation, distinct per message, and
//     the platform shows the text exactly once; Send with a cancelled ctx fails;
//   - for a channels.Streamer: Finish shows the whole text exactly once, and a second Finish or
//     an Append after Finish fails;
//   - for a channels.Editor: Edit replaces the text.
func RunConformance(t *testing.T, h Harness) {
	t.Helper()
	if h.Open == nil || h.DirectMessage == nil || h.Posted == nil {
		t.Fatal("channeltest: Harness needs Open, DirectMessage and Posted")
	}
	if h.Timeout <= 0 {
		h.Timeout = 10 * time.Second
	}

	t.Run("direct message reaches the sink", func(t *testing.T) { conformDirectMessage(t, h) })
	t.Run("redelivery keeps the event id", func(t *testing.T) { conformRedelivery(t, h) })
	t.Run("send returns a usable reference", func(t *testing.T) { conformSend(t, h) })
	t.Run("stream finish shows the whole text once", func(t *testing.T) { conformStreamFinish(t, h) })
}

// conformDirectMessage checks that a direct message reaches the sink once, as the event the
// harness describes.
func conformDirectMessage(t *testing.T, h Harness) {
	ch, rec := start(t, h)
	text := "conformance: hello"
	d := h.DirectMessage(t, ch, "conf-user-1", text)
	ev := rec.next(t, h.Timeout)
	checkEvent(t, ch, d, "conf-user-1", text, ev)
	rec.none(t)
}

// conformRedelivery checks that a redelivered message keeps its event id and dedupe key.
func conformRedelivery(t *testing.T, h Harness) {
	if h.Redeliver == nil {
		t.Skip("the harness cannot redeliver a message")
	}
	ch, rec := start(t, h)
	d := h.DirectMessage(t, ch, "conf-user-2", "conformance: once")
	first := rec.next(t, h.Timeout)
	h.Redeliver(t, ch, d)
	for _, ev := range rec.drain() {
		if ev.ID != first.ID || ev.DedupeKey() != first.DedupeKey() {
			t.Errorf("redelivered event ID = %q (dedupe key %q), want %q (%q)", ev.ID, ev.DedupeKey(), first.ID, first.DedupeKey())
		}
	}
}

// conformSend checks that Send posts once per call and returns a distinct reference on the
// channel's platform and conversation, fails on a cancelled context, and that Edit (when the
// channel has it) replaces the text.
func conformSend(t *testing.T, h Harness) {
	ch, rec := start(t, h)
	d := h.DirectMessage(t, ch, "conf-user-3", "conformance: reply please")
	ev := rec.next(t, h.Timeout)
	conv := ev.Conversation
	ctx, cancel := context.WithTimeout(context.Background(), h.Timeout)
	defer cancel()
	texts := []string{"conformance reply one", "conformance reply two"}
	var refs []echogate.MessageRef
	for _, text := range texts {
		ref, err := ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, ReplyTo: ev.Message, Text: text, Session: ev.SessionKey()})
		if err != nil {
			t.Fatalf("Send(%q) error = %v, want nil", text, err)
		}
		if ref.IsZero() || ref.Platform != ch.Name() || ref.Channel != conv.Channel {
			t.Errorf("Send(%q) = %+v, want a non-empty ID on platform %q in channel %q", text, ref, ch.Name(), conv.Channel)
		}
		if slices.Contains(refs, ref) {
			t.Errorf("Send(%q) = %+v, the reference of an earlier message", text, ref)
		}
		refs = append(refs, ref)
	}
	posted := h.Posted(t, ch, d.conversation(ch))
	for _, text := range texts {
		if n := count(posted, text); n != 1 {
			t.Errorf("platform shows %q %d times, want once (posted: %q)", text, n, posted)
		}
	}

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := ch.Send(cctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Text: "conformance: cancelled"}); err == nil {
		t.Errorf("Send(cancelled ctx) error = nil, want an error")
	}

	if ed, ok := ch.(channels.Editor); ok {
		if err := ed.Edit(ctx, refs[0], "conformance reply one, edited"); err != nil {
			t.Fatalf("Edit(%+v) error = %v, want nil", refs[0], err)
		}
		posted := h.Posted(t, ch, d.conversation(ch))
		if count(posted, "conformance reply one, edited") != 1 || count(posted, texts[0]) != 0 {
			t.Errorf("after Edit the platform shows %q, want the edited text once and the old text gone", posted)
		}
	}
}

// conformStreamFinish checks that a finished stream shows its final text once with no partial
// left, and that Append and Finish fail after Finish.
func conformStreamFinish(t *testing.T, h Harness) {
	ch, rec := start(t, h)
	st, ok := ch.(channels.Streamer)
	if !ok {
		t.Skip("the channel is not a channels.Streamer")
	}
	d := h.DirectMessage(t, ch, "conf-user-4", "conformance: stream please")
	ev := rec.next(t, h.Timeout)
	ctx, cancel := context.WithTimeout(context.Background(), h.Timeout)
	defer cancel()
	s, err := st.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, ReplyTo: ev.Message, Session: ev.SessionKey()})
	if err != nil {
		t.Fatalf("StartStream error = %v, want nil", err)
	}
	for _, delta := range []string{"Streaming ", "conformance ", "text"} {
		if err := s.Append(ctx, delta); err != nil {
			t.Fatalf("Append(%q) error = %v, want nil", delta, err)
		}
	}
	final := "Streaming conformance text, complete."
	refs, err := s.Finish(ctx, final)
	if err != nil {
		t.Fatalf("Finish error = %v, want nil", err)
	}
	if len(refs) == 0 {
		t.Errorf("Finish refs = none, want the message(s) holding the text")
	}
	posted := h.Posted(t, ch, d.conversation(ch))
	if n := count(posted, final); n != 1 {
		t.Errorf("platform shows the final text %d times, want once (posted: %q)", n, posted)
	}
	for _, p := range posted {
		if p != final && strings.HasPrefix(final, p) && p != "" {
			t.Errorf("platform still shows the partial text %q after Finish", p)
		}
	}
	if _, err := s.Finish(ctx, final); err == nil {
		t.Errorf("second Finish error = nil, want an error")
	}
	if err := s.Append(ctx, "late"); err == nil {
		t.Errorf("Append after Finish error = nil, want an error")
	}
	if posted := h.Posted(t, ch, d.conversation(ch)); count(posted, final) != 1 {
		t.Errorf("after a second Finish the platform shows %q, want the final text once", posted)
	}
}

func (d Delivery) conversation(ch channels.Channel) echogate.ConversationRef {
	c := d.Conversation
	if c.Platform == "" {
		c.Platform = ch.Name()
	}
	return c
}

func checkEvent(t *testing.T, ch channels.Channel, d Delivery, user, text string, ev echogate.InboundEvent) {
	t.Helper()
	want := d.conversation(ch)
	if ev.ID == "" {
		t.Errorf("event ID = %q, want a non-empty id", ev.ID)
	}
	if ev.Kind != echogate.KindDirect {
		t.Errorf("event Kind = %v, want %v", ev.Kind, echogate.KindDirect)
	}
	got := ev.Conversation
	if got.Platform != ch.Name() || got.Platform != want.Platform || got.Channel != want.Channel || got.Thread != want.Thread || got.DM != want.DM {
		t.Errorf("event Conversation = %+v, want %+v on platform %q", got, want, ch.Name())
	}
	if d.User != "" {
		user = d.User
	}
	if ev.Actor.ID != user || ev.Actor.IsSelf || ev.Actor.IsBot {
		t.Errorf("event Actor = %+v, want ID %q, not self, not a bot", ev.Actor, user)
	}
	if strings.TrimSpace(ev.Text) != text {
		t.Errorf("event Text = %q, want %q", ev.Text, text)
	}
	if ev.ReceivedAt.IsZero() {
		t.Errorf("event ReceivedAt is zero, want the time it arrived")
	}
	if ev.AutoApprove {
		t.Errorf("event AutoApprove = true, want false: adapters never set it from platform input")
	}
	if ev.SessionKey() == "" {
		t.Errorf("event SessionKey() is empty")
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, s := range xs {
		if s == x {
			n++
		}
	}
	return n
}

// start opens a channel and runs it until the end of the subtest.
func start(t *testing.T, h Harness) (channels.Channel, *recorder) {
	t.Helper()
	ch := h.Open(t)
	if ch == nil {
		t.Fatal("Harness.Open returned nil")
	}
	rec := &recorder{events: make(chan echogate.InboundEvent, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec.sink) }()
	t.Cleanup(func() {
		cancel()
		timer := time.NewTimer(h.Timeout)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run after cancel = %v, want nil or context.Canceled", err)
			}
		case <-timer.C:
			t.Errorf("Run did not return within %s after its ctx was cancelled", h.Timeout)
		}
	})
	if hl, ok := ch.(channels.Health); ok {
		waitReady(t, hl, done, h.Timeout)
	}
	return ch, rec
}

// waitReady polls Health until it reports ready: a real adapter connects over the network.
func waitReady(t *testing.T, hl channels.Health, done <-chan error, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, _ := hl.Ready(); ok {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned %v before the channel was ready", err)
		case <-deadline.C:
			_, detail := hl.Ready()
			t.Fatalf("channel not ready within %s: %s", timeout, detail)
		case <-tick.C:
		}
	}
}

// recorder is the suite's sink.
type recorder struct {
	events chan echogate.InboundEvent
	mu     sync.Mutex
}

func (r *recorder) sink(ctx context.Context, ev echogate.InboundEvent) error {
	select {
	case r.events <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	default:
		return fmt.Errorf("conformance sink: %w", &echogate.RetryAfterError{After: time.Second, Err: errors.New("mailbox full")})
	}
}

func (r *recorder) next(t *testing.T, timeout time.Duration) echogate.InboundEvent {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev := <-r.events:
		return ev
	case <-timer.C:
		t.Fatalf("no event reached the sink within %s", timeout)
	}
	return echogate.InboundEvent{}
}

// drain returns the events already delivered.
func (r *recorder) drain() []echogate.InboundEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []echogate.InboundEvent
	for {
		select {
		case ev := <-r.events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// none reports events that reached the sink although nothing was delivered.
func (r *recorder) none(t *testing.T) {
	t.Helper()
	for _, ev := range r.drain() {
		t.Errorf("unexpected extra event reached the sink: %+v", ev)
	}
}
