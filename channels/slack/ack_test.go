package slack

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/echogate/echogate/channels/slack/slacktest"
)

// A Socket Mode envelope is acknowledged only once the sink (the pipeline, which records the
// event durably) took it: a crash before that leaves it for Slack to redeliver. A refused
// event stays unacknowledged; a redelivery that arrives meanwhile is acknowledged with it.
func TestSocketAckAfterTheSinkTookTheEvent(t *testing.T) {
	srv := slacktest.New(slacktest.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	ch, err := New(Config{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h := runHeld(t, ch, srv)
	entered, release := h.entered, h.release
	wait := func(what string, cond func() bool) { t.Helper(); h.wait(t, what, cond) }

	push := func(ts, text string, d slacktest.Delivery) string {
		t.Helper()
		env, err := srv.Push(slacktest.DM("D1", "U1", ts, text), d)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	first := push("1700000000.000001", "taken", slacktest.Delivery{EventID: "EvT"})
	if got := (<-entered).Text; got != "taken" {
		t.Fatalf("sink got %q", got)
	}
	retry := push("1700000000.000001", "taken", slacktest.Delivery{EventID: "EvT", RetryAttempt: 1})
	if srv.Acks(first) != 0 || srv.Acks(retry) != 0 {
		t.Fatalf("acks while the sink holds the event = %d, %d; want 0, 0", srv.Acks(first), srv.Acks(retry))
	}
	release <- nil
	wait("the acks of the taken event and its redelivery", func() bool { return srv.Acks(first) == 1 && srv.Acks(retry) == 1 })

	refused := push("1700000000.000002", "refused", slacktest.Delivery{EventID: "EvR"})
	<-entered
	release <- errors.New("mailbox full")
	sentinel := push("1700000000.000003", "sentinel", slacktest.Delivery{EventID: "EvS"})
	<-entered // the refused event was handled before it (one channel, in order)
	release <- nil
	wait("the sentinel's ack", func() bool { return srv.Acks(sentinel) == 1 })
	if n := srv.Acks(refused); n != 0 {
		t.Errorf("acks of the refused event = %d, want 0 (Slack redelivers it)", n)
	}
}
