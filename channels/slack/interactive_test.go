package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

// Mentioned mid-thread, the event carries the thread's earlier messages with display names,
// read once; a second mention in the same thread reads nothing again.
func TestThreadContextWithNames(t *testing.T) {
	e := newEnv(t, true, nil)
	e.srv.AddUser(slacktest.User{ID: "U1", Name: "ann", DisplayName: "Ann"})
	e.srv.AddUser(slacktest.User{ID: "U2", Name: "bob", RealName: "Bob Jones"})
	root := "1700000100.000100"
	e.srv.RecordPost(slacktest.ChannelMessage("C9", "U2", root, "", "the deploy failed at 3am"))
	e.srv.RecordPost(slacktest.ChannelMessage("C9", "U1", "1700000100.000200", root, "rolling back now"))
	e.push(slacktest.Mention("C9", "U1", "1700000100.000300", root, "<@UBOT> summarize this thread"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	evs, _ := e.rec.snapshot()
	want := []echogate.ThreadMessage{{Author: "Bob Jones", AuthorID: "U2", Text: "the deploy failed at 3am"}, {Author: "Ann", AuthorID: "U1", Text: "rolling back now"}}
	if got := evs[0].ThreadContext; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("thread context = %+v, want %+v", got, want)
	}
	if evs[0].Actor.Name != "Ann" || evs[0].Text != "summarize this thread" {
		t.Errorf("event actor/text = %+v / %q, want Ann asking to summarize", evs[0].Actor, evs[0].Text)
	}
	reads := len(e.srv.CallsTo("conversations.replies"))
	e.push(slacktest.Mention("C9", "U1", "1700000100.000400", root, "<@UBOT> and now?"), slacktest.Delivery{})
	e.rec.waitAnswered(2)
	evs, _ = e.rec.snapshot()
	if len(evs[1].ThreadContext) != 0 {
		t.Errorf("second mention carries context %+v, want none (the store has it)", evs[1].ThreadContext)
	}
	if n := len(e.srv.CallsTo("conversations.replies")); n != reads {
		t.Errorf("conversations.replies calls = %d after the second mention, want %d (no new read)", n, reads)
	}
	if n := len(e.srv.CallsTo("users.info")); n != 2 {
		t.Errorf("users.info calls = %d, want 2 (each name resolved once)", n)
	}
}

// The thread read respects conversations.replies' budget: a second new thread within the minute
// goes without context instead of waiting or exceeding it.
func TestThreadContextBudget(t *testing.T) {
	e := newEnv(t, true, nil)
	for _, th := range []string{"1700000200.000100", "1700000300.000100"} {
		e.srv.RecordPost(slacktest.ChannelMessage("C8", "U2", th, "", "earlier "+th))
		e.push(slacktest.Mention("C8", "U1", th[:11]+"000200", th, "<@UBOT> hi"), slacktest.Delivery{})
	}
	e.rec.waitAnswered(2)
	evs, _ := e.rec.snapshot()
	if len(evs[0].ThreadContext) != 1 || len(evs[1].ThreadContext) != 0 {
		t.Errorf("contexts = %d, %d messages; want 1 then 0 (budget of 1 read a minute)", len(evs[0].ThreadContext), len(evs[1].ThreadContext))
	}
	if n := len(e.srv.CallsTo("conversations.replies")); n != 1 {
		t.Errorf("conversations.replies calls = %d, want 1", n)
	}
}

// An approval prompt carries Block Kit buttons; a press is acknowledged at once and becomes the
// same event as the matching reaction, from the user who pressed it.
func TestButtonPressIsAReaction(t *testing.T) {
	e := newEnv(t, true, nil)
	conv := echogate.ConversationRef{Platform: "slack", Channel: "C7", Thread: "1700000400.000100"}
	ref, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: conv, Text: "🔐 run `x`?",
		Reactions: []string{echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := e.srv.BotMessages("C7")
	if len(msgs) != 1 || !strings.Contains(msgs[0].Blocks, `"echogate_approve"`) || !strings.Contains(msgs[0].Blocks, `"echogate_deny"`) ||
		!strings.Contains(msgs[0].Blocks, `"echogate_approve_session"`) {
		t.Fatalf("prompt blocks = %s, want the three approval buttons", msgs[0].Blocks)
	}
	env, err := e.srv.PushInteractive(slacktest.ButtonPress("U5", "eve", "C7", ref.ID, "echogate_approve_session"))
	if err != nil {
		t.Fatal(err)
	}
	e.waitAck(env)
	e.rec.waitEvents(1)
	evs, _ := e.rec.snapshot()
	ev := evs[0]
	if ev.Kind != echogate.KindReaction || ev.Reaction != echogate.ReactionApproveSession || ev.Target != ref || ev.Actor.ID != "U5" ||
		ev.Conversation.Thread != conv.Thread || ev.Actor.Name != "eve" {
		t.Errorf("button event = %+v, want the 🔁 reaction of U5 (eve) on %+v in thread %s", ev, ref, conv.Thread)
	}
	// Editing the prompt (the decision) replaces its blocks: the buttons are gone.
	if err := e.ch.Edit(context.Background(), ref, "🔐 `x`\n✅ Approved once by eve."); err != nil {
		t.Fatal(err)
	}
	if m := e.srv.BotMessages("C7")[0]; strings.Contains(m.Blocks, "echogate_approve") {
		t.Errorf("edited prompt blocks = %s, want no buttons", m.Blocks)
	}
}

// The slash command is acknowledged before the answer is ready (the sink is still busy with
// it), and answered privately through its response_url.
func TestSlashCommandAckedThenAnsweredPrivately(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, true, nil)
	e.rec.answer = func(ev echogate.InboundEvent) string { <-release; return "usage: $0.01 today" }
	// A post first: the command acts on the user's conversation in that channel.
	e.push(slacktest.Mention("C6", "U1", "1700000500.000100", "", "<@UBOT> hi"), slacktest.Delivery{})
	close(release)
	e.rec.waitAnswered(1)

	block := make(chan struct{})
	e.rec.answer = func(ev echogate.InboundEvent) string { <-block; return "ok" }
	env, err := e.srv.PushSlashCommand(slacktest.SlashCommand("/echogate", "usage", "U1", "C6", e.srv.ResponseURL("r1"), "trig-1"))
	if err != nil {
		t.Fatal(err)
	}
	e.waitAck(env) // acknowledged while the answer is still being made
	e.rec.waitEvents(2)
	close(block)
	evs, _ := e.rec.snapshot()
	ev := evs[1]
	if ev.Text != "/usage" || ev.Interaction != e.srv.ResponseURL("r1") || ev.Conversation.Thread != "1700000500.000100" || ev.Actor.ID != "U1" {
		t.Fatalf("command event = %+v, want /usage from U1 in its thread, answered through r1", ev)
	}
	if _, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutNotice, Conversation: ev.Conversation,
		Text: "Your spend today: **$0.01**", Interaction: ev.Interaction}); err != nil {
		t.Fatal(err)
	}
	rs := e.srv.Responses()
	if len(rs) != 1 || rs[0].ResponseType != "ephemeral" || rs[0].Text != "Your spend today: *$0.01*" {
		t.Errorf("responses = %+v, want one ephemeral answer in mrkdwn", rs)
	}
	// Another app's command, or a response_url that is not Slack's, goes nowhere.
	if _, err := e.ch.Send(context.Background(), echogate.Outbound{Conversation: ev.Conversation, Text: "x", Interaction: "https://evil.example/hook"}); err == nil {
		t.Error("Send through a foreign response_url = nil, want an error")
	}
}

// A new assistant thread gets the configured suggested prompts.
func TestSuggestedPromptsAtThreadStart(t *testing.T) {
	e := newEnv(t, true, func(c *Config) {
		c.SuggestedPrompts = []SuggestedPrompt{{Title: "Summarize", Message: "Summarize my unread threads"}}
	})
	e.push(slacktest.AssistantThreadStarted("U1", "D4", "1700000600.000100"), slacktest.Delivery{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(ctx, func() bool { return len(e.srv.CallsTo("assistant.threads.setSuggestedPrompts")) == 1 }); err != nil {
		t.Fatalf("suggested prompts not set: %v", err)
	}
	c := e.srv.CallsTo("assistant.threads.setSuggestedPrompts")[0]
	if c.Params["channel_id"] != "D4" || c.Params["thread_ts"] != "1700000600.000100" || !strings.Contains(c.Params["prompts"], "Summarize my unread threads") {
		t.Errorf("setSuggestedPrompts params = %v", c.Params)
	}
}

// Slack's native stop button becomes the stop command of the thread's session.
func TestNativeStopIsTheStopCommand(t *testing.T) {
	e := newEnv(t, true, nil)
	e.push(slacktest.AgentSessionStopped("U1", "D3", "1700000700.000100", "1700000700.000900"), slacktest.Delivery{})
	e.rec.waitEvents(1)
	evs, _ := e.rec.snapshot()
	ev := evs[0]
	want := echogate.ConversationRef{Platform: "slack", Workspace: slacktest.DefaultTeamID, Channel: "D3", DM: true, Thread: "1700000700.000100"}
	if ev.Text != "stop" || ev.Conversation != want || ev.Actor.ID != "U1" {
		t.Errorf("event = %+v, want stop from U1 in %+v", ev, want)
	}
}

// Over the HTTP Events API, buttons and slash commands arrive form-encoded at the same URL,
// signed; both are answered 200 at once and handed on; a bad signature gets 401.
func TestInteractionsOverHTTP(t *testing.T) {
	// Real time: an interaction's answer waits for the sink up to httpInteractionWait, which the
	// scaled clock would shrink to 50 ms.
	e := newEnv(t, false, func(c *Config) { c.Clock = systemClock{} })
	h := e.ch.EventsHandler()
	do := func(req *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	now := e.clock.Now()
	ref, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutApprovalPrompt,
		Conversation: echogate.ConversationRef{Platform: "slack", Channel: "C5", Thread: "1700000800.000100"}, Text: "🔐 run `x`?"})
	if err != nil {
		t.Fatal(err)
	}
	press := slacktest.PayloadForm(slacktest.ButtonPress("U1", "ann", "C5", ref.ID, "echogate_approve"))
	if code := do(slacktest.FormRequest("/slack/events", "wrong-secret", press, now)); code != http.StatusUnauthorized {
		t.Errorf("unsigned button press = %d, want 401", code)
	}
	if code := do(slacktest.FormRequest("/slack/events", testSecret, press, now)); code != http.StatusOK {
		t.Fatalf("button press = %d, want 200", code)
	}
	cmd := slacktest.CommandForm(slacktest.SlashCommand("/echogate", "help", "U1", "C5", e.srv.ResponseURL("h1"), "trig-h1"))
	if code := do(slacktest.FormRequest("/slack/events", testSecret, cmd, now)); code != http.StatusOK {
		t.Fatalf("slash command = %d, want 200", code)
	}
	e.rec.waitEvents(2)
	evs, _ := e.rec.snapshot()
	if evs[0].Reaction != echogate.ReactionApprove || evs[0].Target != ref || evs[1].Text != "/help" || evs[1].Interaction != e.srv.ResponseURL("h1") {
		t.Errorf("events = %+v, want the ✅ press then /help with its response_url", evs)
	}
}

// With native streaming the turn's tool calls show as task cards in the reply, each updated
// when its state changes; the thread status names the running tool and is cleared at the end.
func TestActivityTaskCardsAndStatus(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: "slack", Channel: "D2", DM: true, Thread: "1700000900.000100"}
	view := e.ch.StartActivity(ctx, conv, echogate.MessageRef{Platform: "slack", Channel: "D2", ID: "1700000900.000200"})
	st, err := e.ch.StartStream(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: conv})
	if err != nil {
		t.Fatal(err)
	}
	running := []echogate.ActivityTask{{ID: "call_1", Title: "http_fetch", Status: echogate.TaskRunning}}
	view.Show(echogate.Activity{Status: "is running http_fetch…", Tools: []string{"http_fetch"}, Tasks: running, Plan: "**Check the site**\n🔄 1. fetch it\n"})
	_ = st.Append(ctx, "Fetching")
	wait := func(what string, cond func(m slacktest.Message) bool) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := e.srv.WaitFor(wctx, func() bool {
			msgs := e.srv.BotMessages("D2")
			return len(msgs) == 1 && cond(msgs[0])
		}); err != nil {
			t.Fatalf("%s: %v; messages %+v", what, err, e.srv.BotMessages("D2"))
		}
	}
	wait("a running task card", func(m slacktest.Message) bool {
		return m.Streamed && len(m.Tasks) == 1 && m.Tasks[0] == slacktest.Task{ID: "call_1", Title: "http_fetch", Status: "in_progress"} &&
			m.PlanTitle == "Check the site"
	})
	// Updates coalesce (a status replaced before it was shown is skipped): wait for it.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(wctx, func() bool {
		for _, c := range e.srv.CallsTo("assistant.threads.setStatus") {
			if c.Params["status"] == "is running http_fetch…" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the running tool was never named in the thread status: %v", err)
	}
	view.Show(echogate.Activity{Status: "is thinking…", Tasks: []echogate.ActivityTask{{ID: "call_1", Title: "http_fetch", Status: echogate.TaskDone}}})
	if _, err := st.Finish(ctx, "Fetching done."); err != nil {
		t.Fatal(err)
	}
	view.End()
	wait("the finished reply with its task complete", func(m slacktest.Message) bool {
		return !m.Streaming && m.Text == "Fetching done." && len(m.Tasks) == 1 && m.Tasks[0].Status == "complete"
	})
	var statuses []string
	for _, c := range e.srv.CallsTo("assistant.threads.setStatus") {
		statuses = append(statuses, c.Params["status"])
	}
	if got := strings.Join(statuses, "|"); !strings.Contains(got, "is running http_fetch…") || !strings.HasSuffix(got, "|") {
		t.Errorf("statuses = %q, want the running tool named, then cleared", got)
	}
	if n := len(e.srv.CallsTo("agents.sessions.setStatus")); n != 2 {
		t.Errorf("agent session status calls = %d, want 2 (processing, then active)", n)
	}
}
