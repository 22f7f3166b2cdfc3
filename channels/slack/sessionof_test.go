package slack

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// A reaction on a message the channel does not remember (a prompt posted before a restart)
// finds its session through Config.SessionOf (the gateway's store) when Slack's API fails.
func TestReactionSessionFromTheStore(t *testing.T) {
	srv := slacktest.New(slacktest.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(srv.Close)
	want := echogate.ConversationRef{Platform: echogate.PlatformSlack, Workspace: srv.TeamID(), Channel: "C1", Thread: "1700000000.000100"}
	asked := make(chan echogate.MessageRef, 1)
	cfg := Config{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL(),
		SessionOf: func(_ context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool) {
			asked <- ref
			return want, ref.ID == "1700000000.000200"
		}}
	ch, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan echogate.InboundEvent, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ch.Run(ctx, func(_ context.Context, ev echogate.InboundEvent) error { got <- ev; return nil })
	}()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := srv.WaitFor(wctx, func() bool { return srv.OpenConnections() > 0 }); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"conversations.replies", "conversations.history"} {
		srv.Fail(m, slacktest.Failure{Status: 500}, slacktest.Failure{Status: 500}, slacktest.Failure{Status: 500})
	}
	if _, err := srv.Push(slacktest.Reaction("U1", "white_check_mark", "C1", "1700000000.000200", srv.BotUserID()), slacktest.Delivery{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if ev.Kind != echogate.KindReaction || ev.Conversation != want || ev.Reaction != echogate.ReactionApprove {
			t.Errorf("event = %+v, want the ✅ in %+v", ev, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reaction was dropped")
	}
	if ref := <-asked; ref.Channel != "C1" || ref.ID != "1700000000.000200" {
		t.Errorf("SessionOf asked for %+v", ref)
	}
	if n := len(srv.CallsTo("conversations.replies")); n != 0 {
		t.Errorf("conversations.replies called %d times, want 0 (the store answered)", n)
	}
}
