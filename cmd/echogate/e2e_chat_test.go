package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/channels/discord/discordtest"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// slackGateway starts a gateway on a fake Slack with yaml and waits until Slack is connected.
func slackGateway(t *testing.T, yaml string) (*platform, *slacktest.Server, *e2eGateway, *scriptedModel) {
	t.Helper()
	p, srv := newSlackPlatform(t)
	model := newScriptedModel(t)
	vars := model.vars()
	for k, v := range p.vars {
		vars[k] = v
	}
	g := startGateway(t, vars, yaml)
	waitReadyz(t, g.base, http.StatusOK, "slack", func(s string) bool { return strings.Contains(s, "connected (socket mode)") })
	return p, srv, g, model
}

func slackMessage(srv *slacktest.Server, ch, ts string) slacktest.Message {
	for _, m := range srv.BotMessages(ch) {
		if m.TS == ts {
			return m
		}
	}
	return slacktest.Message{}
}

// A Slack approval by button: a stranger's press is ignored by the same rule as a reaction,
// the requester's press runs the tool once (a second press does nothing), and the prompt is
// edited to show who decided, without its buttons.
func TestE2ESlackButtonApproval(t *testing.T) {
	p, srv, g, model := slackGateway(t, approvalConfig)
	c := p.newConv(t, "[btn-1]")
	p.open(t, c, p.requester, "what time is it? [btn-1]")
	prompt := c.waitPrompt(t, "current_time")
	if m := slackMessage(srv, c.ch, prompt.ID); !strings.Contains(m.Blocks, "echogate_approve") {
		t.Fatalf("prompt blocks = %s, want the approval buttons", m.Blocks)
	}
	press := func(user, name string) {
		t.Helper()
		if _, err := srv.PushInteractive(slacktest.ButtonPress(user, name, c.ch, prompt.ID, "echogate_approve")); err != nil {
			t.Fatal(err)
		}
	}
	press(p.stranger, "mallory")
	g.logs.waitLine(t, "approval reaction ignored", p.qualified(p.stranger))
	if res := model.toolResults("[btn-1]", "current_time"); len(res) != 0 {
		t.Fatalf("the stranger's button ran the tool: %v", res)
	}
	press(p.requester, "ann")
	c.waitMsg(t, afterToolText)
	press(p.requester, "ann") // a double click
	p.say(t, c, p.requester, "thanks [btn-1]")
	c.waitMsg(t, echoText+"thanks [btn-1]")
	if n := len(model.toolResults("[btn-1]", "current_time")); n != 1 {
		t.Errorf("current_time ran %d times, want once", n)
	}
	m := slackMessage(srv, c.ch, prompt.ID)
	if !strings.Contains(m.Text, "Approved once by ann") || strings.Contains(m.Blocks, "echogate_approve") {
		t.Errorf("prompt after the decision = %q (blocks %s), want it to name ann and have no buttons", m.Text, m.Blocks)
	}
}

// /echogate usage and /echogate help are acknowledged and answered privately through the
// response_url; nothing is posted in the channel.
func TestE2ESlackSlashCommand(t *testing.T) {
	p, srv, _, _ := slackGateway(t, "")
	c := p.newConv(t, "[cmd-1]")
	for i, sub := range []string{"usage", "help"} {
		env, err := srv.PushSlashCommand(slacktest.SlashCommand("/echogate", sub, p.requester, c.ch, srv.ResponseURL(sub), "trig-"+sub))
		if err != nil {
			t.Fatal(err)
		}
		p.waitFor(t, "the ack and answer of /echogate "+sub, func() bool { return srv.Acks(env) == 1 && len(srv.Responses()) == i+1 })
		r := srv.Responses()[i]
		if r.ResponseType != "ephemeral" || r.Path != "/response/"+sub || strings.TrimSpace(r.Text) == "" {
			t.Errorf("answer to /echogate %s = %+v, want a private (ephemeral) answer", sub, r)
		}
	}
	if !strings.Contains(srv.Responses()[1].Text, "usage") {
		t.Errorf("help = %q, want the command list", srv.Responses()[1].Text)
	}
	if n := len(srv.BotMessages(c.ch)); n != 0 {
		t.Errorf("public messages = %d, want 0", n)
	}
}

// statuses returns the assistant thread statuses set in thread (channel, ts), in order.
func statuses(srv *slacktest.Server, ch, ts string) []string {
	var out []string
	for _, call := range srv.CallsTo("assistant.threads.setStatus") {
		if call.Params["channel_id"] == ch && call.Params["thread_ts"] == ts {
			out = append(out, call.Params["status"])
		}
	}
	return out
}

// The thread status is set while a turn runs and cleared when it ends: done, failed or stopped.
func TestE2ESlackActivityCleared(t *testing.T) {
	p, srv, _, model := slackGateway(t, "")
	cleared := func(c *conv) func() bool {
		return func() bool { st := statuses(srv, c.ch, c.thread); return len(st) > 0 && st[len(st)-1] == "" }
	}

	done := p.newConv(t, "[act-1]")
	p.open(t, done, p.requester, "what time is it? [act-1]")
	done.waitMsg(t, afterToolText)
	p.waitFor(t, "the status cleared after done", cleared(done))
	// (Naming the running tool is shown by the channel's wire test with a tool that takes time:
	// current_time ends before a status update could show it, and updates coalesce.)
	if st := statuses(srv, done.ch, done.thread); len(st) < 2 || st[0] == "" {
		t.Errorf("statuses = %q, want set while the turn ran, then cleared", st)
	}

	model.fake.Enqueue(agenttest.StatusAnswer(http.StatusBadRequest))
	failed := p.newConv(t, "[act-2]")
	p.open(t, failed, p.requester, "this one fails [act-2]")
	failed.waitMsg(t, "(ref ")
	p.waitFor(t, "the status cleared after a failure", cleared(failed))

	stopped := p.newConv(t, "[act-3]")
	p.open(t, stopped, p.requester, "tell me a long story [act-3]")
	partial := stopped.waitMsg(t, "Once")
	p.react(t, stopped, partial.ID, p.requester, echogate.ReactionStop)
	stopped.waitMsg(t, "(stopped)")
	p.waitFor(t, "the status cleared after a stop", cleared(stopped))
}

// Mentioned mid-thread, the model gets the thread's earlier messages with display names.
func TestE2ESlackThreadContext(t *testing.T) {
	p, srv, _, model := slackGateway(t, "")
	srv.AddUser(slacktest.User{ID: "U0BOB", Name: "bob", DisplayName: "Bob"})
	c := p.newConv(t, "[ctx-1]")
	c.thread = "1500000000.000100"
	srv.RecordPost(slacktest.ChannelMessage(c.ch, "U0BOB", c.thread, "", "the deploy failed at 3am"))
	p.say(t, c, p.requester, "summarize this thread [ctx-1]")
	c.waitMsg(t, echoText)
	var got string
	for _, req := range model.fake.ChatRequests() {
		if u := req.LastUser(); strings.Contains(u, "[ctx-1]") {
			got = u
		}
	}
	if !strings.Contains(got, "Bob: the deploy failed at 3am") {
		t.Errorf("the model's user message = %q, want the earlier thread message attributed to Bob", got)
	}
}

// Discord: without the privileged MESSAGE CONTENT intent (the default) a mention is answered;
// the approval buttons decide like reactions, a stranger's press is ignored, and the prompt
// shows who decided; the application command answers privately.
func TestE2EDiscordButtonsAndCommands(t *testing.T) {
	srv := discordtest.NewServer(discordtest.Options{HeartbeatInterval: 200e6, DisallowedIntents: 1 << 15})
	t.Cleanup(srv.Close)
	model := newScriptedModel(t)
	vars := model.vars()
	vars["DISCORD_BOT_TOKEN"], vars["DISCORD_API_URL"] = srv.Token(), srv.APIURL
	g := startGateway(t, vars, approvalConfig)
	waitReadyz(t, g.base, http.StatusOK, "discord", func(s string) bool { return s != "" && !strings.HasPrefix(s, "not ready") })
	wait := func(what string, cond func() bool) {
		t.Helper()
		if err := srv.WaitFor(waitTimeout, what, cond); err != nil {
			t.Fatal(err)
		}
	}
	const guild, ch = "400000000000000077", "600000000000000077"
	ann := discordtest.User{ID: "500000000000000001", Username: "ann"}
	eve := discordtest.User{ID: "500000000000000009", Username: "eve"}
	find := func(parts ...string) (discordtest.Message, bool) {
		for _, m := range srv.BotMessages(ch) {
			if containsAll(m.Content, parts...) {
				return m, true
			}
		}
		return discordtest.Message{}, false
	}
	srv.SendGuildMessage(guild, ch, ann, "what time is it? [dbtn]", true)
	var prompt discordtest.Message
	wait("the approval prompt with buttons", func() bool {
		m, ok := find("Approval needed", "current_time")
		prompt = m
		return ok && strings.Contains(m.Components, "echogate_approve")
	})
	if _, err := srv.ClickButton(prompt.ID, eve, "echogate_approve"); err != nil {
		t.Fatal(err)
	}
	g.logs.waitLine(t, "approval reaction ignored", "discord:"+eve.ID)
	if _, err := srv.ClickButton(prompt.ID, ann, "echogate_approve"); err != nil {
		t.Fatal(err)
	}
	wait("the answer after the tool", func() bool { _, ok := find(afterToolText); return ok })
	if n := len(model.toolResults("[dbtn]", "current_time")); n != 1 {
		t.Errorf("current_time ran %d times, want once", n)
	}
	wait("the prompt showing the decider", func() bool {
		m, _ := srv.Message(prompt.ID)
		return strings.Contains(m.Content, "Approved once by ann") && m.Components == ""
	})

	iid := srv.RunCommand(guild, ch, ann, "echogate", "help", nil)
	wait("the private answer to /echogate help", func() bool { return len(srv.FollowUps()) == 1 })
	cbs := srv.Callbacks()
	var ack discordtest.Callback
	for _, cb := range cbs {
		if cb.InteractionID == iid {
			ack = cb
		}
	}
	if ack.Type != 5 || ack.Flags&64 == 0 {
		t.Errorf("command acknowledged with %+v, want a private deferred reply", ack)
	}
	if fu := srv.FollowUps()[0]; !strings.Contains(fu.Content, "usage") {
		t.Errorf("answer = %q, want the command list", fu.Content)
	}
	if sets := srv.CommandSets(); len(sets) != 1 || strings.Join(sets[0].Names, ",") != "echogate" {
		t.Errorf("registered commands = %+v, want /echogate once", sets)
	}
}
