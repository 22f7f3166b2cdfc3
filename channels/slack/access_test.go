package slack

import (
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// readsOf counts the recorded calls of method whose parameter key is value ("" = any).
func readsOf(srv *slacktest.Server, method, key, value string) int {
	n := 0
	for _, c := range srv.CallsTo(method) {
		if value == "" || c.Params[key] == value {
			n++
		}
	}
	return n
}

// A refused person costs no Web API read: their mention in a thread reads neither the thread
// nor any name (so the one thread read a minute is left for the next allowed user), their
// reaction on an unknown bot message looks nothing up, and their reply in a thread without
// a mention does not make the channel read the thread to learn whether the bot is in it.
func TestRefusedMentionCostsNoPlatformReads(t *testing.T) {
	e := newEnv(t, true, func(c *Config) {
		c.Admits = func(ev echogate.InboundEvent) bool { return ev.Actor.ID != "UR" }
		c.Channels = map[string]ChannelConfig{"C5": {RequireMention: Bool(false)}}
	})
	e.srv.AddUser(slacktest.User{ID: "U1", Name: "ann", DisplayName: "Ann"})
	e.srv.AddUser(slacktest.User{ID: "U2", Name: "bob", DisplayName: "Bob"})
	e.srv.AddUser(slacktest.User{ID: "UR", Name: "mallory", DisplayName: "Mallory"})

	a := "1700000600.000100"
	e.srv.RecordPost(slacktest.ChannelMessage("C5", "U2", a, "", "the deploy failed"))
	e.push(slacktest.Mention("C5", "UR", "1700000600.000200", a, "<@UBOT> what happened?"), slacktest.Delivery{})
	e.rec.waitEvents(1)
	evs, _ := e.rec.snapshot()
	if ev := evs[0]; ev.Actor.ID != "UR" || len(ev.ThreadContext) != 0 || ev.Actor.Name != "" {
		t.Errorf("refused mention = actor %+v, context %+v; want UR's event with no context and no name", ev.Actor, ev.ThreadContext)
	}
	e.push(slacktest.Reaction("UR", "white_check_mark", "C5", "1700000600.000050", e.srv.BotUserID()), slacktest.Delivery{})
	e.rec.waitEvents(2)
	e.push(slacktest.ChannelMessage("C5", "UR", "1700000600.000300", "1700000500.000100", "a reply, no mention"), slacktest.Delivery{})
	for _, m := range []string{"conversations.replies", "conversations.history", "users.info"} {
		if n := readsOf(e.srv, m, "", ""); n != 0 {
			t.Errorf("%s calls after the refused user's events = %d, want 0", m, n)
		}
	}

	b := "1700000700.000100"
	e.srv.RecordPost(slacktest.ChannelMessage("C5", "U2", b, "", "rolling back"))
	e.srv.RecordPost(slacktest.ChannelMessage("C5", "UR", "1700000700.000150", b, "psst"))
	e.push(slacktest.Mention("C5", "U1", "1700000700.000200", b, "<@UBOT> summarize"), slacktest.Delivery{})
	e.rec.waitFor("the allowed mention", func() bool {
		for _, ev := range e.rec.events {
			if ev.Actor.ID == "U1" {
				return true
			}
		}
		return false
	})
	evs, _ = e.rec.snapshot()
	var got echogate.InboundEvent
	for _, ev := range evs {
		switch ev.Actor.ID {
		case "U1":
			got = ev
		case "UR":
			if ev.Kind == echogate.KindMention && ev.Text == "a reply, no mention" {
				t.Errorf("the refused user's reply without a mention became an event: %+v", ev)
			}
		}
	}
	want := []echogate.ThreadMessage{{Author: "Bob", AuthorID: "U2", Text: "rolling back"}, {Author: "UR", AuthorID: "UR", Text: "psst"}}
	if tc := got.ThreadContext; len(tc) != 2 || tc[0] != want[0] || tc[1] != want[1] {
		t.Errorf("allowed mention's thread context = %+v, want %+v (the read budget intact; no name looked up for the refused author)", tc, want)
	}
	if n := readsOf(e.srv, "users.info", "user", "UR"); n != 0 {
		t.Errorf("users.info calls for the refused user = %d, want 0", n)
	}
	// Events of one channel are handled in order: the reply without a mention came before.
	if n := readsOf(e.srv, "conversations.replies", "ts", "1700000500.000100"); n != 0 {
		t.Errorf("conversations.replies calls for the thread of the refused reply = %d, want 0", n)
	}
}

// A Slack Connect guest's events and thread messages carry the person's own team (user_team,
// a message's team), which the access rules check.
func TestSlackConnectGuestCheckedByOwnTeam(t *testing.T) {
	var asked []echogate.InboundEvent
	e := newEnv(t, true, func(c *Config) {
		c.Admits = func(ev echogate.InboundEvent) bool { asked = append(asked, ev); return true }
	})
	root := "1700000800.000100"
	post := slacktest.ChannelMessage("C4", "UG", root, "", "hello from the partner org")
	post["user_team"] = "T0PARTNER"
	e.srv.RecordPost(post)
	mention := slacktest.Mention("C4", "UG", "1700000800.000200", root, "<@UBOT> hi")
	mention["user_team"], mention["source_team"] = "T0PARTNER", "T0PARTNER"
	e.push(mention, slacktest.Delivery{})
	e.rec.waitEvents(1)
	evs, _ := e.rec.snapshot()
	ev := evs[0]
	if ev.Actor.Team != "T0PARTNER" || ev.Conversation.Workspace != e.srv.TeamID() {
		t.Errorf("guest event = actor %+v in workspace %q, want team T0PARTNER in %q", ev.Actor, ev.Conversation.Workspace, e.srv.TeamID())
	}
	if len(ev.ThreadContext) != 1 || ev.ThreadContext[0].AuthorTeam != "T0PARTNER" {
		t.Errorf("guest thread context = %+v, want the earlier message with author team T0PARTNER", ev.ThreadContext)
	}
	if len(asked) == 0 || asked[0].Actor.Team != "T0PARTNER" {
		t.Errorf("Admits asked about %+v, want the guest with their own team first", asked)
	}
}

// Opening the app's tabs or an assistant thread costs nothing for a refused person: no
// welcome post, no home view, no suggested prompts; an admitted person still gets them.
func TestRefusedPersonGetsNoWelcomeHomeOrPrompts(t *testing.T) {
	e := newEnv(t, true, func(c *Config) {
		c.Admits = func(ev echogate.InboundEvent) bool { return ev.Actor.ID != "UR" }
		c.SuggestedPrompts = []SuggestedPrompt{{Title: "Summarize", Message: "Summarize my unread threads"}}
	})
	e.waitAck(e.push(slacktest.AppHomeOpened("UR", "D6", "messages", "1700000900.000100"), slacktest.Delivery{}))
	e.waitAck(e.push(slacktest.AppHomeOpened("UR", "D6", "home", "1700000900.000200"), slacktest.Delivery{}))
	e.waitAck(e.push(slacktest.AssistantThreadStarted("UR", "D6", "1700000900.000300"), slacktest.Delivery{}))
	e.push(slacktest.AssistantThreadStarted("U1", "D5", "1700000900.000400"), slacktest.Delivery{})
	waitSrv(t, e.srv, "the admitted user's prompts", func() bool { return len(e.srv.CallsTo("assistant.threads.setSuggestedPrompts")) == 1 })
	if c := e.srv.CallsTo("assistant.threads.setSuggestedPrompts")[0]; c.Params["channel_id"] != "D5" {
		t.Errorf("suggested prompts set in %s, want only D5 (the admitted user's)", c.Params["channel_id"])
	}
	if n := len(e.srv.BotMessages("D6")); n != 0 {
		t.Errorf("welcome posts to the refused user = %d, want 0", n)
	}
	if v := e.srv.HomeView("UR"); v != "" {
		t.Errorf("home view published for the refused user: %s", v)
	}
	for _, m := range []string{"conversations.history", "conversations.replies", "users.info"} {
		if n := len(e.srv.CallsTo(m)); n != 0 {
			t.Errorf("%s calls = %d, want 0", m, n)
		}
	}
}
