package discord

import (
	"context"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

// TestWireStreamContinuesInterruptedMessage: an edited stream reports its first message as
// soon as Discord created it (OnPost), and a later stream that continues it (the answer of the
// turn that replaced a killed one) edits it into the full answer: one message, found by its
// new turn. When Discord refuses the edit (the partial message was deleted meanwhile), the
// answer is posted once; an empty finish removes the continued message.
func TestWireStreamContinuesInterruptedMessage(t *testing.T) {
	for name, tt := range map[string]struct {
		deleted, empty bool
	}{
		"continued":                 {},
		"partial deleted meanwhile": {deleted: true},
		"nothing to show":           {empty: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := start(t, discordtest.Options{}, nil, nil)
			h.waitReady(t)
			ctx := context.Background()
			conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: h.srv.DMChannel(ann.ID), DM: true}
			out := echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: "t_dead"}

			dead, err := h.ch.StartStream(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			posted := make(chan echogate.MessageRef, 1)
			dead.(echogate.PostNotifier).OnPost(func(ref echogate.MessageRef) { posted <- ref })
			if err := dead.Append(ctx, "The answer is"); err != nil {
				t.Fatal(err)
			}
			var ref echogate.MessageRef
			select {
			case ref = <-posted:
			case <-time.After(10 * time.Second):
				t.Fatal("OnPost was not called after the stream's first message was created")
			}
			if msgs := h.srv.BotMessages(conv.Channel); len(msgs) != 1 || msgs[0].ID != ref.ID || msgs[0].Content != "The answer is" {
				t.Fatalf("after the first append: %+v, OnPost ref %+v; want the partial message with that id", msgs, ref)
			}
			// The process dies here: nothing finishes the dead stream.
			if tt.deleted {
				h.srv.DeleteMessage(ref.ID)
			}

			next := out
			next.Turn, next.Continues = "t_new", ref
			st, err := h.ch.StartStream(ctx, next)
			if err != nil {
				t.Fatal(err)
			}
			full := "The answer is 42, in full."
			if tt.empty {
				full = ""
			}
			if _, err := st.Finish(ctx, full); err != nil {
				t.Fatalf("Finish = %v, want nil", err)
			}
			msgs := h.srv.BotMessages(conv.Channel)
			if tt.empty {
				if len(msgs) != 0 {
					t.Fatalf("messages after an empty continued finish = %+v, want the partial one removed", msgs)
				}
				return
			}
			if len(msgs) != 1 || VisibleText(msgs[0].Content) != full {
				t.Fatalf("messages after the continued answer = %+v, want exactly one, %q", msgs, full)
			}
			if same := msgs[0].ID == ref.ID; same == tt.deleted {
				t.Errorf("answer in message %s, partial was %s: want the same message unless it was deleted (%v)", msgs[0].ID, ref.ID, tt.deleted)
			}
			h.srv.ExpireNonces()
			if got, text, found, err := h.ch.FindReply(ctx, conv, "t_new", echogate.OutReply); err != nil || !found || got.ID != msgs[0].ID || text != full {
				t.Errorf("FindReply(t_new) = %+v %q %v %v, want the continued message marked for its turn", got, text, found, err)
			}
		})
	}
}
