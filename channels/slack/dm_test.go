package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// OpenDM opens the bot's DM with a user through conversations.open (the real SDK against the
// fake), asks once per user, and a message sent to the conversation it returns lands in the DM.
func TestOpenDMOpensOnceAndDelivers(t *testing.T) {
	e := newEnv(t, false, nil)
	ctx := context.Background()
	for range 3 {
		conv, err := e.ch.OpenDM(ctx, "U42")
		if err != nil || conv.Channel != slacktest.DMChannel("U42") || !conv.DM || conv.Platform != echogate.PlatformSlack {
			t.Fatalf("OpenDM(U42) = %+v, %v; want the DM %s", conv, err, slacktest.DMChannel("U42"))
		}
	}
	if n := len(e.srv.CallsTo("conversations.open")); n != 1 {
		t.Errorf("conversations.open calls = %d, want 1 (the DM is remembered)", n)
	}
	conv, _ := e.ch.OpenDM(ctx, "U42")
	if _, err := e.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Text: "your digest"}); err != nil {
		t.Fatal(err)
	}
	if msgs := e.srv.BotMessages(slacktest.DMChannel("U42")); len(msgs) != 1 || msgs[0].Text != "your digest" {
		t.Errorf("DM messages = %+v, want the digest", msgs)
	}
}

// An error of conversations.open names the user and says what to do.
func TestOpenDMErrorsSayWhatToDo(t *testing.T) {
	for name, tt := range map[string]struct {
		user    string
		fail    *slacktest.Failure
		want    []string
		retried bool
	}{
		"not a member id":  {user: "B0BOT", want: []string{"dm:B0BOT", "user_not_found", "member id"}},
		"scope missing":    {user: "U1", fail: &slacktest.Failure{Error: "missing_scope"}, want: []string{"missing_scope", "im:write", "reinstall"}},
		"bot user":         {user: "U2", fail: &slacktest.Failure{Error: "cannot_dm_bot"}, want: []string{"cannot_dm_bot", "bot"}},
		"one 500, then ok": {user: "U3", fail: &slacktest.Failure{Status: 500}, retried: true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, false, nil)
			if tt.fail != nil {
				e.srv.Fail("conversations.open", *tt.fail)
			}
			conv, err := e.ch.OpenDM(context.Background(), tt.user)
			if tt.retried {
				if err != nil || conv.Channel != slacktest.DMChannel(tt.user) {
					t.Errorf("OpenDM(%s) = %+v, %v; want the DM after a retry", tt.user, conv, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("OpenDM(%s) = %+v, nil; want an error", tt.user, conv)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("OpenDM(%s) = %v, want it to name %q", tt.user, err, w)
				}
			}
		})
	}
}
