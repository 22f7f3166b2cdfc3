package slack

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// Interactive envelopes (a button press, a slash command) are acknowledged once the sink took
// their event, not before: Slack does not redeliver them, so one acknowledged and then lost is
// gone. One the sink refuses stays unacknowledged (Slack tells the user); one that is not the
// gateway's is acknowledged at once.
func TestSocketInteractionAckAfterTheSinkTookIt(t *testing.T) {
	srv := slacktest.New(slacktest.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C7", Thread: "1700000400.000100"}
	ch, err := New(Config{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL(),
		SessionOf: func(context.Context, echogate.MessageRef) (echogate.ConversationRef, bool) { return conv, true }},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h := runHeld(t, ch, srv)
	ctx, entered, release := h.ctx, h.entered, h.release
	wait := func(what string, cond func() bool) { t.Helper(); h.wait(t, what, cond) }
	prompt, err := ch.Send(ctx, echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: conv, Text: "run `x`?"})
	if err != nil {
		t.Fatal(err)
	}

	var refused string
	for _, tc := range []struct {
		name   string
		push   func() (string, error)
		refuse bool
	}{
		{"button taken", func() (string, error) {
			return srv.PushInteractive(slacktest.ButtonPress("U5", "eve", "C7", prompt.ID, "echogate_approve"))
		}, false},
		{"command taken", func() (string, error) {
			return srv.PushSlashCommand(slacktest.SlashCommand("/echogate", "usage", "U1", "C7", srv.ResponseURL("r1"), "trig-1"))
		}, false},
		{"button refused", func() (string, error) {
			return srv.PushInteractive(slacktest.ButtonPress("U6", "fay", "C7", prompt.ID, "echogate_deny"))
		}, true},
	} {
		env, err := tc.push()
		if tc.refuse {
			refused = env
		}
		if err != nil {
			t.Fatal(err)
		}
		<-entered
		if n := srv.Acks(env); n != 0 {
			t.Fatalf("%s: acks while the sink holds the event = %d, want 0", tc.name, n)
		}
		if tc.refuse {
			release <- errors.New("mailbox full")
		} else {
			release <- nil
			wait(tc.name+": the ack", func() bool { return srv.Acks(env) == 1 })
		}
	}
	// In order on the one channel: once a later envelope is acknowledged, the refused one was
	// handled, and it must not have been acknowledged.
	other, err := srv.PushInteractive(slacktest.ButtonPress("U5", "eve", "C7", prompt.ID, "not_ours"))
	if err != nil {
		t.Fatal(err)
	}
	wait("the ack of an interaction that is not the gateway's", func() bool { return srv.Acks(other) == 1 })
	sentinel, err := srv.PushInteractive(slacktest.ButtonPress("U5", "eve", "C7", prompt.ID, "echogate_approve_session"))
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	release <- nil
	wait("the sentinel's ack", func() bool { return srv.Acks(sentinel) == 1 })
	if n := srv.Acks(refused); n != 0 {
		t.Errorf("acks of the refused button press = %d, want 0 (Slack shows the user it failed)", n)
	}
}
