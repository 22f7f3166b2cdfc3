package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

func TestSocketMentionAnsweredInThreadWithStream(t *testing.T) {
	e := newEnv(t, true, nil)
	envID := e.push(slacktest.Mention("C1", "U1", "1700000000.000100", "", "<@UBOT> what is up?"), slacktest.Delivery{})
	e.waitAck(envID)
	e.rec.waitAnswered(1)
	e.noErrors()

	evs, _ := e.rec.snapshot()
	ev := evs[0]
	wantConv := echogate.ConversationRef{Platform: "slack", Workspace: slacktest.DefaultTeamID, Channel: "C1", Thread: "1700000000.000100"}
	if ev.Conversation != wantConv || ev.Kind != echogate.KindMention || ev.Text != "what is up?" || ev.ID != "C1:1700000000.000100" || ev.Actor.ID != "U1" {
		t.Fatalf("event = %+v, want mention %+v with text %q", ev, wantConv, "what is up?")
	}
	replies := e.threadReplies("C1", "1700000000.000100")
	if len(replies) != 1 {
		t.Fatalf("bot replies in thread = %d, want 1 (%+v)", len(replies), e.srv.BotMessages("C1"))
	}
	want := "Hello **there**, you said: what is up?"
	if !replies[0].Streamed || replies[0].Streaming || replies[0].Text != want {
		t.Fatalf("reply = %+v, want a finished native stream with text %q", replies[0], want)
	}
	if n := len(e.srv.CallsTo("chat.startStream")); n != 1 {
		t.Errorf("chat.startStream calls = %d, want 1", n)
	}
	if n := len(e.srv.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("chat.postMessage calls = %d, want 0 (native stream)", n)
	}
	if c := e.srv.CallsTo("chat.startStream")[0]; c.Params["recipient_user_id"] != "U1" || c.Params["recipient_team_id"] != slacktest.DefaultTeamID {
		t.Errorf("startStream params = %v, want recipient U1 in %s", c.Params, slacktest.DefaultTeamID)
	}
	// Progress: the assistant status was set and cleared.
	st := e.srv.CallsTo("assistant.threads.setStatus")
	if len(st) < 2 || st[0].Params["status"] == "" || st[len(st)-1].Params["status"] != "" {
		t.Errorf("setStatus calls = %+v, want set then cleared", st)
	}
}

func TestSocketDMAnswered(t *testing.T) {
	e := newEnv(t, true, nil)
	e.push(slacktest.DM("D1", "U2", "1700000000.000200", "hi &amp; hello"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	e.noErrors()
	evs, _ := e.rec.snapshot()
	want := echogate.ConversationRef{Platform: "slack", Workspace: slacktest.DefaultTeamID, Channel: "D1", DM: true}
	if evs[0].Conversation != want || evs[0].Kind != echogate.KindDirect || evs[0].Text != "hi & hello" {
		t.Fatalf("event = %+v, want DM %+v text %q", evs[0], want, "hi & hello")
	}
	msgs := e.srv.BotMessages("D1")
	if len(msgs) != 1 || msgs[0].ThreadTS != "" || msgs[0].Text != "Hello *there*, you said: hi &amp; hello" {
		t.Fatalf("DM replies = %+v, want one top-level message in mrkdwn", msgs)
	}
	// Top-level DM: no thread, so no native stream and a 👀 reaction for progress, removed.
	if n := len(e.srv.CallsTo("chat.startStream")); n != 0 {
		t.Errorf("chat.startStream calls = %d, want 0 for a top-level DM", n)
	}
	if add, rm := len(e.srv.CallsTo("reactions.add")), len(e.srv.CallsTo("reactions.remove")); add != 1 || rm != 1 {
		t.Errorf("reactions add/remove = %d/%d, want 1/1 (👀 during the turn)", add, rm)
	}
}

func TestOwnAndBotMessagesIgnored(t *testing.T) {
	e := newEnv(t, true, nil)
	e.push(slacktest.BotMessage("D1", "im", "UBOT", "BBOT", "1700000000.000001", "my own echo"), slacktest.Delivery{})
	e.push(slacktest.BotMessage("D1", "im", "UOTHER", "BOTHER", "1700000000.000002", "another bot"), slacktest.Delivery{})
	e.push(slacktest.Mention("C1", "UBOT", "1700000000.000003", "", "<@UBOT> self mention"), slacktest.Delivery{})
	edit := slacktest.DM("D1", "U1", "1700000000.000004", "edited")
	edit["subtype"] = "message_changed"
	e.push(edit, slacktest.Delivery{})
	join := slacktest.ChannelMessage("C1", "U1", "1700000000.000005", "", "<@U1> has joined")
	join["subtype"] = "channel_join"
	e.push(join, slacktest.Delivery{})
	chatter := slacktest.ChannelMessage("C1", "U1", "1700000000.000006", "", "room chatter")
	e.push(chatter, slacktest.Delivery{})
	// Sentinels in both channels: events of one channel are handled in order.
	e.push(slacktest.DM("D1", "U1", "1700000000.000010", "real"), slacktest.Delivery{})
	e.push(slacktest.Mention("C1", "U1", "1700000000.000011", "", "<@UBOT> real"), slacktest.Delivery{})
	e.rec.waitAnswered(2)
	evs, _ := e.rec.snapshot()
	if len(evs) != 2 {
		t.Fatalf("events = %+v, want only the two real posts", evs)
	}
	for _, ev := range evs {
		if ev.Text != "real" {
			t.Errorf("event text = %q, want %q", ev.Text, "real")
		}
	}
}

func TestRetriesAndMentionPairAnsweredOnce(t *testing.T) {
	e := newEnv(t, true, nil)
	ts := "1700000000.000300"
	// The same post as message.channels and app_mention, then Slack retrying the app_mention.
	e.push(slacktest.ChannelMessage("C1", "U1", ts, "", "<@UBOT> once please"), slacktest.Delivery{EventID: "EvA"})
	e.push(slacktest.Mention("C1", "U1", ts, "", "<@UBOT> once please"), slacktest.Delivery{EventID: "EvB"})
	e.push(slacktest.Mention("C1", "U1", ts, "", "<@UBOT> once please"), slacktest.Delivery{EventID: "EvB", RetryAttempt: 1})
	env4 := e.push(slacktest.Mention("C1", "U1", ts, "", "<@UBOT> once please"), slacktest.Delivery{EventID: "EvB", RetryAttempt: 2})
	e.waitAck(env4)
	e.push(slacktest.Mention("C1", "U1", "1700000000.000301", "", "<@UBOT> sentinel"), slacktest.Delivery{})
	e.rec.waitAnswered(2)
	e.noErrors()
	if got := e.threadReplies("C1", ts); len(got) != 1 {
		t.Fatalf("answers in thread %s = %d, want 1: %+v", ts, len(got), got)
	}
	if evs, _ := e.rec.snapshot(); len(evs) != 2 {
		t.Fatalf("events = %d, want 2 (one per post)", len(evs))
	}
}

func TestEventsAPI(t *testing.T) {
	e := newEnv(t, false, nil)
	h := e.ch.EventsHandler()
	do := func(req *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	now := e.clock.Now()
	mention := slacktest.Callback("T0001", "EvH1", slacktest.Mention("C9", "U1", "1700000000.000400", "", "<@UBOT> over http"))

	t.Run("url_verification", func(t *testing.T) {
		w := do(slacktest.EventsRequest("/slack/events", testSecret, slacktest.URLVerification("chal-123"), now, 0))
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"challenge":"chal-123"`) {
			t.Fatalf("url_verification = %d %q, want 200 with the challenge", w.Code, w.Body.String())
		}
	})
	for name, req := range map[string]*http.Request{
		"bad signature":    slacktest.EventsRequest("/slack/events", "wrong-secret", mention, now, 0),
		"stale timestamp":  slacktest.EventsRequest("/slack/events", testSecret, mention, now.Add(-6*time.Minute), 0),
		"future timestamp": slacktest.EventsRequest("/slack/events", testSecret, mention, now.Add(6*time.Minute), 0),
	} {
		t.Run(name, func(t *testing.T) {
			if w := do(req); w.Code != http.StatusUnauthorized {
				t.Fatalf("%s: status = %d, want 401", name, w.Code)
			}
		})
	}
	t.Run("missing signature", func(t *testing.T) {
		req := slacktest.EventsRequest("/slack/events", testSecret, mention, now, 0)
		req.Header.Del("X-Slack-Signature")
		if w := do(req); w.Code != http.StatusUnauthorized {
			t.Fatalf("status = %d, want 401", w.Code)
		}
	})
	if evs, _ := e.rec.snapshot(); len(evs) != 0 {
		t.Fatalf("events after refused requests = %d, want 0", len(evs))
	}

	if w := do(slacktest.EventsRequest("/slack/events", testSecret, mention, now, 0)); w.Code != 200 {
		t.Fatalf("signed event = %d %q, want 200", w.Code, w.Body.String())
	}
	for retry := 1; retry <= 2; retry++ {
		if w := do(slacktest.EventsRequest("/slack/events", testSecret, mention, e.clock.Now(), retry)); w.Code != 200 {
			t.Fatalf("retry %d = %d, want 200", retry, w.Code)
		}
	}
	sentinel := slacktest.Callback("T0001", "EvH2", slacktest.Mention("C9", "U1", "1700000000.000401", "", "<@UBOT> sentinel"))
	do(slacktest.EventsRequest("/slack/events", testSecret, sentinel, e.clock.Now(), 0))
	e.rec.waitAnswered(2)
	e.noErrors()
	if got := e.threadReplies("C9", "1700000000.000400"); len(got) != 1 {
		t.Fatalf("answers = %d, want 1 despite 2 retries: %+v", len(got), got)
	}
	if ok, detail := e.ch.Ready(); !ok {
		t.Errorf("Ready = false (%s), want true in Events API mode", detail)
	}
}

func TestPost429RetriedAfterRetryAfter(t *testing.T) {
	e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = true })
	e.srv.Fail("chat.postMessage", slacktest.Failure{Status: 429, RetryAfter: 2})
	ref, err := e.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutReply,
		Conversation: echogate.ConversationRef{Platform: "slack", Channel: "C1", Thread: "1700000000.000500"}, Text: "final answer"})
	if err != nil {
		t.Fatalf("Send = %v, want nil", err)
	}
	calls := e.srv.CallsTo("chat.postMessage")
	if len(calls) != 2 || calls[0].Status != 429 || calls[1].Status != 200 {
		t.Fatalf("postMessage calls = %+v, want 429 then 200", calls)
	}
	if gap := calls[1].Time.Sub(calls[0].Time); gap < 2*time.Second {
		t.Errorf("retry after %s, want >= Retry-After 2s", gap)
	}
	msgs := e.threadReplies("C1", "1700000000.000500")
	if len(msgs) != 1 || msgs[0].TS != ref.ID || msgs[0].Text != "final answer" {
		t.Fatalf("messages = %+v, want the answer once as %s", msgs, ref.ID)
	}
}

func TestStream429OnFirstPostStillAnswersOnce(t *testing.T) {
	e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = true })
	e.srv.Fail("chat.postMessage", slacktest.Failure{Status: 429, RetryAfter: 1})
	e.push(slacktest.Mention("C1", "U1", "1700000000.000600", "", "<@UBOT> hi"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	e.noErrors()
	if got := e.threadReplies("C1", "1700000000.000600"); len(got) != 1 || got[0].Text != "Hello *there*, you said: hi" {
		t.Fatalf("answers = %+v, want one with the whole answer", got)
	}
}

func TestOKFalseLoggedAndAnswerStillArrives(t *testing.T) {
	e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = true })
	e.srv.Fail("chat.postMessage", slacktest.Failure{Error: "invalid_blocks"})
	ref, err := e.ch.Send(context.Background(), echogate.Outbound{Conversation: echogate.ConversationRef{Channel: "C1", Thread: "1700000000.000700"}, Text: "still **here**"})
	if err != nil {
		t.Fatalf("Send = %v, want nil after plain-text fallback", err)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "method=chat.postMessage") || !strings.Contains(logs, "error=invalid_blocks") {
		t.Errorf("logs lack method and error of the ok:false answer:\n%s", logs)
	}
	msgs := e.threadReplies("C1", "1700000000.000700")
	if len(msgs) != 1 || msgs[0].TS != ref.ID || msgs[0].Blocks != "" || msgs[0].Text != "still *here*" {
		t.Fatalf("messages = %+v, want one plain-text answer", msgs)
	}

	// A permanent ok:false is a clear error, never swallowed.
	e.srv.Fail("chat.postMessage", slacktest.Failure{Error: "channel_not_found"})
	_, err = e.ch.Send(context.Background(), echogate.Outbound{Conversation: echogate.ConversationRef{Channel: "C404"}, Text: "x"})
	var ae *APIError
	if !errors.Is(err, ErrSlackAPI) || !errors.As(err, &ae) || ae.Code != "channel_not_found" || !strings.Contains(err.Error(), "chat.postMessage") {
		t.Fatalf("Send error = %v, want an APIError channel_not_found naming chat.postMessage", err)
	}
}

func TestStreamUpdateOKFalseFallsBackToNewPost(t *testing.T) {
	e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = true })
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: "slack", Channel: "C1", Thread: "1700000000.000750"}
	st, err := e.ch.StartStream(ctx, echogate.Outbound{Conversation: conv})
	if err != nil {
		t.Fatalf("StartStream = %v", err)
	}
	if err := st.Append(ctx, "partial"); err != nil {
		t.Fatalf("Append = %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(wctx, func() bool { return len(e.srv.CallsTo("chat.postMessage")) == 1 }); err != nil {
		t.Fatal(err)
	}
	e.srv.Fail("chat.update", slacktest.Failure{Error: "cant_update_message"})
	refs, err := st.Finish(ctx, "partial and the rest")
	if err != nil {
		t.Fatalf("Finish = %v, want nil", err)
	}
	msgs := e.threadReplies("C1", conv.Thread)
	if len(msgs) != 1 || msgs[0].Text != "partial and the rest" || len(refs) != 1 || refs[0].ID != msgs[0].TS {
		t.Fatalf("messages = %+v refs = %+v, want the whole answer once (partial deleted)", msgs, refs)
	}
	if !strings.Contains(e.logs.String(), "method=chat.update") {
		t.Errorf("ok:false on chat.update not logged with its method")
	}
	if _, err := st.Finish(ctx, "again"); !errors.Is(err, ErrStreamDone) {
		t.Errorf("second Finish = %v, want ErrStreamDone", err)
	}
	if err := st.Append(ctx, "more"); !errors.Is(err, ErrStreamDone) {
		t.Errorf("Append after Finish = %v, want ErrStreamDone", err)
	}
}

func TestAmbiguousPostNotDuplicated(t *testing.T) {
	for name, tt := range map[string]struct {
		f         slacktest.Failure
		wantPosts int // postMessage calls
	}{
		"5xx after posting":          {slacktest.Failure{Status: 500, Process: true}, 1},
		"connection drop after post": {slacktest.Failure{Drop: true, Process: true}, 1},
		"timeout after posting":      {slacktest.Failure{Process: true, Delay: 5 * time.Second}, 1},
		"5xx before posting":         {slacktest.Failure{Status: 502}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, true, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
			e.srv.Fail("chat.postMessage", tt.f)
			thread := "1700000000.000800"
			ref, err := e.ch.Send(context.Background(), echogate.Outbound{Conversation: echogate.ConversationRef{Channel: "C1", Thread: thread}, Text: "exactly once"})
			if err != nil {
				t.Fatalf("Send = %v, want nil", err)
			}
			msgs := e.threadReplies("C1", thread)
			if len(msgs) != 1 || msgs[0].TS != ref.ID {
				t.Fatalf("messages = %+v, want exactly one, %s", msgs, ref.ID)
			}
			if n := len(e.srv.CallsTo("chat.postMessage")); n != tt.wantPosts {
				t.Errorf("postMessage calls = %d, want %d", n, tt.wantPosts)
			}
		})
	}
}

func TestApprovalPromptReactionsAndReactionEvents(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx := context.Background()
	conv := echogate.ConversationRef{Platform: "slack", Workspace: "T0001", Channel: "C1", Thread: "1700000000.000900"}
	ref, err := e.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutApprovalPrompt, Conversation: conv, Text: "Run `rm`?",
		Reactions: []string{echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny}})
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	msgs := e.threadReplies("C1", conv.Thread)
	if len(msgs) != 1 || strings.Join(msgs[0].Reactions, ",") != "white_check_mark,repeat,x" {
		t.Fatalf("prompt = %+v, want reactions white_check_mark,repeat,x", msgs)
	}
	// Slack echoes the bot's own reactions: ignored. A user's ✅ and 🛑 become events.
	e.push(slacktest.Reaction("UBOT", "white_check_mark", "C1", ref.ID, "UBOT"), slacktest.Delivery{})
	e.push(slacktest.Reaction("U1", "thumbsup", "C1", ref.ID, "UBOT"), slacktest.Delivery{})
	e.push(slacktest.Reaction("U1", "white_check_mark", "C1", "1700000000.000901", "U2"), slacktest.Delivery{})
	e.push(slacktest.Reaction("U1", "heavy_check_mark", "C1", ref.ID, "UBOT"), slacktest.Delivery{EventID: "EvR1"})
	e.push(slacktest.Reaction("U1", "octagonal_sign", "C1", ref.ID, "UBOT"), slacktest.Delivery{EventID: "EvR2"})
	e.rec.waitEvents(2)
	evs, _ := e.rec.snapshot()
	if len(evs) != 2 {
		t.Fatalf("events = %+v, want 2 reactions", evs)
	}
	for i, want := range []string{echogate.ReactionApprove, echogate.ReactionStop} {
		ev := evs[i]
		if ev.Kind != echogate.KindReaction || ev.Reaction != want || ev.Target != ref || ev.Conversation != conv || ev.Actor.ID != "U1" || ev.ID != []string{"EvR1", "EvR2"}[i] {
			t.Errorf("event %d = %+v, want reaction %s on %v in %v", i, ev, want, ref, conv)
		}
	}
}

func TestReactionAfterRestartLooksUpThread(t *testing.T) {
	e := newEnv(t, true, nil)
	// A bot message posted before the restart: the channel has no memory of it.
	ts := e.srv.AddMessage(slacktest.Message{Channel: "C2", ThreadTS: "1700000000.001000", User: "UBOT", BotID: "BBOT", Text: "prompt"})
	dmTS := e.srv.AddMessage(slacktest.Message{Channel: "D2", User: "UBOT", BotID: "BBOT", Text: "dm prompt"})
	e.push(slacktest.Reaction("U1", "x", "C2", ts, "UBOT"), slacktest.Delivery{EventID: "EvX"})
	e.push(slacktest.Reaction("U1", "repeat", "D2", dmTS, "UBOT"), slacktest.Delivery{EventID: "EvY"})
	e.rec.waitEvents(2)
	evs, _ := e.rec.snapshot()
	byID := map[string]echogate.InboundEvent{evs[0].ID: evs[0], evs[1].ID: evs[1]}
	if c := byID["EvX"].Conversation; c.Channel != "C2" || c.Thread != "1700000000.001000" || c.DM || byID["EvX"].Reaction != echogate.ReactionDeny {
		t.Errorf("channel reaction = %+v, want ❌ in thread 1700000000.001000", byID["EvX"])
	}
	if c := byID["EvY"].Conversation; c.Channel != "D2" || c.Thread != "" || !c.DM || byID["EvY"].Reaction != echogate.ReactionApproveSession {
		t.Errorf("DM reaction = %+v, want 🔁 in the DM session", byID["EvY"])
	}
}

func TestThreadFollowUpsWhenMentionNotRequired(t *testing.T) {
	e := newEnv(t, true, func(c *Config) {
		c.Channels = map[string]ChannelConfig{"C5": {RequireMention: Bool(false)}}
	})
	thread := "1700000000.001100"
	e.push(slacktest.Mention("C5", "U1", thread, "", "<@UBOT> start"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	e.push(slacktest.ChannelMessage("C5", "U1", "1700000000.001101", thread, "follow-up without mention"), slacktest.Delivery{})
	// Not in a thread the bot is in, and a channel that requires mentions: both ignored.
	e.push(slacktest.ChannelMessage("C5", "U1", "1700000000.001102", "1700000000.000001", "other thread"), slacktest.Delivery{})
	e.push(slacktest.ChannelMessage("C6", "U1", "1700000000.001103", thread, "mention required here"), slacktest.Delivery{})
	e.push(slacktest.Mention("C6", "U1", "1700000000.001104", "", "<@UBOT> sentinel"), slacktest.Delivery{})
	e.push(slacktest.Mention("C5", "U1", "1700000000.001105", "", "<@UBOT> sentinel"), slacktest.Delivery{})
	e.rec.waitAnswered(4)
	e.noErrors()
	evs, _ := e.rec.snapshot()
	perChannel := map[string][]string{}
	var followUp echogate.InboundEvent
	for _, ev := range evs {
		perChannel[ev.Conversation.Channel] = append(perChannel[ev.Conversation.Channel], ev.Text)
		if ev.Text == "follow-up without mention" {
			followUp = ev
		}
	}
	if got := strings.Join(perChannel["C5"], "|"); got != "start|follow-up without mention|sentinel" {
		t.Errorf("answered in C5 = %q, want start, the follow-up and the sentinel", got)
	}
	if got := strings.Join(perChannel["C6"], "|"); got != "sentinel" {
		t.Errorf("answered in C6 = %q, want only the sentinel (mention required)", got)
	}
	if followUp.Conversation.Thread != thread || followUp.Kind != echogate.KindMention {
		t.Errorf("follow-up = %+v, want a mention in thread %s", followUp, thread)
	}
}

func TestSocketReconnect(t *testing.T) {
	e := newEnv(t, true, nil)
	waitReady := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if ok, _ := e.ch.Ready(); ok == want {
				return
			}
			if time.Now().After(deadline) {
				_, d := e.ch.Ready()
				t.Fatalf("Ready stayed %v (%s), want %v", !want, d, want)
			}
			select {
			case <-time.After(5 * time.Millisecond): // polling a readiness flag set by the websocket protocol
			}
		}
	}
	waitReady(true)
	e.srv.DropConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(ctx, func() bool { return e.srv.Connects() >= 2 && e.srv.OpenConnections() == 1 }); err != nil {
		t.Fatalf("no reconnect after drop: %v", err)
	}
	waitReady(true)
	e.srv.SendDisconnect("refresh_requested")
	if err := e.srv.WaitFor(ctx, func() bool { return e.srv.Connects() >= 3 && e.srv.OpenConnections() == 1 }); err != nil {
		t.Fatalf("no reconnect after disconnect request: %v", err)
	}
	e.push(slacktest.DM("D1", "U1", "1700000000.001200", "after reconnect"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	e.noErrors()
	if err := e.srv.WaitFor(ctx, func() bool { return e.srv.Pongs() > 0 }); err != nil {
		t.Errorf("client never answered a ping: %v", err)
	}
}

func TestLongAnswerSplit(t *testing.T) {
	e := newEnv(t, true, func(c *Config) { c.DisableNativeStreaming = true })
	para := strings.Repeat("word ", 199) + "end.\n\n"
	long := strings.Repeat(para, 50) // ~50,000 characters
	e.rec.answer = func(echogate.InboundEvent) string { return long }
	e.push(slacktest.Mention("C1", "U1", "1700000000.001300", "", "<@UBOT> long"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	e.noErrors()
	msgs := e.threadReplies("C1", "1700000000.001300")
	if len(msgs) != 2 {
		t.Fatalf("messages = %d, want 2 for a 50k-character answer", len(msgs))
	}
	var joined []string
	for _, m := range msgs {
		if n := len([]rune(m.Text)); n > 40000 {
			t.Errorf("message of %d characters, want <= 40000", n)
		}
		joined = append(joined, m.Text)
	}
	if got := strings.Join(joined, "\n\n"); strings.TrimSpace(got) != strings.TrimSpace(long) {
		t.Errorf("split answer does not reassemble to the original (len %d vs %d)", len(got), len(long))
	}
}

func TestTypingFallsBackToReaction(t *testing.T) {
	e := newEnv(t, true, nil)
	e.srv.SetAssistantStatus(false)
	on := echogate.MessageRef{Platform: "slack", Channel: "C1", ID: e.srv.AddMessage(slacktest.Message{Channel: "C1", User: "U1", Text: "hi"})}
	stop := e.ch.StartTyping(context.Background(), echogate.ConversationRef{Channel: "C1", Thread: on.ID}, on)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.WaitFor(ctx, func() bool { return len(e.srv.CallsTo("reactions.add")) == 1 }); err != nil {
		t.Fatalf("no 👀 reaction: %v", err)
	}
	stop()
	stop() // idempotent
	if m := e.srv.Messages("C1")[0]; len(m.Reactions) != 0 {
		t.Fatalf("reactions after stop = %v, want none", m.Reactions)
	}
	if n := len(e.srv.CallsTo("reactions.remove")); n != 1 {
		t.Errorf("reactions.remove calls = %d, want 1", n)
	}
}

func TestNativeStreamingUnsupportedFallsBack(t *testing.T) {
	e := newEnv(t, true, nil)
	e.srv.SetNativeStreaming(false)
	e.push(slacktest.Mention("C1", "U1", "1700000000.001400", "", "<@UBOT> a"), slacktest.Delivery{})
	e.rec.waitAnswered(1)
	e.push(slacktest.Mention("C1", "U1", "1700000000.001401", "", "<@UBOT> b"), slacktest.Delivery{})
	e.rec.waitAnswered(2)
	e.noErrors()
	if n := len(e.srv.CallsTo("chat.startStream")); n != 1 {
		t.Errorf("chat.startStream calls = %d, want 1 (unsupported remembered)", n)
	}
	for _, ts := range []string{"1700000000.001400", "1700000000.001401"} {
		if got := e.threadReplies("C1", ts); len(got) != 1 || got[0].Streamed {
			t.Errorf("answers in %s = %+v, want one chat.postMessage answer", ts, got)
		}
	}
}
