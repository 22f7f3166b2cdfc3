package slack

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// heldSink runs ch against a sink that reports each event on entered and returns only what
// the test sends on release, so a test decides when (and whether) the pipeline took an event.
type heldSink struct {
	srv     *slacktest.Server
	ctx     context.Context
	entered chan echogate.InboundEvent
	release chan error
}

// runHeld starts ch with a held sink and waits for its Socket Mode connection; the channel
// stops when the test ends.
func runHeld(t *testing.T, ch *Channel, srv *slacktest.Server) *heldSink {
	t.Helper()
	h := &heldSink{srv: srv, entered: make(chan echogate.InboundEvent, 4), release: make(chan error)}
	sink := func(ctx context.Context, ev echogate.InboundEvent) error {
		h.entered <- ev
		select {
		case err := <-h.release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	t.Cleanup(func() { cancel(); <-done })
	h.wait(t, "a connection", func() bool { return srv.OpenConnections() > 0 })
	return h
}

// wait waits up to 10s for cond to hold on the fake Slack.
func (h *heldSink) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := h.srv.WaitFor(wctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
