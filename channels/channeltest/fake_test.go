package channeltest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels"
)

func TestFakeConformance(t *testing.T) {
	RunConformance(t, Harness{
		Open: func(t *testing.T) channels.Channel { return NewFake("fake") },
		DirectMessage: func(t *testing.T, ch channels.Channel, user, text string) Delivery {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ev, err := ch.(*Fake).DirectMessage(ctx, "D1", user, text)
			if err != nil {
				t.Fatal(err)
			}
			return Delivery{Handle: ev, Conversation: ev.Conversation}
		},
		Redeliver: func(t *testing.T, ch channels.Channel, d Delivery) {
			if err := ch.(*Fake).Inject(context.Background(), d.Handle.(echogate.InboundEvent)); err != nil {
				t.Fatal(err)
			}
		},
		Posted: func(t *testing.T, ch channels.Channel, conv echogate.ConversationRef) []string {
			return ch.(*Fake).Texts(conv.Channel)
		},
	})
}

func runFake(t *testing.T) (*Fake, chan echogate.InboundEvent) {
	t.Helper()
	f := NewFake("")
	got := make(chan echogate.InboundEvent, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- f.Run(ctx, func(_ context.Context, ev echogate.InboundEvent) error { got <- ev; return nil })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
	return f, got
}

func TestFakeRecordsEverything(t *testing.T) {
	f, got := runFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	ev, err := f.DirectMessage(ctx, "D1", "u1", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if in := <-got; in.ID != ev.ID || in.Conversation.Platform != "fake" || in.ReceivedAt.IsZero() {
		t.Errorf("injected = %+v, want %+v with platform and time", in, ev)
	}
	if ok, detail := f.Ready(); !ok || detail != "connected" {
		t.Errorf("Ready = %v %q, want true connected", ok, detail)
	}

	conv := ev.Conversation
	prompt, err := f.Send(ctx, echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: conv, Text: "ok?", Reactions: []string{"✅", "❌"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Reaction(ctx, conv, "u1", prompt, echogate.ReactionApprove); err != nil {
		t.Fatal(err)
	}
	if in := <-got; in.Kind != echogate.KindReaction || in.Target != prompt || in.Reaction != "✅" {
		t.Errorf("reaction = %+v", in)
	}
	if err := f.Unreact(ctx, prompt, "❌"); err != nil {
		t.Fatal(err)
	}
	if err := f.React(ctx, prompt, echogate.ReactionWorking); err != nil {
		t.Fatal(err)
	}
	s, err := f.StartStream(ctx, echogate.Outbound{Conversation: conv})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Append(ctx, "a")
	_ = s.Append(ctx, "b")
	refs, err := s.Finish(ctx, "ab!")
	if err != nil || len(refs) != 1 {
		t.Fatalf("Finish = %v, %v", refs, err)
	}
	if _, err := s.Finish(ctx, "again"); !errors.Is(err, ErrStreamFinished) {
		t.Errorf("second Finish = %v, want ErrStreamFinished", err)
	}
	if err := f.Edit(ctx, refs[0], "edited"); err != nil {
		t.Fatal(err)
	}
	if err := f.Edit(ctx, echogate.MessageRef{ID: "nope"}, "x"); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("Edit(unknown) = %v, want ErrUnknownMessage", err)
	}
	stop := f.StartTyping(ctx, conv, ev.Message)
	if f.Typing() != 1 {
		t.Errorf("Typing = %d, want 1", f.Typing())
	}
	stop()
	stop()
	if f.Typing() != 0 {
		t.Errorf("Typing after stop = %d, want 0", f.Typing())
	}
	f.ObserveTurn(echogate.TurnEvent{Type: echogate.TurnDone})

	msgs := f.Messages()
	if len(msgs) != 2 || !slices.Equal(msgs[0].Reactions, []string{"✅", "👀"}) || msgs[1].Text != "edited" || !msgs[1].Final {
		t.Errorf("messages = %+v", msgs)
	}
	var ops []string
	for _, c := range f.Calls() {
		ops = append(ops, c.Op)
	}
	want := []string{OpSend, OpUnreact, OpReact, OpStreamStart, OpStreamAppend, OpStreamAppend, OpStreamFinish, OpEdit, OpEdit, OpTypingStart, OpTypingStop}
	if !slices.Equal(ops, want) {
		t.Errorf("ops = %q, want %q", ops, want)
	}
	if n := len(f.TurnEvents()); n != 1 {
		t.Errorf("TurnEvents = %d, want 1", n)
	}
}

func TestFakeInjectedFailures(t *testing.T) {
	f, _ := runFake(t)
	ctx := context.Background()
	boom := errors.New("boom")
	f.FailNext(OpSend, boom)
	if _, err := f.Send(ctx, echogate.Outbound{Text: "x"}); !errors.Is(err, boom) {
		t.Errorf("Send after FailNext = %v, want boom", err)
	}
	if _, err := f.Send(ctx, echogate.Outbound{Text: "y"}); err != nil {
		t.Errorf("second Send = %v, want nil", err)
	}
	f.SetError(OpStreamStart, boom)
	for range 2 {
		if _, err := f.StartStream(ctx, echogate.Outbound{}); !errors.Is(err, boom) {
			t.Errorf("StartStream with SetError = %v, want boom", err)
		}
	}
	f.SetError(OpStreamStart, nil)
	if _, err := f.StartStream(ctx, echogate.Outbound{}); err != nil {
		t.Errorf("StartStream after clearing = %v, want nil", err)
	}
	if sent := f.Sent(); len(sent) != 1 || sent[0].Text != "y" {
		t.Errorf("Sent = %+v, want only the successful one", sent)
	}
}

func TestFakeWaitFor(t *testing.T) {
	f, _ := runFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { _, _ = f.Send(context.Background(), echogate.Outbound{Text: "later"}) }()
	if err := f.WaitFor(ctx, func() bool { return len(f.Sent()) == 1 }); err != nil {
		t.Fatalf("WaitFor = %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if err := f.WaitFor(short, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor(never) = %v, want DeadlineExceeded", err)
	}
}

func TestFakeInjectAfterRun(t *testing.T) {
	f := NewFake("x")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, func(context.Context, echogate.InboundEvent) error { return nil }) }()
	if err := f.Inject(context.Background(), echogate.InboundEvent{ID: "1"}); err != nil {
		t.Fatalf("Inject = %v", err)
	}
	cancel()
	<-done
	if err := f.Inject(context.Background(), echogate.InboundEvent{ID: "2"}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Inject after Run = %v, want ErrNotRunning", err)
	}
	if ok, _ := f.Ready(); ok {
		t.Errorf("Ready after Run = true, want false")
	}
}
