package discord

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

// testSink dedupes events by DedupeKey like the dispatcher does and answers messages through the
// channel, off the gateway reader (as the dispatcher's mailbox does).
type testSink struct {
	t      *testing.T
	ch     *Channel
	answer func(ev echogate.InboundEvent) string // "" → no answer

	mu     sync.Mutex
	seen   map[string]bool
	events []echogate.InboundEvent
	dups   int
	wg     sync.WaitGroup
}

func (s *testSink) accept(ctx context.Context, ev echogate.InboundEvent) error {
	s.mu.Lock()
	if s.seen[ev.DedupeKey()] {
		s.dups++
		s.mu.Unlock()
		return nil
	}
	s.seen[ev.DedupeKey()] = true
	s.events = append(s.events, ev)
	s.mu.Unlock()
	if ev.Kind == echogate.KindReaction || s.answer == nil {
		return nil
	}
	text := s.answer(ev)
	if text == "" {
		return nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := s.ch.Send(ctx, echogate.Outbound{Kind: echogate.OutReply, Conversation: ev.Conversation, ReplyTo: ev.Message, Text: text}); err != nil {
			s.t.Errorf("Send(answer to %s) = %v", ev.ID, err)
		}
	}()
	return nil
}

func (s *testSink) snapshot() ([]echogate.InboundEvent, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]echogate.InboundEvent(nil), s.events...), s.dups
}

type harness struct {
	srv    *discordtest.Server
	ch     *Channel
	sink   *testSink
	cancel context.CancelFunc
	runErr chan error
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("DISCORD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// fastConfig is a Config for the fake: short backoff and health checks.
func fastConfig(srv *discordtest.Server) Config {
	return Config{
		Token:          srv.Token(),
		APIURL:         srv.APIURL,
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
		HealthInterval: 20 * time.Millisecond,
		StableAfter:    200 * time.Millisecond,
		OpenTimeout:    5 * time.Second,
	}
}

func start(t *testing.T, opts discordtest.Options, mut func(*Config), answer func(echogate.InboundEvent) string) *harness {
	t.Helper()
	srv := discordtest.NewServer(opts)
	cfg := fastConfig(srv)
	if mut != nil {
		mut(&cfg)
	}
	ch, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	h := &harness{srv: srv, ch: ch, runErr: make(chan error, 1)}
	h.sink = &testSink{t: t, ch: ch, answer: answer, seen: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.runErr <- ch.Run(ctx, h.sink.accept) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.runErr:
			if err != nil && opts.DisallowedIntents == 0 {
				t.Errorf("Run = %v, want nil after cancel", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("Run did not return within 15s of cancel")
		}
		h.sink.wg.Wait()
		srv.Close()
	})
	return h
}

func (h *harness) waitReady(t *testing.T) {
	t.Helper()
	if err := h.srv.WaitFor(10*time.Second, "channel ready", func() bool { ok, _ := h.ch.Ready(); return ok && h.srv.Connected() }); err != nil {
		_, detail := h.ch.Ready()
		t.Fatalf("%v (Ready detail %q)", err, detail)
	}
}

func echoAnswer(ev echogate.InboundEvent) string { return "echo: " + ev.Text }

var (
	ann = discordtest.User{ID: "300000000000000001", Username: "ann"}
	bob = discordtest.User{ID: "300000000000000002", Username: "bob", GlobalName: "Bob"}
)

func TestWireIdentifyAndDM(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, echoAnswer)
	h.waitReady(t)

	ids := h.srv.Identifies()
	if len(ids) != 1 {
		t.Fatalf("Identify count = %d, want 1", len(ids))
	}
	id := ids[0]
	if id.Intents != int(baseIntents) {
		t.Errorf("Identify intents = %b, want %b", id.Intents, int(baseIntents))
	}
	for name, bit := range map[string]int{"GUILD_MESSAGES": 1 << 9, "GUILD_MESSAGE_REACTIONS": 1 << 10, "DIRECT_MESSAGES": 1 << 12, "DIRECT_MESSAGE_REACTIONS": 1 << 13} {
		if id.Intents&bit == 0 {
			t.Errorf("Identify intents lack %s", name)
		}
	}
	if id.Intents&(1<<15) != 0 {
		t.Error("Identify asks for the privileged MESSAGE_CONTENT intent by default; mentions and DMs carry content without it")
	}
	if id.Shard != [2]int{0, 1} {
		t.Errorf("Identify shard = %v, want [0 1]", id.Shard)
	}
	if id.Token != "Bot "+h.srv.Token() {
		t.Errorf("Identify token = %q, want the bot token with the Bot prefix", id.Token)
	}
	if v, enc := id.Query.Get("v"), id.Query.Get("encoding"); v == "" || enc != "json" {
		t.Errorf("gateway query = %v, want v=<version>&encoding=json", id.Query)
	}
	if got := h.ch.BotID(); got != h.srv.Bot().ID {
		t.Errorf("BotID = %q, want %q", got, h.srv.Bot().ID)
	}
	if len(h.srv.CallsTo("GET", "/gateway/bot")) != 1 || len(h.srv.CallsTo("GET", "/gateway")) < 2 {
		t.Errorf("gateway discovery calls = %v, want GET /gateway/bot and GET /gateway", h.srv.Calls())
	}

	dm := h.srv.SendDM(ann, "hello there")
	if err := h.srv.WaitFor(5*time.Second, "DM answer", func() bool { return len(h.srv.BotMessages(dm.ChannelID)) == 1 }); err != nil {
		t.Fatal(err)
	}
	got := h.srv.BotMessages(dm.ChannelID)[0]
	if got.Content != "echo: hello there" {
		t.Errorf("answer = %q, want %q", got.Content, "echo: hello there")
	}
	if got.ReferenceID != "" {
		t.Errorf("DM answer replies to %q, want no message reference in DMs", got.ReferenceID)
	}
	evs, _ := h.sink.snapshot()
	if len(evs) != 1 {
		t.Fatalf("events = %d, want 1 (the bot's own echo must be ignored)", len(evs))
	}
	ev := evs[0]
	want := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: dm.ChannelID, DM: true}
	if ev.Conversation != want || ev.Kind != echogate.KindDirect || ev.ID != dm.ID || ev.Actor.ID != ann.ID {
		t.Errorf("event = %+v, want DM %s from %s in %+v", ev, dm.ID, ann.ID, want)
	}
	if ev.SessionKey() != echogate.SessionKey("discord:"+dm.ChannelID) {
		t.Errorf("session = %q, want discord:%s", ev.SessionKey(), dm.ChannelID)
	}
}

func TestWireGuildMention(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, echoAnswer)
	h.waitReady(t)
	const guild, channel, thread = "400000000000000001", "500000000000000001", "500000000000000002"

	h.srv.SendGuildMessage(guild, channel, ann, "just chatting", false)
	m := h.srv.SendGuildMessage(guild, channel, bob, "what time is it?", true)
	if err := h.srv.WaitFor(5*time.Second, "mention answer", func() bool { return len(h.srv.BotMessages(channel)) == 1 }); err != nil {
		t.Fatal(err)
	}
	ans := h.srv.BotMessages(channel)[0]
	if ans.Content != "echo: what time is it?" || ans.ReferenceID != m.ID {
		t.Errorf("answer = %q replying to %q, want %q replying to %s", ans.Content, ans.ReferenceID, "echo: what time is it?", m.ID)
	}
	// A reply to the bot counts as addressing it; a thread is its own session.
	r := h.srv.ReplyInGuild(guild, channel, ann, "and tomorrow?", ans.ID)
	h.srv.SendGuildMessage(guild, thread, ann, "in a thread", true)
	if err := h.srv.WaitFor(5*time.Second, "reply and thread answers", func() bool {
		return len(h.srv.BotMessages(channel)) == 2 && len(h.srv.BotMessages(thread)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	evs, _ := h.sink.snapshot()
	if len(evs) != 3 {
		t.Fatalf("events = %d (%+v), want 3: the unaddressed message is ignored", len(evs), evs)
	}
	if evs[0].Kind != echogate.KindMention || evs[0].Text != "what time is it?" || evs[0].Conversation.Workspace != guild || evs[0].Conversation.DM {
		t.Errorf("mention event = %+v, want KindMention with the mention stripped in guild %s", evs[0], guild)
	}
	if evs[1].ID != r.ID || evs[1].Kind != echogate.KindMention {
		t.Errorf("reply event = %+v, want KindMention for %s", evs[1], r.ID)
	}
	if evs[2].SessionKey() == evs[0].SessionKey() || evs[2].SessionKey() != echogate.SessionKey("discord:"+thread) {
		t.Errorf("thread session = %q, want discord:%s (distinct from the channel's)", evs[2].SessionKey(), thread)
	}
}

func TestWireLongAnswerIsSplit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("Here is the report.\n\n")
	for i := 0; b.Len() < 2600; i++ {
		b.WriteString("Paragraph line with some words to fill the answer nicely.\n")
	}
	b.WriteString("```go\n")
	for b.Len() < 4300 {
		b.WriteString("fmt.Println(\"a line of code in a long block\")\n")
	}
	b.WriteString("```\n")
	for b.Len() < 5000 {
		b.WriteString("Closing words. ")
	}
	long := b.String()[:5000]
	h := start(t, discordtest.Options{}, nil, func(echogate.InboundEvent) string { return long })
	h.waitReady(t)
	dm := h.srv.SendDM(ann, "write a lot")
	if err := h.srv.WaitFor(5*time.Second, "split answer", func() bool { return len(h.srv.BotMessages(dm.ChannelID)) >= 3 }); err != nil {
		t.Fatal(err)
	}
	msgs := h.srv.BotMessages(dm.ChannelID)
	if len(msgs) != 3 {
		t.Fatalf("messages = %d, want 3 for 5000 characters", len(msgs))
	}
	var parts []string
	for i, m := range msgs {
		if n := len([]rune(m.Content)); n > MaxMessageLength {
			t.Errorf("message %d has %d characters, want ≤ %d", i, n, MaxMessageLength)
		}
		if strings.Count(m.Content, "```")%2 != 0 {
			t.Errorf("message %d has an unbalanced code fence:\n%s", i, m.Content)
		}
		parts = append(parts, m.Content)
	}
	if got := normalize(unsplit(parts)); got != normalize(long) {
		t.Errorf("joined messages differ from the answer:\n got %q\nwant %q", got, normalize(long))
	}
}

// TestWireStreamingEditsAtMostOncePerSecond is not parallel: it checks the spacing of edits as
// the server receives them, which CPU contention from other tests would blur.
func TestWireStreamingEditsAtMostOncePerSecond(t *testing.T) {
	h := start(t, discordtest.Options{}, nil, nil)
	h.waitReady(t)
	ch := h.srv.DMChannel(ann.ID)
	ctx := context.Background()
	st, err := h.ch.StartStream(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: ch, DM: true}})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	var full strings.Builder
	for i := 0; time.Since(begin) < 3200*time.Millisecond; i++ {
		d := "tok" + string(rune('a'+i%26)) + " "
		full.WriteString(d)
		if err := st.Append(ctx, d); err != nil {
			t.Fatal(err)
		}
		select {
		case <-time.After(15 * time.Millisecond): // a model producing tokens
		case <-ctx.Done():
		}
	}
	refs, err := st.Finish(ctx, full.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "late"); !errors.Is(err, ErrStreamFinished) {
		t.Errorf("Append after Finish = %v, want ErrStreamFinished", err)
	}
	if len(refs) != 1 {
		t.Fatalf("Finish refs = %v, want 1 message", refs)
	}
	posts := h.srv.CallsTo("POST", "/channels/"+ch+"/messages")
	if len(posts) != 1 {
		t.Fatalf("posts = %d, want 1 (first message, then edits)", len(posts))
	}
	if early := posts[0].At.Sub(begin); early > 500*time.Millisecond {
		t.Errorf("first message posted after %s, want early (< 500ms)", early)
	}
	m, _ := h.srv.Message(refs[0].ID)
	if strings.TrimSpace(m.Content) != strings.TrimSpace(full.String()) {
		t.Errorf("final content = %q, want the whole answer", m.Content)
	}
	if len(m.EditedAt) < 2 {
		t.Errorf("edits = %d, want several while streaming", len(m.EditedAt))
	}
	prev := posts[0].At
	for i, at := range m.EditedAt {
		// The next request starts ≥ 1s after the previous one returned, so arrivals at the
		// server are ≥ 1s apart however slow the loopback is.
		if gap := at.Sub(prev); gap < time.Second {
			t.Errorf("edit %d came %s after the previous update, want ≥ 1s", i, gap)
		}
		prev = at
	}
}

func TestWire429IsRetriedAndAnswerArrivesOnce(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, echoAnswer)
	h.waitReady(t)
	const retry = 300 * time.Millisecond
	h.srv.RateLimitNext("POST", "/messages", retry, false)
	dm := h.srv.SendDM(ann, "ping")
	path := "/channels/" + dm.ChannelID + "/messages"
	if err := h.srv.WaitFor(5*time.Second, "answer after 429", func() bool { return len(h.srv.CallsTo("POST", path)) == 2 }); err != nil {
		t.Fatal(err)
	}
	posts := h.srv.CallsTo("POST", path)
	if len(posts) != 2 || posts[0].Status != 429 || posts[1].Status != 200 {
		t.Fatalf("posts = %+v, want a 429 then a 200", posts)
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < retry {
		t.Errorf("retry came %s after the 429, want ≥ retry_after %s", gap, retry)
	}
	if got := h.srv.BotMessages(dm.ChannelID); len(got) != 1 || got[0].Content != "echo: ping" {
		t.Errorf("bot messages = %+v, want exactly one answer", got)
	}
}

func TestWireReconnectResumeDoesNotAnswerTwice(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, echoAnswer)
	h.waitReady(t)
	first := h.srv.SendDM(ann, "one")
	dmc := first.ChannelID
	if err := h.srv.WaitFor(5*time.Second, "first answer", func() bool { return len(h.srv.BotMessages(dmc)) == 1 }); err != nil {
		t.Fatal(err)
	}
	// Discord asks the bot to reconnect; a DM arrives while it is away; the resume replays
	// it, plus (at-least-once) events the bot had already seen.
	h.srv.ReplayOnNextResume(3)
	h.srv.Reconnect()
	missed := h.srv.SendDM(ann, "two")
	// At least one resume: on a loaded machine a late heartbeat ACK can make the client resume
	// once more (still no new Identify, checked below).
	if err := h.srv.WaitFor(10*time.Second, "resume and the missed DM answered", func() bool {
		return len(h.srv.Resumes()) >= 1 && len(h.srv.BotMessages(dmc)) == 2
	}); err != nil {
		ready, detail := h.ch.Ready()
		var runErr error
		select {
		case runErr = <-h.runErr:
			h.runErr <- runErr // for the cleanup
		default:
		}
		t.Fatalf("%v (resumes %d, identifies %d, bot messages %d; channel ready %v: %s; Run returned %v)", err,
			len(h.srv.Resumes()), len(h.srv.Identifies()), len(h.srv.BotMessages(dmc)), ready, detail, runErr)
	}
	h.waitReady(t)
	third := h.srv.SendDM(ann, "three")
	if err := h.srv.WaitFor(5*time.Second, "answer after reconnect", func() bool { return len(h.srv.BotMessages(dmc)) == 3 }); err != nil {
		t.Fatal(err)
	}
	if n := len(h.srv.Identifies()); n != 1 {
		t.Errorf("Identify count = %d, want 1 (the reconnect resumes)", n)
	}
	if r := h.srv.Resumes()[0]; r.SessionID != "session-1" || r.Seq == 0 {
		t.Errorf("Resume = %+v, want session-1 with the last sequence", r)
	}
	var got []string
	for _, m := range h.srv.BotMessages(dmc) {
		got = append(got, m.Content)
	}
	if want := []string{"echo: one", "echo: two", "echo: three"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers = %q, want %q (each message answered once)", got, want)
	}
	evs, dups := h.sink.snapshot()
	if dups == 0 {
		t.Errorf("duplicates seen by the sink = 0, want the replayed DM to reach it again (and be deduped)")
	}
	ids := map[string]bool{}
	for _, ev := range evs {
		ids[ev.ID] = true
	}
	for _, m := range []discordtest.Message{first, missed, third} {
		if !ids[m.ID] {
			t.Errorf("event %s (%q) never reached the sink", m.ID, m.Content)
		}
	}
}

func TestWireZombieConnectionIsNotReady(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{HeartbeatInterval: 100 * time.Millisecond}, nil, nil)
	h.waitReady(t)
	// Let a few ACKs arrive so the interval is measured.
	if err := h.srv.WaitFor(5*time.Second, "heartbeats", func() bool { return h.srv.Heartbeats() >= 3 }); err != nil {
		t.Fatal(err)
	}
	h.srv.SetHeartbeatAcks(false)
	var detail string
	if err := h.srv.WaitFor(5*time.Second, "not ready", func() bool {
		var ok bool
		ok, detail = h.ch.Ready()
		return !ok
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "heartbeat ACK") {
		t.Errorf("Ready detail = %q, want it to name the missing heartbeat ACKs", detail)
	}
	// The zombie is replaced by a resumed connection.
	if err := h.srv.WaitFor(10*time.Second, "resume after zombie", func() bool { return len(h.srv.Resumes()) >= 1 }); err != nil {
		t.Fatal(err)
	}
	h.srv.SetHeartbeatAcks(true)
	h.waitReady(t)
}

func TestWireDisallowedIntentsIsPermanent(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{DisallowedIntents: 1 << 15}, func(c *Config) { c.MessageContent = true }, nil)
	select {
	case err := <-h.runErr:
		if !errors.Is(err, ErrDisallowedIntents) || !strings.Contains(err.Error(), "MESSAGE CONTENT") {
			t.Errorf("Run = %v, want ErrDisallowedIntents naming the MESSAGE CONTENT switch", err)
		}
		h.runErr <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return on close 4014")
	}
	if ok, detail := h.ch.Ready(); ok || !strings.Contains(detail, "MESSAGE CONTENT") {
		t.Errorf("Ready = %v, %q, want false naming the fix", ok, detail)
	}
}

func TestWireRejectedTokenIsPermanent(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, func(c *Config) { c.Token = "wrong" }, nil)
	select {
	case err := <-h.runErr:
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Run = %v, want ErrUnauthorized", err)
		}
		h.runErr <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return on a rejected token")
	}
	if n := h.srv.Connections(); n != 0 {
		t.Errorf("gateway connections = %d, want 0 with a rejected token", n)
	}
}

func TestWireReactionsOnOwnMessages(t *testing.T) {
	t.Parallel()
	for _, omit := range []bool{false, true} {
		name := "with message_author_id"
		if omit {
			name = "looked up"
		}
		t.Run(name, func(t *testing.T) {
			h := start(t, discordtest.Options{OmitMessageAuthorID: omit}, nil, nil)
			h.waitReady(t)
			const guild, channel = "400000000000000009", "500000000000000009"
			q := h.srv.SendGuildMessage(guild, channel, ann, "delete the files", true)
			if err := h.srv.WaitFor(5*time.Second, "question delivered", func() bool { evs, _ := h.sink.snapshot(); return len(evs) == 1 }); err != nil {
				t.Fatal(err)
			}
			conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: guild, Channel: channel}
			prompt, err := h.ch.Send(context.Background(), echogate.Outbound{
				Kind: echogate.OutApprovalPrompt, Conversation: conv, ReplyTo: echogate.MessageRef{Channel: channel, ID: q.ID},
				Text: "Run `rm`?", Reactions: []string{echogate.ReactionApprove, echogate.ReactionApproveSession, echogate.ReactionDeny},
			})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := h.srv.Message(prompt.ID)
			if strings.Join(m.Reactions, "") != "✅🔁❌" {
				t.Errorf("prompt reactions = %q, want ✅🔁❌", m.Reactions)
			}
			// The user reacts on their own message (ignored) and on the prompt with ✅ plus
			// a variation selector (delivered canonical).
			if err := h.srv.AddReaction(q.ID, ann, "🛑"); err != nil {
				t.Fatal(err)
			}
			if err := h.srv.AddReaction(prompt.ID, ann, "✅\uFE0F"); err != nil {
				t.Fatal(err)
			}
			if err := h.srv.WaitFor(5*time.Second, "reaction event", func() bool { evs, _ := h.sink.snapshot(); return len(evs) >= 2 }); err != nil {
				t.Fatal(err)
			}
			evs, _ := h.sink.snapshot()
			if len(evs) != 2 {
				t.Fatalf("events = %+v, want the question and one reaction", evs)
			}
			ev := evs[1]
			wantTarget := echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: channel, ID: prompt.ID}
			if ev.Kind != echogate.KindReaction || ev.Reaction != echogate.ReactionApprove || ev.Target != wantTarget ||
				ev.Actor.ID != ann.ID || ev.ID != prompt.ID+":"+ann.ID+":✅" || ev.SessionKey() != evs[0].SessionKey() {
				t.Errorf("reaction event = %+v, want ✅ by %s on %+v in the question's session", ev, ann.ID, wantTarget)
			}
		})
	}
}

func TestWireReconnectStormOpensBreaker(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, func(c *Config) {
		c.BreakerFailures = 2
		c.BreakerWindow = time.Minute
		c.BreakerCooldown = 700 * time.Millisecond
		c.StableAfter = time.Minute
	}, nil)
	h.waitReady(t)
	var detail string
	for i := 0; ; i++ {
		before := h.srv.Connections()
		h.srv.DropConnection()
		if err := h.srv.WaitFor(10*time.Second, "breaker open or reconnect", func() bool {
			var ok bool
			ok, detail = h.ch.Ready()
			return strings.Contains(detail, "breaker open") || (ok && h.srv.Connections() > before && h.srv.Connected())
		}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(detail, "breaker open") {
			break
		}
		if i > 3 {
			t.Fatalf("breaker never opened after %d drops (Ready detail %q)", i+1, detail)
		}
	}
	conns := h.srv.Connections()
	// After the cool-down it connects again.
	if err := h.srv.WaitFor(10*time.Second, "reconnect after cool-down", func() bool {
		ok, _ := h.ch.Ready()
		return ok && h.srv.Connections() > conns
	}); err != nil {
		t.Fatal(err)
	}
}

func TestWireBurstStaysWithinChannelLimit(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{EnforceChannelLimit: true, ChannelWindow: 600 * time.Millisecond}, func(c *Config) {
		c.ChannelRefill = 120 * time.Millisecond
	}, nil)
	ch := h.srv.DMChannel(bob.ID)
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: ch, DM: true}
	var wg sync.WaitGroup
	const n = 12
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.ch.Send(context.Background(), echogate.Outbound{Kind: echogate.OutNotice, Conversation: conv, Text: "notice"}); err != nil {
				t.Errorf("Send = %v", err)
			}
		}()
	}
	wg.Wait()
	if got := len(h.srv.BotMessages(ch)); got != n {
		t.Errorf("messages = %d, want %d", got, n)
	}
	if v := h.srv.Violations(); v != 0 {
		t.Errorf("429s from the channel limit = %d, want 0", v)
	}
}

func TestWireInvalidSessionReidentifies(t *testing.T) {
	t.Parallel()
	h := start(t, discordtest.Options{}, nil, echoAnswer)
	h.waitReady(t)
	h.srv.InvalidateSession(false)
	if err := h.srv.WaitFor(10*time.Second, "second Identify", func() bool { return len(h.srv.Identifies()) == 2 && h.srv.Connected() }); err != nil {
		t.Fatal(err)
	}
	dm := h.srv.SendDM(bob, "still there?")
	if err := h.srv.WaitFor(5*time.Second, "answer after re-identify", func() bool { return len(h.srv.BotMessages(dm.ChannelID)) == 1 }); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.BotMessages(dm.ChannelID)[0].Content; got != "echo: still there?" {
		t.Errorf("answer = %q, want %q", got, "echo: still there?")
	}
}
