package slack

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// heldClock is the system clock whose timers never fire: a stream's first-update hold lasts
// until Finish.
type heldClock struct{}

func (heldClock) Now() time.Time                       { return time.Now() }
func (heldClock) After(time.Duration) <-chan time.Time { return nil }

// An edited (not natively streamed) reply that is finished within its first-update hold is
// posted once, whole: one chat.postMessage, no partial message and no chat.update.
func TestStreamFinishedWithinHoldPostsOnce(t *testing.T) {
	e := newEnv(t, false, func(c *Config) { c.DisableNativeStreaming = true; c.Clock = heldClock{} })
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: "slack", Channel: "D1", DM: true}
	st, err := e.ch.StartStream(ctx, echogate.Outbound{Conversation: conv})
	if err != nil {
		t.Fatalf("StartStream = %v", err)
	}
	for _, d := range []string{"Hel", "lo, ", "world"} {
		if err := st.Append(ctx, d); err != nil {
			t.Fatalf("Append(%q) = %v", d, err)
		}
	}
	refs, err := st.Finish(ctx, "Hello, world")
	if err != nil || len(refs) != 1 {
		t.Fatalf("Finish = %v, %v; want one message", refs, err)
	}
	if posts, updates := len(e.srv.CallsTo("chat.postMessage")), len(e.srv.CallsTo("chat.update")); posts != 1 || updates != 0 {
		t.Errorf("chat.postMessage / chat.update calls = %d / %d, want 1 / 0", posts, updates)
	}
	if msgs := e.srv.BotMessages("D1"); len(msgs) != 1 || msgs[0].Text != "Hello, world" || msgs[0].TS != refs[0].ID {
		t.Errorf("messages = %+v, want the whole answer once as %s", msgs, refs[0].ID)
	}
}
