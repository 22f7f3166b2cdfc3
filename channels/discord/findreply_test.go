package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

func TestWithMarker(t *testing.T) {
	long := strings.Repeat("word ", 800) // 4000 characters: three parts
	for _, tc := range []struct {
		name, text, key string
		parts           int
	}{
		{"no turn", "hello", "", 1},
		{"short", "hello", "t_1/reply", 1},
		{"exactly the limit", strings.Repeat("a", MaxMessageLength), "t_1/reply", 2},
		{"long", long, "t_1/reply", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withMarker(tc.text, tc.key)
			if len(got) != tc.parts {
				t.Fatalf("withMarker(%d chars, %q) = %d parts, want %d", textLen(tc.text), tc.key, len(got), tc.parts)
			}
			for i, p := range got {
				if n := textLen(p); n > MaxMessageLength {
					t.Errorf("part %d has %d characters, want ≤ %d", i+1, n, MaxMessageLength)
				}
				if marked := strings.HasSuffix(p, marker(tc.key)); tc.key != "" && marked != (i == len(got)-1) {
					t.Errorf("part %d marked = %v, want only the last part marked", i+1, marked)
				}
			}
			last := got[len(got)-1]
			if tc.key == "" && stripMarker(last) != last {
				t.Errorf("stripMarker changed an unmarked part")
			}
			if tc.key != "" && strings.HasSuffix(stripMarker(last), marker(tc.key)) {
				t.Errorf("stripMarker(last part) still ends with the marker")
			}
		})
	}
	if marker("t_1/reply") == marker("t_2/reply") || marker("t_1/reply") == marker("t_1/approval_prompt") {
		t.Error("markers of different turns or kinds are equal")
	}
	if m := marker("t_1/reply"); !strings.HasPrefix(m, " ") || strings.TrimSpace(m) == "" {
		t.Errorf("marker %q must start with a space (a URL before it stays whole) and hold the hash", m)
	}
	if n := textLen(marker("t_1/reply")); n != markerLen {
		t.Errorf("textLen(marker) = %d, want markerLen %d", n, markerLen)
	}
	if n := len(partNonce("t_1/reply", 0)); n > 25 {
		t.Errorf("nonce has %d characters, Discord allows 25", n)
	}
}

// TestWireFindReply: a turn's answer, posted plainly or streamed, is found in the channel after
// the nonce window; another turn's, or another kind, is not.
func TestWireFindReply(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: h.srv.DMChannel(ann.ID), DM: true}
	answer := strings.Repeat("long answer ", 300) + "the end"
	sent, err := h.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: "t_sent", Text: answer})
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: "t_streamed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "streamed "); err != nil {
		t.Fatal(err)
	}
	refs, err := st.Finish(ctx, "streamed answer")
	if err != nil || len(refs) != 1 {
		t.Fatalf("Finish = %v, %v; want one message", refs, err)
	}
	if _, err := h.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Text: "no turn"}); err != nil {
		t.Fatal(err)
	}
	h.srv.ExpireNonces()
	for _, tc := range []struct {
		turn     string
		kind     echogate.OutboundKind
		found    bool
		ref      echogate.MessageRef
		wantText string
	}{
		{"t_sent", echogate.OutReply, true, sent, "the end"},
		{"t_streamed", echogate.OutReply, true, refs[0], "streamed answer"},
		{"t_sent", echogate.OutApprovalPrompt, false, echogate.MessageRef{}, ""},
		{"t_other", echogate.OutReply, false, echogate.MessageRef{}, ""},
	} {
		ref, text, found, err := h.ch.FindReply(ctx, conv, tc.turn, tc.kind)
		if err != nil || found != tc.found || ref.ID != tc.ref.ID || !strings.HasSuffix(text, tc.wantText) || strings.ContainsRune(text, markerLead) {
			t.Errorf("FindReply(%s, %v) = %+v, %q, %v, %v; want %+v ending %q, found %v", tc.turn, tc.kind, ref, text, found, err, tc.ref, tc.wantText, tc.found)
		}
	}
	if m, _ := h.srv.Message(sent.ID); !strings.HasSuffix(m.Content, marker("t_sent/reply")) {
		t.Errorf("the answer's last message does not end with its marker")
	}
}

// TestWireRepeatedTurnPostIsNotDuplicated: a turn posting its answer again (a recovered turn
// continuing under its id) within Discord's nonce window gets its first message back, edited to
// the new text, instead of a second message.
func TestWireRepeatedTurnPostIsNotDuplicated(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: h.srv.DMChannel(ann.ID), DM: true}
	first, err := h.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: "t_1", Text: "first try"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: "t_1", Text: "second try"})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := h.srv.BotMessages(conv.Channel); len(msgs) != 1 || again.ID != first.ID || stripMarker(msgs[0].Content) != "second try" {
		t.Fatalf("after two posts of turn t_1: %d bot messages (%+v), refs %s and %s; want one message showing the second text", len(msgs), msgs, first.ID, again.ID)
	}
	h.srv.ExpireNonces()
	if _, err := h.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv, Turn: "t_1", Text: "third try"}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.srv.BotMessages(conv.Channel)); n != 2 {
		t.Errorf("after the nonce window: %d bot messages, want 2 (only FindReply prevents this one)", n)
	}
}

// postAsBot creates a message as the bot directly on the fake, as a process before a restart
// did: the channel under test never saw it.
func postAsBot(t *testing.T, srv *discordtest.Server, channel, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": text})
	req, _ := http.NewRequest(http.MethodPost, srv.APIURL+"channels/"+channel+"/messages", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bot "+srv.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.ID == "" {
		t.Fatalf("post as bot: status %d, %v", resp.StatusCode, err)
	}
	return m.ID
}

// TestWireReactionAfterRestart: a ✅ on a prompt an earlier process posted, in a payload without
// message_author_id, finds its session from the store first (no GET message); without the store
// it is looked up on Discord, and a failing first look-up is retried.
func TestWireReactionAfterRestart(t *testing.T) {
	t.Parallel()
	const guild, channel = "400000000000000019", "500000000000000019"
	stored := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: guild, Channel: channel, Thread: "from-store"}
	for _, tc := range []struct {
		name     string
		store    bool
		fail     bool // the first GET message answers 429 beyond MaxRetryAfter (not retried inside the call)
		wantGets int
	}{
		{"from the store", true, false, 0},
		{"looked up", false, false, 1},
		{"looked up after a failure", false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := make(chan echogate.MessageRef, 1)
			h := start(t, discordtest.Options{OmitMessageAuthorID: true}, func(c *Config) {
				c.MaxRetryAfter = 50 * time.Millisecond
				if tc.store {
					c.SessionOf = func(_ context.Context, ref echogate.MessageRef) (echogate.ConversationRef, bool) {
						asked <- ref
						return stored, true
					}
				}
			}, nil)
			h.waitReady(t)
			h.srv.SendGuildMessage(guild, channel, ann, "hello", true) // makes the channel a guild channel
			prompt := postAsBot(t, h.srv, channel, "Run `rm`?")
			if tc.fail {
				h.srv.RateLimitNext(http.MethodGet, "/messages/"+prompt, 100*time.Millisecond, false)
			}
			if err := h.srv.AddReaction(prompt, ann, echogate.ReactionApprove); err != nil {
				t.Fatal(err)
			}
			if err := h.srv.WaitFor(5*time.Second, "reaction event", func() bool {
				evs, _ := h.sink.snapshot()
				return len(evs) == 2
			}); err != nil {
				t.Fatal(err)
			}
			evs, _ := h.sink.snapshot()
			ev := evs[1]
			if ev.Kind != echogate.KindReaction || ev.Reaction != echogate.ReactionApprove || ev.Target.ID != prompt {
				t.Errorf("event = %+v, want ✅ on %s", ev, prompt)
			}
			if tc.store && ev.Conversation != stored {
				t.Errorf("conversation = %+v, want the store's %+v", ev.Conversation, stored)
			}
			if gets := len(h.srv.CallsTo(http.MethodGet, "/channels/"+channel+"/messages/"+prompt)); gets != tc.wantGets {
				t.Errorf("GET message calls = %d, want %d", gets, tc.wantGets)
			}
		})
	}
}
