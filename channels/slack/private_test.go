package slack

import (
	"context"
	"testing"

	"github.com/echogate/echogate"
)

// An outbound meant for one person (the pipeline's answer to someone who may not act, issue 36)
// is an ephemeral message to them in the conversation's thread, never a post everyone sees.
func TestPrivateToIsEphemeral(t *testing.T) {
	e := newEnv(t, true, nil)
	conv := echogate.ConversationRef{Platform: "slack", Channel: "C7", Thread: "1700000400.000100"}
	if _, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutNotice, Conversation: conv,
		Text: "Only **slack:UA** can stop it.", PrivateTo: "UB"}); err != nil {
		t.Fatal(err)
	}
	eph := e.srv.Ephemerals()
	if len(eph) != 1 || eph[0].User != "UB" || eph[0].Channel != "C7" || eph[0].ThreadTS != conv.Thread || eph[0].Text != "Only *slack:UA* can stop it." {
		t.Errorf("ephemeral messages = %+v, want one to UB in C7's thread, in mrkdwn", eph)
	}
	if n := len(e.srv.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("chat.postMessage calls = %d, want 0: the answer is for UB only", n)
	}
}
