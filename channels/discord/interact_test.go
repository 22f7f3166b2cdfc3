package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

const testGuild = "400000000000000009"

// Without the privileged intent a mention is still answered with its text; chatter that does
// not mention the bot arrives without content and is not an event.
func TestWireMentionWithoutMessageContent(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{DisallowedIntents: 1 << 15}, nil, echoAnswer)
	h.waitReady(t)
	h.srv.SendGuildMessage(testGuild, "700000000000000001", ann, "room chatter", false)
	m := h.srv.SendGuildMessage(testGuild, "700000000000000001", ann, "what is up?", true)
	if err := h.srv.WaitFor(5*time.Second, "the answer", func() bool { return len(h.srv.BotMessages(m.ChannelID)) == 1 }); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.BotMessages(m.ChannelID)[0].Content; got != "echo: what is up?" {
		t.Errorf("answer = %q, want the mention's text echoed", got)
	}
	if evs, _ := h.sink.snapshot(); len(evs) != 1 {
		t.Errorf("events = %+v, want only the mention", evs)
	}
}

// The approval prompt carries buttons; a press is acknowledged as a deferred update and becomes
// the reaction event of the user who pressed; editing the prompt (the decision) removes them.
func TestWireButtonPressIsAReaction(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: testGuild, Channel: "700000000000000002"}
	h.srv.SendGuildMessage(testGuild, conv.Channel, ann, "hi", true) // the fake learns the channel's guild
	ref, err := h.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: conv, Text: "🔐 run `x`?"})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := h.srv.Message(ref.ID)
	for _, id := range []string{"echogate_approve", "echogate_approve_session", "echogate_deny"} {
		if !strings.Contains(msg.Components, `"`+id+`"`) {
			t.Errorf("prompt components = %s, want button %s", msg.Components, id)
		}
	}
	iid, err := h.srv.ClickButton(ref.ID, bob, "echogate_deny")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.WaitFor(5*time.Second, "the button event", func() bool { evs, _ := h.sink.snapshot(); return len(evs) == 2 }); err != nil {
		t.Fatal(err)
	}
	evs, _ := h.sink.snapshot()
	ev := evs[1]
	if ev.Kind != echogate.KindReaction || ev.Reaction != echogate.ReactionDeny || ev.Target.ID != ref.ID || ev.Actor.ID != bob.ID || ev.Actor.Name != "Bob" {
		t.Errorf("button event = %+v, want ❌ by Bob on the prompt", ev)
	}
	cbs := h.srv.Callbacks()
	if len(cbs) != 1 || cbs[0].InteractionID != iid || cbs[0].Type != 6 {
		t.Errorf("callbacks = %+v, want one deferred update (6) for %s", cbs, iid)
	}
	if err := h.ch.Edit(context.Background(), ref, "🔐 `x`\n❌ Denied by Bob; it was not run."); err != nil {
		t.Fatal(err)
	}
	if msg, _ := h.srv.Message(ref.ID); msg.Components != "" {
		t.Errorf("decided prompt components = %s, want none", msg.Components)
	}
}

// The application command is registered once (a bulk overwrite), acknowledged as a private
// deferred reply before the answer exists, and the answer fills it.
func TestWireApplicationCommand(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	if err := h.srv.WaitFor(5*time.Second, "command registration", func() bool { return len(h.srv.CommandSets()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if set := h.srv.CommandSets()[0]; set.GuildID != "" || strings.Join(set.Names, ",") != "echogate" || !strings.Contains(string(set.Body), `"usage"`) {
		t.Errorf("registered = %+v %s, want the global /echogate command with its subcommands", set, set.Body)
	}
	iid := h.srv.RunCommand(testGuild, "700000000000000003", ann, "echogate", "model", map[string]string{"name": "gpt-4o"})
	if err := h.srv.WaitFor(5*time.Second, "the command event", func() bool { evs, _ := h.sink.snapshot(); return len(evs) == 1 }); err != nil {
		t.Fatal(err)
	}
	cbs := h.srv.Callbacks()
	if len(cbs) != 1 || cbs[0].InteractionID != iid || cbs[0].Type != 5 || cbs[0].Flags&64 == 0 {
		t.Fatalf("callbacks = %+v, want one private deferred reply (type 5, flag 64) acknowledging %s", cbs, iid)
	}
	evs, _ := h.sink.snapshot()
	ev := evs[0]
	if ev.Text != "/model gpt-4o" || ev.Interaction == "" || ev.Actor.ID != ann.ID || ev.Conversation.Channel != "700000000000000003" {
		t.Fatalf("command event = %+v, want /model gpt-4o from ann with an interaction", ev)
	}
	if _, err := h.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation, Text: "This conversation now uses gpt-4o.", Interaction: ev.Interaction}); err != nil {
		t.Fatal(err)
	}
	fu := h.srv.FollowUps()
	if len(fu) != 1 || fu[0].Content != "This conversation now uses gpt-4o." {
		t.Errorf("follow-ups = %+v, want the answer in the deferred reply", fu)
	}
	if n := len(h.srv.BotMessages("700000000000000003")); n != 0 {
		t.Errorf("public messages = %d, want 0 (the answer is private)", n)
	}
}

// First addressed in a thread, the event carries the thread's earlier messages with names.
func TestWireThreadContext(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, func(c *Config) { c.MessageContent = true }, nil)
	h.waitReady(t)
	const th = "700000000000000004"
	h.srv.SetThread(testGuild, th)
	h.srv.SendGuildMessage(testGuild, th, bob, "the deploy failed", false)
	h.srv.SendGuildMessage(testGuild, th, ann, "rolling back", false)
	h.srv.SendGuildMessage(testGuild, th, ann, "summarize this thread", true)
	if err := h.srv.WaitFor(5*time.Second, "the mention", func() bool { evs, _ := h.sink.snapshot(); return len(evs) == 1 }); err != nil {
		t.Fatal(err)
	}
	evs, _ := h.sink.snapshot()
	want := []echogate.ThreadMessage{{Author: "Bob", AuthorID: bob.ID, Text: "the deploy failed"}, {Author: "ann", AuthorID: ann.ID, Text: "rolling back"}}
	if got := evs[0].ThreadContext; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("thread context = %+v, want %+v", got, want)
	}
}

// The activity shows as a status line under the streamed text and is gone from the final text.
func TestWireActivityLine(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	dm := h.srv.SendDM(ann, "look it up")
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: dm.ChannelID, DM: true}
	ctx := context.Background()
	view := h.ch.StartActivity(ctx, conv, echogate.MessageRef{})
	st, err := h.ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Append(ctx, "Looking")
	view.Show(echogate.Activity{Status: "is running lookup…", Tools: []string{"lookup"}})
	if err := h.srv.WaitFor(5*time.Second, "the status line", func() bool {
		msgs := h.srv.BotMessages(dm.ChannelID)
		return len(msgs) == 1 && msgs[0].Content == "Looking\n-# ⏳ running lookup…"
	}); err != nil {
		t.Fatalf("%v; messages %+v", err, h.srv.BotMessages(dm.ChannelID))
	}
	if _, err := st.Finish(ctx, "Looking done."); err != nil {
		t.Fatal(err)
	}
	view.End()
	if got := h.srv.BotMessages(dm.ChannelID)[0].Content; got != "Looking done." {
		t.Errorf("final = %q, want the answer without the status line", got)
	}
}

// With command_guilds the command is registered in each guild (at once) instead of globally;
// registering again (a restart) sends the same overwrite, so nothing is duplicated.
func TestWireCommandsPerGuild(t *testing.T) {
	t.Parallel()
	guilds := []string{"400000000000000011", "400000000000000012"}
	h := start(t, discordtest.Options{}, func(c *Config) { c.CommandGuilds = guilds }, nil)
	h.waitReady(t)
	if err := h.srv.WaitFor(5*time.Second, "per-guild registration", func() bool { return len(h.srv.CommandSets()) == 2 }); err != nil {
		t.Fatal(err)
	}
	sets := h.srv.CommandSets()
	for i, g := range guilds {
		if sets[i].GuildID != g || strings.Join(sets[i].Names, ",") != "echogate" {
			t.Errorf("set %d = %+v, want /echogate in guild %s", i, sets[i], g)
		}
	}
	if string(sets[0].Body) != string(sets[1].Body) {
		t.Errorf("the overwrites differ:\n%s\n%s", sets[0].Body, sets[1].Body)
	}
	h.srv.Reconnect() // a resumed connection does not register again
	if err := h.srv.WaitFor(10*time.Second, "the reconnect", func() bool { return h.srv.Connected() && len(h.srv.Resumes()) >= 1 }); err != nil {
		t.Fatal(err)
	}
	if n := len(h.srv.CommandSets()); n != 2 {
		t.Errorf("command overwrites after a reconnect = %d, want 2", n)
	}
}
