package pipeline

import (
	"testing"

	"github.com/echogate/echogate"
)

func TestSessionOfIsSessionKey(t *testing.T) {
	for _, ev := range []echogate.InboundEvent{
		{Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "c1", DM: true}},
		{Conversation: echogate.ConversationRef{Platform: "slack", Channel: "C1", Thread: "1.2"}},
		{Session: "web:named", Conversation: echogate.ConversationRef{Platform: echogate.PlatformWeb, Channel: "c1"}},
	} {
		if got, want := sessionOf(&ev), ev.SessionKey(); got != want {
			t.Errorf("sessionOf(%+v) = %q, want %q", ev, got, want)
		}
	}
}
