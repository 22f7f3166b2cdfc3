package slack

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// A panic on a send, stream or edit path (here: the API client torn away under the channel) is
// an error for that call and an OnPanic report, never the end of the process.
func TestPanicsBecomeErrors(t *testing.T) {
	var panics atomic.Int32
	ch, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", OnPanic: func(string) { panics.Add(1) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.api = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conv := echogate.ConversationRef{Platform: echogate.PlatformSlack, Channel: "C1", Thread: "1.0"}
	ref := echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C1", ID: "1.0"}
	for name, call := range map[string]func() error{
		"send": func() error {
			_, err := ch.Send(ctx, echogate.Outbound{Conversation: conv, Text: "hi"})
			return err
		},
		"edit":  func() error { return ch.Edit(ctx, ref, "x") },
		"react": func() error { return ch.React(ctx, ref, echogate.ReactionApprove) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "recovered panic") {
			t.Errorf("%s with a broken client = %v, want an error naming the recovered panic", name, err)
		}
	}
	if got := panics.Load(); got != 3 {
		t.Errorf("OnPanic reports = %d, want 3", got)
	}
}
