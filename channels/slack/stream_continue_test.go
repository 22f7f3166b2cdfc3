package slack

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// TestWireStreamContinuesInterruptedMessage: a stream reports its message as soon as Slack
// created it (OnPost), and a later stream that continues that message (the answer of the turn
// that replaced a killed one) turns it into the full answer: one message, whether the dead
// stream was native (left open) or edited; when Slack refuses the edit, the partial message is
// deleted and the answer posted once.
func TestWireStreamContinuesInterruptedMessage(t *testing.T) {
	for name, tt := range map[string]struct {
		native, refuse bool
	}{
		"native stream left open":    {native: true},
		"edited stream":              {native: false},
		"platform refuses the edit":  {native: false, refuse: true},
		"native, refuses the update": {native: true, refuse: true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = !tt.native })
			conv := echogate.ConversationRef{Platform: "slack", Channel: "D1", Thread: "1700000000.000900"}
			out := echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Session: "slack:D1", Turn: "t_dead"}

			// The dead turn: its stream posts the first text, then the process "dies" (its
			// context ends; nothing finishes the stream).
			dctx, die := context.WithCancel(context.Background())
			dead, err := e.ch.StartStream(dctx, out)
			if err != nil {
				t.Fatalf("StartStream = %v", err)
			}
			posted := make(chan echogate.MessageRef, 1)
			dead.(echogate.PostNotifier).OnPost(func(ref echogate.MessageRef) { posted <- ref })
			if err := dead.Append(dctx, "The answer is"); err != nil {
				t.Fatal(err)
			}
			var ref echogate.MessageRef
			select {
			case ref = <-posted:
			case <-time.After(10 * time.Second):
				t.Fatal("OnPost was not called after the stream's message was created")
			}
			partial := e.threadReplies("D1", conv.Thread)
			if len(partial) != 1 || partial[0].TS != ref.ID || ref.Channel != "D1" || partial[0].Streaming != tt.native {
				t.Fatalf("after the first append: messages %+v, OnPost ref %+v; want one (streaming natively: %v) with that ts", partial, ref, tt.native)
			}
			die()

			if tt.refuse {
				// Every update: the streamed ones and the final one.
				refused := slacktest.Failure{Error: "cant_update_message"}
				e.srv.Fail("chat.update", refused, refused, refused)
			}
			ctx := context.Background()
			next := out
			next.Turn, next.Continues = "t_new", ref
			st, err := e.ch.StartStream(ctx, next)
			if err != nil {
				t.Fatalf("StartStream(Continues) = %v", err)
			}
			if err := st.Append(ctx, "The answer is 42"); err != nil {
				t.Fatal(err)
			}
			const full = "The answer is 42, in full."
			refs, err := st.Finish(ctx, full)
			if err != nil {
				t.Fatalf("Finish = %v, want nil", err)
			}
			msgs := e.threadReplies("D1", conv.Thread)
			if len(msgs) != 1 || msgs[0].Text != full || msgs[0].Streaming {
				t.Fatalf("messages after the continued answer = %+v, want exactly one, %q, not streaming", msgs, full)
			}
			if sameTS := msgs[0].TS == ref.ID; sameTS == tt.refuse {
				t.Errorf("answer in ts %s, partial was %s: want the same message unless Slack refused the edit (%v)", msgs[0].TS, ref.ID, tt.refuse)
			}
			if len(refs) != 1 || refs[0].ID != msgs[0].TS {
				t.Errorf("Finish refs = %+v, want the answer's message %s", refs, msgs[0].TS)
			}
			if got, text, found, err := e.ch.FindReply(ctx, conv, "t_new", echogate.OutReply); err != nil || !found || got.ID != msgs[0].TS || text != full {
				t.Errorf("FindReply(t_new) = %+v %q %v %v, want the continued message with its turn in metadata", got, text, found, err)
			}
		})
	}
}
