package discord

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/discord/discordtest"
)

type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	added   chan struct{}
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), added: make(chan struct{}, 100)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, fakeWaiter{at: f.now.Add(d), ch: ch})
	select {
	case f.added <- struct{}{}:
	default:
	}
	return ch
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			w.ch <- f.now
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
}

func TestBudget(t *testing.T) {
	clk := newFakeClock()
	b := newBudget(clk, 5, time.Second)
	// Best-effort traffic leaves a reserve of 2 tokens for finals.
	for i := 0; i < 3; i++ {
		if !b.tryTake("c") {
			t.Fatalf("tryTake #%d = false, want true", i+1)
		}
	}
	if b.tryTake("c") {
		t.Fatalf("tryTake with 2 tokens left = true, want false (reserved for priority traffic)")
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := b.wait(ctx, "c"); err != nil {
			t.Fatalf("wait #%d = %v, want nil", i+1, err)
		}
	}
	if !b.tryTake("other") {
		t.Errorf("tryTake(other channel) = false, want true: budgets are per channel")
	}
	done := make(chan error, 1)
	go func() { done <- b.wait(ctx, "c") }()
	<-clk.added // the waiter registered its timer
	if b.tryTake("c") {
		t.Errorf("tryTake while a priority caller waits = true, want false")
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("wait after refill = %v, want nil", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- b.wait(cctx, "c") }()
	<-clk.added
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("wait with cancelled ctx = %v, want context.Canceled", err)
	}
	clk.Advance(10 * time.Second)
	for i := 0; i < 3; i++ {
		if !b.tryTake("c") {
			t.Errorf("tryTake after refill #%d = false, want true", i+1)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	maxJ := func(d time.Duration) time.Duration { return d - 1 }
	noJ := func(time.Duration) time.Duration { return 0 }
	for _, tt := range []struct {
		n      int
		jitter func(time.Duration) time.Duration
		want   time.Duration
	}{
		{0, maxJ, 0},
		{1, noJ, 500 * time.Millisecond},
		{1, maxJ, time.Second - 1},
		{2, noJ, time.Second},
		{3, noJ, 2 * time.Second},
		{10, noJ, 30 * time.Second},
		{100, maxJ, time.Minute - 1},
	} {
		if got := backoffDelay(tt.n, time.Second, time.Minute, tt.jitter); got != tt.want {
			t.Errorf("backoffDelay(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg     Config
		wantErr string
	}{
		"no token":         {Config{}, "no bot token"},
		"blank token":      {Config{Token: "  Bot  "}, "no bot token"},
		"token with space": {Config{Token: "abc def"}, "whitespace"},
		"bad url":          {Config{Token: "t", APIURL: "discord.com/api"}, "absolute http(s) URL"},
		"url with query":   {Config{Token: "t", APIURL: "https://x/api/?a=b"}, "query"},
		"shard out":        {Config{Token: "t", ShardID: 2, ShardCount: 2}, "shard_id 2 out of range"},
		"negative shards":  {Config{Token: "t", ShardCount: -1}, "shard_count"},
		"negative":         {Config{Token: "t", EditInterval: -time.Second}, "edit_interval"},
		"backoff order":    {Config{Token: "t", BackoffInitial: time.Minute, BackoffMax: time.Second}, "backoff_max"},
		"ok":               {Config{Token: "Bot abc"}, ""},
	} {
		_, err := New(tt.cfg, nil)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: New = %v, want nil", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: New = %v, want an error containing %q", name, err, tt.wantErr)
		}
	}
	cfg, err := Config{Token: "abc"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "Bot abc" || cfg.APIURL != DefaultAPIURL || cfg.ShardCount != 1 || !*cfg.RequireMention || cfg.EditInterval != time.Second {
		t.Errorf("defaults = %+v, want Bot prefix, default URL, 1 shard, mention required, 1s edits", cfg)
	}
	cfg, _ = Config{Token: "Bot abc", APIURL: "http://proxy:8080/api/v10", RequireMention: Bool(false)}.withDefaults()
	if cfg.Token != "Bot abc" || cfg.APIURL != "http://proxy:8080/api/v10/" || *cfg.RequireMention {
		t.Errorf("withDefaults = %q %q %v, want prefix kept once, slash added, mention off", cfg.Token, cfg.APIURL, *cfg.RequireMention)
	}
}

func TestRewriteTransport(t *testing.T) {
	for _, tt := range []struct {
		base, in, want string
	}{
		{"http://127.0.0.1:9/api/v9/", "https://discord.com/api/v9/gateway", "http://127.0.0.1:9/api/v9/gateway"},
		{"http://proxy:8080/discord/api/v10/", "https://discord.com/api/v9/channels/1/messages?limit=2", "http://proxy:8080/discord/api/v10/channels/1/messages?limit=2"},
		{"https://p.example/", "https://discord.com/api/v9/channels/1/messages/2/reactions/%E2%9C%85/@me", "https://p.example/channels/1/messages/2/reactions/%E2%9C%85/@me"},
		{"http://127.0.0.1:9/api/v9/", "https://cdn.discordapp.com/attachments/1/2/a.png", "https://cdn.discordapp.com/attachments/1/2/a.png"},
	} {
		rt, err := newRewriteTransport(nil, tt.base)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(tt.in)
		got, _ := rt.rewrite(u)
		if got.String() != tt.want {
			t.Errorf("rewrite(%s) with base %s = %s, want %s", tt.in, tt.base, got, tt.want)
		}
	}
}

func TestSplitMessage(t *testing.T) {
	lines := func(n int, line string) string { return strings.Repeat(line+"\n", n) }
	for name, tt := range map[string]struct {
		text      string
		wantParts int // 0: don't check
	}{
		"short":             {"hello", 1},
		"exactly limit":     {strings.Repeat("a", 2000), 1},
		"prose":             {lines(100, "A line of prose that is about sixty characters long, roughly."), 4},
		"code block":        {"Intro\n```python\n" + lines(150, "print('a line of python code here')") + "```\nOutro", 0},
		"block starts late": {lines(30, "A line of prose that is about sixty characters long, roughly.") + "```go\n" + lines(20, "x := 1") + "```\n", 2},
		"one long line":     {strings.Repeat("x", 4500), 3},
		"long words":        {strings.Repeat("word ", 1000), 3},
		"emoji":             {strings.Repeat("😀", 1500), 2},
		"long line in code": {"```\n" + strings.Repeat("y", 2500) + "\n```", 2},
	} {
		parts := splitMessage(tt.text, MaxMessageLength)
		if tt.wantParts != 0 && len(parts) != tt.wantParts {
			t.Errorf("%s: splitMessage = %d parts, want %d", name, len(parts), tt.wantParts)
		}
		for i, p := range parts {
			if n := textLen(p); n > MaxMessageLength {
				t.Errorf("%s: part %d length = %d, want ≤ %d", name, i, n, MaxMessageLength)
			}
			if strings.TrimSpace(p) == "" {
				t.Errorf("%s: part %d is blank", name, i)
			}
			if strings.Count(p, "```")%2 != 0 {
				t.Errorf("%s: part %d has unbalanced fences", name, i)
			}
		}
		if got, want := squash(unsplit(parts)), squash(tt.text); got != want {
			t.Errorf("%s: joined parts differ:\n got %.300q\nwant %.300q", name, got, want)
		}
	}
	if got := splitMessage(" \n\t\n", 2000); got != nil {
		t.Errorf("splitMessage(blank) = %q, want nil", got)
	}
	// A split code block is reopened with its language.
	parts := splitMessage("```python\n"+lines(150, "print('a line of python code here')")+"```", MaxMessageLength)
	if len(parts) < 2 || !strings.HasPrefix(parts[1], "```python\n") || !strings.HasSuffix(parts[0], "\n```") {
		t.Errorf("split code block parts start %q / end %q, want closed and reopened as ```python", parts[1][:12], parts[0][len(parts[0])-6:])
	}
	// Prose splits at line ends, never inside a line.
	for i, p := range splitMessage(lines(100, "A line of prose that is about sixty characters long, roughly."), MaxMessageLength) {
		if !strings.HasSuffix(p, "roughly.") || !strings.HasPrefix(p, "A line") {
			t.Errorf("prose part %d is not split at a line boundary: %q…%q", i, p[:10], p[len(p)-10:])
		}
	}
	// The late code block moves whole into the second message.
	parts = splitMessage(lines(30, "A line of prose that is about sixty characters long, roughly.")+"```go\n"+lines(20, "x := 1")+"```\n", MaxMessageLength)
	if len(parts) == 2 && (strings.Contains(parts[0], "```") || !strings.HasPrefix(parts[1], "```go")) {
		t.Errorf("late code block split = %q | %q, want the block whole in part 2", parts[0][len(parts[0])-20:], parts[1][:10])
	}
}

func TestCanonicalEmoji(t *testing.T) {
	for _, tt := range []struct{ name, id, want string }{
		{"✅\uFE0F", "", echogate.ReactionApprove},
		{"✅", "", echogate.ReactionApprove},
		{"🛑", "", echogate.ReactionStop},
		{"❌\uFE0E", "", echogate.ReactionDeny},
		{"partyparrot", "123", "partyparrot:123"},
	} {
		if got := canonicalEmoji(tt.name, tt.id); got != tt.want {
			t.Errorf("canonicalEmoji(%q, %q) = %q, want %q", tt.name, tt.id, got, tt.want)
		}
	}
}

func TestMapMessage(t *testing.T) {
	const bot = "999"
	now := time.Unix(100, 0)
	user := &discordgo.User{ID: "1", Username: "ann"}
	botUser := &discordgo.User{ID: bot, Username: "echobot", Bot: true}
	for name, tt := range map[string]struct {
		m        discordgo.Message
		noMent   bool
		wantKind echogate.EventKind
		wantText string
		wantWhy  string
	}{
		"dm":                                  {m: discordgo.Message{ID: "m", ChannelID: "d", Author: user, Content: "hi"}, wantKind: echogate.KindDirect, wantText: "hi"},
		"own":                                 {m: discordgo.Message{ID: "m", ChannelID: "d", Author: botUser, Content: "hi"}, wantWhy: "own message"},
		"other bot":                           {m: discordgo.Message{ID: "m", ChannelID: "d", Author: &discordgo.User{ID: "5", Bot: true}, Content: "hi"}, wantWhy: "bot or webhook message"},
		"webhook":                             {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", WebhookID: "w", Author: user, Content: "hi"}, wantWhy: "bot or webhook message"},
		"system":                              {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Type: discordgo.MessageTypeGuildMemberJoin, Author: user}, wantWhy: "system message"},
		"no author":                           {m: discordgo.Message{ID: "m"}, wantWhy: "no author"},
		"guild chatter":                       {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Author: user, Content: "hi all"}, wantWhy: "guild message not addressed to the bot"},
		"guild chatter, mention not required": {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Author: user, Content: "hi all"}, noMent: true, wantKind: echogate.KindMention, wantText: "hi all"},
		"mention":                             {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Author: user, Content: "<@999> what  now?", Mentions: []*discordgo.User{botUser}}, wantKind: echogate.KindMention, wantText: "what now?"},
		"nick mention":                        {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Author: user, Content: "hey <@!999>, ping <@7>", Mentions: []*discordgo.User{{ID: "7", Username: "bob"}}}, wantKind: echogate.KindMention, wantText: "hey , ping @bob"},
		"reply to bot":                        {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Type: discordgo.MessageTypeReply, Author: user, Content: "and?", ReferencedMessage: &discordgo.Message{ID: "r", Author: botUser}}, wantKind: echogate.KindMention, wantText: "and?"},
		"reply to other":                      {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Type: discordgo.MessageTypeReply, Author: user, Content: "and?", ReferencedMessage: &discordgo.Message{ID: "r", Author: user}}, wantWhy: "guild message not addressed to the bot"},
		"bare mention":                        {m: discordgo.Message{ID: "m", ChannelID: "c", GuildID: "g", Author: user, Content: "<@999>", Mentions: []*discordgo.User{botUser}}, wantWhy: "empty message"},
		"attachment only":                     {m: discordgo.Message{ID: "m", ChannelID: "d", Author: user, Attachments: []*discordgo.MessageAttachment{{ID: "a", Filename: "x.png", ContentType: "image/png", Size: 3, URL: "https://cdn/x.png"}}}, wantKind: echogate.KindDirect},
	} {
		ev, why := mapMessage(&tt.m, bot, !tt.noMent, now)
		if why != tt.wantWhy {
			t.Errorf("%s: mapMessage reason = %q, want %q", name, why, tt.wantWhy)
			continue
		}
		if why != "" {
			continue
		}
		if ev.Kind != tt.wantKind || ev.Text != tt.wantText || ev.ID != "m" || ev.Actor.ID != "1" || ev.ReceivedAt != now {
			t.Errorf("%s: mapMessage = %+v, want kind %v text %q", name, ev, tt.wantKind, tt.wantText)
		}
		wantConv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: tt.m.GuildID, Channel: tt.m.ChannelID, DM: tt.m.GuildID == ""}
		if ev.Conversation != wantConv || ev.Message.ID != "m" || ev.Message.Channel != tt.m.ChannelID {
			t.Errorf("%s: conversation = %+v message %+v, want %+v", name, ev.Conversation, ev.Message, wantConv)
		}
		if len(tt.m.Attachments) > 0 && (len(ev.Attachments) != 1 || ev.Attachments[0].MIME != "image/png" || ev.Attachments[0].Name != "x.png") {
			t.Errorf("%s: attachments = %+v, want x.png image/png", name, ev.Attachments)
		}
	}
}

func TestMapReaction(t *testing.T) {
	const bot = "999"
	base := func() reactionAdd {
		r := reactionAdd{UserID: "1", ChannelID: "c", MessageID: "m", GuildID: "g"}
		r.Emoji.Name = "🛑"
		return r
	}
	botMember := base()
	botMember.Member = &struct {
		User *struct {
			ID         string `json:"id"`
			Username   string `json:"username"`
			GlobalName string `json:"global_name"`
			Bot        bool   `json:"bot"`
		} `json:"user"`
		Nick string `json:"nick"`
	}{}
	botMember.Member.User = &struct {
		ID         string `json:"id"`
		Username   string `json:"username"`
		GlobalName string `json:"global_name"`
		Bot        bool   `json:"bot"`
	}{ID: "1", Bot: true}
	self := base()
	self.UserID = bot
	dm := base()
	dm.GuildID = ""
	for name, tt := range map[string]struct {
		r       reactionAdd
		own     bool
		wantWhy string
	}{
		"stop on own message": {base(), true, ""},
		"dm":                  {dm, true, ""},
		"on user's message":   {base(), false, "reaction on another user's message"},
		"bot's own reaction":  {self, true, "own reaction"},
		"other bot":           {botMember, true, "bot reaction"},
		"incomplete":          {reactionAdd{UserID: "1"}, true, "incomplete reaction"},
	} {
		ev, why := mapReaction(tt.r, bot, tt.own, time.Unix(1, 0))
		if why != tt.wantWhy {
			t.Errorf("%s: mapReaction reason = %q, want %q", name, why, tt.wantWhy)
			continue
		}
		if why != "" {
			continue
		}
		if ev.Kind != echogate.KindReaction || ev.Reaction != echogate.ReactionStop || ev.ID != "m:1:🛑" ||
			ev.Target != (echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: "c", ID: "m"}) ||
			ev.Conversation.DM != (tt.r.GuildID == "") || ev.Conversation.Channel != "c" {
			t.Errorf("%s: mapReaction = %+v, want 🛑 event on c/m", name, ev)
		}
	}
}

// TestStreamFinishShorterDeletesSurplus streams past 2000 characters and finishes with a short
// text: the second streamed message is deleted and the first holds the final text. It needs no
// gateway: streaming is REST only.
func TestStreamFinishShorterDeletesSurplus(t *testing.T) {
	srv := discordtest.NewServer(discordtest.Options{})
	defer srv.Close()
	cfg := fastConfig(srv)
	cfg.EditInterval = 50 * time.Millisecond
	c, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ch := srv.DMChannel(ann.ID)
	ctx := context.Background()
	st, err := c.StartStream(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: ch, DM: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, strings.Repeat("draft line of text\n", 150)); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitFor(5*time.Second, "two streamed messages", func() bool { return len(srv.BotMessages(ch)) == 2 }); err != nil {
		t.Fatal(err)
	}
	refs, err := st.Finish(ctx, "Short final answer.")
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.BotMessages(ch)
	if len(refs) != 1 || len(msgs) != 1 || msgs[0].ID != refs[0].ID || msgs[0].Content != "Short final answer." {
		t.Errorf("after Finish refs = %v, messages = %+v, want one message with the final text", refs, msgs)
	}
	if _, err := st.Finish(ctx, "again"); !errors.Is(err, ErrStreamFinished) {
		t.Errorf("second Finish = %v, want ErrStreamFinished", err)
	}
	// Finish without any Append posts the final text; an empty stream posts nothing.
	st2, _ := c.StartStream(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Channel: ch, DM: true}})
	if refs, err := st2.Finish(ctx, "direct"); err != nil || len(refs) != 1 {
		t.Errorf("Finish without deltas = %v, %v, want one message", refs, err)
	}
	st3, _ := c.StartStream(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Channel: ch, DM: true}})
	if refs, err := st3.Finish(ctx, ""); err != nil || len(refs) != 0 {
		t.Errorf("empty Finish = %v, %v, want nothing posted", refs, err)
	}
}

func TestSendValidation(t *testing.T) {
	c, err := New(Config{Token: "t", APIURL: "http://127.0.0.1:1/api/v9/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Send(ctx, echogate.Outbound{Text: "x"}); !errors.Is(err, ErrNoChannel) {
		t.Errorf("Send without channel = %v, want ErrNoChannel", err)
	}
	if _, err := c.Send(ctx, echogate.Outbound{Conversation: echogate.ConversationRef{Channel: "1"}, Text: " \n"}); !errors.Is(err, ErrEmptyMessage) {
		t.Errorf("Send blank = %v, want ErrEmptyMessage", err)
	}
	if err := c.Edit(ctx, echogate.MessageRef{Channel: "1"}, "x"); !errors.Is(err, ErrNoChannel) {
		t.Errorf("Edit without id = %v, want ErrNoChannel", err)
	}
	if _, err := c.StartStream(ctx, echogate.Outbound{}); !errors.Is(err, ErrNoChannel) {
		t.Errorf("StartStream without channel = %v, want ErrNoChannel", err)
	}
	if err := c.Run(ctx, nil); !errors.Is(err, ErrNilSink) {
		t.Errorf("Run(nil sink) = %v, want ErrNilSink", err)
	}
	if ok, detail := c.Ready(); ok || detail == "" {
		t.Errorf("Ready before Run = %v, %q, want false with a detail", ok, detail)
	}
	if got := truncateText(strings.Repeat("a", 2500), 2000); textLen(got) != 2000 || !strings.HasSuffix(got, "…") {
		t.Errorf("truncateText length = %d, want 2000 ending in …", textLen(got))
	}
}

func TestTypingRefreshesUntilStopped(t *testing.T) {
	srv := discordtest.NewServer(discordtest.Options{})
	defer srv.Close()
	clk := newFakeClock()
	cfg := fastConfig(srv)
	cfg.Clock = clk
	c, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ch := srv.DMChannel(ann.ID)
	typing := func() int { return len(srv.CallsTo("POST", "/channels/"+ch+"/typing")) }
	stop := c.StartTyping(context.Background(), echogate.ConversationRef{Channel: ch, DM: true}, echogate.MessageRef{})
	if err := srv.WaitFor(5*time.Second, "first typing call", func() bool { return typing() == 1 }); err != nil {
		t.Fatal(err)
	}
	<-clk.added // the refresher waits for TypingInterval
	clk.Advance(DefaultTypingInterval)
	if err := srv.WaitFor(5*time.Second, "typing refresh", func() bool { return typing() == 2 }); err != nil {
		t.Fatal(err)
	}
	<-clk.added
	stop()
	stop() // idempotent
	clk.Advance(DefaultTypingInterval)
	// A message posted afterwards is the synchronisation point: no refresh may follow stop.
	if _, err := c.Send(context.Background(), echogate.Outbound{Conversation: echogate.ConversationRef{Channel: ch, DM: true}, Text: "done"}); err != nil {
		t.Fatal(err)
	}
	if n := typing(); n != 2 {
		t.Errorf("typing calls after stop = %d, want 2", n)
	}
}
