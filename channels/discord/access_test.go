package discord

import (
	"net/http"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

func eventsOf(h *harness) []echogate.InboundEvent {
	evs, _ := h.sink.snapshot()
	return evs
}

func hasEvent(h *harness, id string) bool {
	for _, ev := range eventsOf(h) {
		if ev.ID == id {
			return true
		}
	}
	return false
}

// A thread read that Discord answers slowly does not hold the gateway reader: while the
// mention's channel lookup is held, a DM from someone else is dispatched to the sink on the
// same connection (a blocked reader stops reading heartbeat ACKs, and the connection is
// replaced as a zombie); once released, the mention arrives with its thread context.
func TestDiscordThreadReadDoesNotBlockTheGateway(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, func(c *Config) { c.MessageContent = true }, nil)
	h.waitReady(t)
	conns := h.srv.Connections()
	const th = "700000000000000041"
	h.srv.SetThread(testGuild, th)
	h.srv.SendGuildMessage(testGuild, th, bob, "the deploy failed", false)
	release := h.srv.HoldREST(http.MethodGet, "/channels/"+th)
	defer release()
	mention := h.srv.SendGuildMessage(testGuild, th, ann, "summarize this thread", true)
	if err := h.srv.WaitFor(5*time.Second, "the held channel lookup", func() bool { return h.srv.Held() == 1 }); err != nil {
		t.Fatal(err)
	}
	dm := h.srv.SendDM(bob, "are you there?")
	if err := h.srv.WaitFor(5*time.Second, "the DM while the thread read is held", func() bool { return hasEvent(h, dm.ID) }); err != nil {
		t.Fatalf("%v: the gateway reader is blocked by a REST read (events %+v)", err, eventsOf(h))
	}
	if n := h.srv.Connections(); n != conns {
		t.Fatalf("gateway connections = %d, want %d: the blocked reader stopped reading heartbeat ACKs and the connection was replaced", n, conns)
	}
	if hasEvent(h, mention.ID) {
		t.Fatalf("the mention was delivered before its thread read finished")
	}
	release()
	if err := h.srv.WaitFor(5*time.Second, "the mention after the read", func() bool { return hasEvent(h, mention.ID) }); err != nil {
		t.Fatal(err)
	}
	for _, ev := range eventsOf(h) {
		if ev.ID == mention.ID {
			if len(ev.ThreadContext) != 1 || ev.ThreadContext[0].Text != "the deploy failed" {
				t.Errorf("mention thread context = %+v, want bob's earlier message", ev.ThreadContext)
			}
		}
	}
}

// A refused author's mention in a thread costs no REST read (no channel lookup, no history):
// the sink still gets it, to refuse it; the next allowed author's mention reads the thread.
func TestDiscordRefusedMentionCostsNoReads(t *testing.T) {
	t.Parallel()
	admits := func(ev echogate.InboundEvent) bool { return ev.Actor.ID != bob.ID }
	h := start(t, discordtest.Options{}, func(c *Config) { c.MessageContent = true; c.Admits = admits }, nil)
	h.waitReady(t)
	const th = "700000000000000042"
	h.srv.SetThread(testGuild, th)
	h.srv.SendGuildMessage(testGuild, th, ann, "the deploy failed", false)
	refused := h.srv.SendGuildMessage(testGuild, th, bob, "what did they say?", true)
	if err := h.srv.WaitFor(5*time.Second, "the refused mention at the sink", func() bool { return hasEvent(h, refused.ID) }); err != nil {
		t.Fatal(err)
	}
	if n := len(h.srv.CallsTo(http.MethodGet, "/channels/"+th)); n != 0 {
		t.Errorf("REST reads of %s after a refused mention = %d, want 0", th, n)
	}
	allowed := h.srv.SendGuildMessage(testGuild, th, ann, "summarize this thread", true)
	if err := h.srv.WaitFor(5*time.Second, "the allowed mention", func() bool { return hasEvent(h, allowed.ID) }); err != nil {
		t.Fatal(err)
	}
	for _, ev := range eventsOf(h) {
		if ev.ID == allowed.ID && (len(ev.ThreadContext) == 0 || ev.ThreadContext[0].Text != "the deploy failed") {
			t.Errorf("allowed mention thread context = %+v, want the thread's history", ev.ThreadContext)
		}
	}
}

// Messages of one channel reach the sink in the order they came, even when the first waits
// for a thread read and the next needs none; another channel is not held up meanwhile.
func TestDiscordLaneKeepsChannelOrder(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, func(c *Config) { c.MessageContent = true }, nil)
	h.waitReady(t)
	const th = "700000000000000043"
	h.srv.SetThread(testGuild, th)
	release := h.srv.HoldREST(http.MethodGet, "/channels/"+th)
	defer release()
	first := h.srv.SendGuildMessage(testGuild, th, ann, "first", true)
	if err := h.srv.WaitFor(5*time.Second, "the held read", func() bool { return h.srv.Held() == 1 }); err != nil {
		t.Fatal(err)
	}
	second := h.srv.SendGuildMessage(testGuild, th, bob, "second", true)
	other := h.srv.SendGuildMessage(testGuild, "700000000000000044", bob, "elsewhere", true)
	if err := h.srv.WaitFor(5*time.Second, "the other channel's message", func() bool { return hasEvent(h, other.ID) }); err != nil {
		t.Fatal(err)
	}
	if hasEvent(h, first.ID) || hasEvent(h, second.ID) {
		t.Fatalf("events %+v: the thread's messages overtook its held read", eventsOf(h))
	}
	release()
	if err := h.srv.WaitFor(5*time.Second, "both thread messages", func() bool { return hasEvent(h, first.ID) && hasEvent(h, second.ID) }); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range eventsOf(h) {
		if ev.ID == first.ID || ev.ID == second.ID {
			order = append(order, ev.Text)
		}
	}
	if len(order) != 2 || order[0] != "first" || order[1] != "second" {
		t.Errorf("thread events in order %q, want [first second]", order)
	}
}

// A refused person's reaction on a bot message this process did not post costs no GET
// message; an admitted person's is looked up as before.
func TestDiscordRefusedReactionCostsNoLookup(t *testing.T) {
	t.Parallel()
	admits := func(ev echogate.InboundEvent) bool { return ev.Actor.ID != bob.ID }
	h := start(t, discordtest.Options{OmitMessageAuthorID: true}, func(c *Config) { c.Admits = admits }, nil)
	h.waitReady(t)
	const channel = "700000000000000045"
	h.srv.SendGuildMessage(testGuild, channel, ann, "hello", true) // makes the channel a guild channel
	prompt := postAsBot(t, h.srv, channel, "Run `rm`?")
	if err := h.srv.AddReaction(prompt, bob, echogate.ReactionApprove); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.AddReaction(prompt, ann, echogate.ReactionApprove); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.WaitFor(5*time.Second, "the admitted reaction", func() bool {
		for _, ev := range eventsOf(h) {
			if ev.Kind == echogate.KindReaction && ev.Actor.ID == ann.ID {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if gets := len(h.srv.CallsTo(http.MethodGet, "/channels/"+channel+"/messages/"+prompt)); gets != 1 {
		t.Errorf("GET message calls = %d, want 1 (the admitted reaction's only)", gets)
	}
}

// TestDiscordReactionWaitsBehindItsChannelsLane: a reaction (a ✅, a 🛑) in a channel whose
// message is still in its lane waiting for a thread read reaches the sink after that message,
// never before it; other channels are not held up.
func TestDiscordReactionWaitsBehindItsChannelsLane(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, func(c *Config) { c.MessageContent = true }, nil)
	h.waitReady(t)
	const th = "700000000000000046"
	h.srv.SetThread(testGuild, th)
	prompt := postAsBot(t, h.srv, th, "Run `rm`?")
	release := h.srv.HoldREST(http.MethodGet, "/channels/"+th)
	defer release()
	first := h.srv.SendGuildMessage(testGuild, th, ann, "first", true)
	if err := h.srv.WaitFor(5*time.Second, "the held read", func() bool { return h.srv.Held() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.AddReaction(prompt, ann, echogate.ReactionStop); err != nil {
		t.Fatal(err)
	}
	other := h.srv.SendGuildMessage(testGuild, "700000000000000047", bob, "elsewhere", true)
	if err := h.srv.WaitFor(5*time.Second, "the other channel's message", func() bool { return hasEvent(h, other.ID) }); err != nil {
		t.Fatal(err)
	}
	for _, ev := range eventsOf(h) {
		if ev.Kind == echogate.KindReaction || ev.ID == first.ID {
			t.Fatalf("event %+v reached the sink while its channel's read was held", ev)
		}
	}
	release()
	var order []string
	if err := h.srv.WaitFor(5*time.Second, "the message and the reaction", func() bool {
		order = order[:0]
		for _, ev := range eventsOf(h) {
			switch {
			case ev.ID == first.ID:
				order = append(order, "message")
			case ev.Kind == echogate.KindReaction && ev.Target.ID == prompt:
				order = append(order, "reaction")
			}
		}
		return len(order) == 2
	}); err != nil {
		t.Fatal(err)
	}
	if order[0] != "message" || order[1] != "reaction" {
		t.Errorf("channel events in order %q, want [message reaction]", order)
	}
}
