package web

import (
	"context"
	"errors"
	"testing"

	"github.com/echogate/echogate"
)

// A chat request that reaches the channel after the HTTP server listens but before Run started
// (serve's first milliseconds) waits for Run instead of failing with ErrNotRunning; one after Run
// returned still fails.
func TestSubmitWaitsForRun(t *testing.T) {
	ch, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	waitingForRun = func() { close(waiting) }
	t.Cleanup(func() { waitingForRun = nil })

	sink := newFakeSink()
	ev := echogate.InboundEvent{ID: "e1",
		Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "s1"}}
	res := make(chan error, 1)
	go func() { res <- ch.submit(context.Background(), ev) }()
	<-waiting

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink.sink) }()
	if err := <-res; err != nil {
		t.Fatalf("submit before Run = %v, want nil once Run starts", err)
	}
	if got := sink.next(t); got.ID != "e1" {
		t.Errorf("sink got %q, want e1", got.ID)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	waitingForRun = nil
	if err := ch.submit(context.Background(), ev); !errors.Is(err, ErrNotRunning) {
		t.Errorf("submit after Run = %v, want ErrNotRunning", err)
	}
}
