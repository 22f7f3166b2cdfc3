package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

// OpenDM creates the bot's DM with a user through discordgo against the fake (POST
// /users/@me/channels), asks once per user (a 429 is waited out), and a message sent to the
// conversation it returns lands in the DM.
func TestOpenDMOpensOnceAndDelivers(t *testing.T) {
	srv := discordtest.NewServer(discordtest.Options{})
	defer srv.Close()
	ch, err := New(fastConfig(srv), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv.RateLimitNext("POST", "/users/@me/channels", 10*time.Millisecond, false)
	want := srv.DMChannel(ann.ID)
	for range 3 {
		conv, err := ch.OpenDM(ctx, ann.ID)
		if err != nil || conv.Channel != want || !conv.DM || conv.Platform != echogate.PlatformDiscord {
			t.Fatalf("OpenDM(%s) = %+v, %v; want the DM %s", ann.ID, conv, err, want)
		}
	}
	if n := len(srv.CallsTo("POST", "/users/@me/channels")); n != 2 {
		t.Errorf("create DM calls = %d, want 2 (one 429, then one answer remembered)", n)
	}
	conv, _ := ch.OpenDM(ctx, ann.ID)
	if _, err := ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Text: "your digest"}); err != nil {
		t.Fatal(err)
	}
	if msgs := srv.BotMessages(want); len(msgs) != 1 || msgs[0].Content != "your digest" {
		t.Errorf("DM messages = %+v, want the digest", msgs)
	}
}

// An error of create DM names the user and says what to do; a user id that is not one is
// refused without a request.
func TestOpenDMErrorsSayWhatToDo(t *testing.T) {
	srv := discordtest.NewServer(discordtest.Options{})
	defer srv.Close()
	ch, err := New(fastConfig(srv), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string][]string{
		"ann":                        {`"ann"`, "numeric id"},
		srv.Bot().ID:                 {srv.Bot().ID, "50007", "refuses"},
		"30000000000000000000000000": {"30000000000000000000000000", "numeric id"}, // past uint64
	} {
		conv, err := ch.OpenDM(context.Background(), user)
		if err == nil {
			t.Errorf("OpenDM(%s) = %+v, nil; want an error", user, conv)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("OpenDM(%s) = %v, want it to name %q", user, err, w)
			}
		}
	}
	if n := len(srv.CallsTo("POST", "/users/@me/channels")); n != 1 {
		t.Errorf("create DM calls = %d, want 1 (only the bot's id is asked)", n)
	}
}
