package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/channels/slack/slacktest"
)

func TestToMrkdwn(t *testing.T) {
	for name, tt := range map[string]struct{ in, want string }{
		"bold":           {"a **b** c __d__", "a *b* c *d*"},
		"italic":         {"an *italic* word and _this_", "an _italic_ word and _this_"},
		"bold italic":    {"**bold** and *it*", "*bold* and _it_"},
		"strike":         {"~~gone~~", "~gone~"},
		"link":           {"see [the docs](https://x.io/a?b=1&c=2)", "see <https://x.io/a?b=1&amp;c=2|the docs>"},
		"autolink":       {"<https://x.io>", "<https://x.io>"},
		"escape":         {"1 < 2 & 3 > 2", "1 &lt; 2 &amp; 3 &gt; 2"},
		"heading":        {"## Title **x**", "*Title x*"},
		"bullets":        {"- one\n* two\n  + three", "• one\n• two\n  • three"},
		"quote":          {"> quoted *x*", "> quoted _x_"},
		"code span":      {"run `a **b** <c>` now", "run `a **b** &lt;c&gt;` now"},
		"code block":     {"```go\nx := **y** < 1\n```", "```\nx := **y** &lt; 1\n```"},
		"table":          {"| a | b |\n|---|---|\n| 1 | 2 |", "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```"},
		"rule":           {"---", "──────────"},
		"plain":          {"nothing to do", "nothing to do"},
		"multiplication": {"2 * 3 * 4", "2 * 3 * 4"},
	} {
		if got := toMrkdwn(tt.in); got != tt.want {
			t.Errorf("%s: toMrkdwn(%q) = %q, want %q", name, tt.in, got, tt.want)
		}
	}
}

func TestSplitText(t *testing.T) {
	code := "intro\n```\n" + strings.Repeat("line of code\n", 40) + "```\nafter"
	for name, tt := range map[string]struct {
		in  string
		max int
	}{
		"short":      {"hello", 100},
		"paragraphs": {strings.Repeat("para graph text here.\n\n", 30), 120},
		"code fence": {code, 100},
		"long line":  {strings.Repeat("word ", 100), 60},
		"no spaces":  {strings.Repeat("x", 250), 60},
		"multibyte":  {strings.Repeat("héllo wörld ", 50), 40},
	} {
		parts := splitText(tt.in, tt.max)
		if len(parts) == 0 {
			t.Fatalf("%s: splitText = no parts", name)
		}
		fences := 0
		for _, p := range parts {
			if n := utf8.RuneCountInString(p); n > tt.max {
				t.Errorf("%s: part of %d chars, want <= %d", name, n, tt.max)
			}
			if strings.Count(p, "```")%2 != 0 {
				t.Errorf("%s: part %q has an unbalanced code fence", name, p)
			}
			fences += strings.Count(p, "```")
		}
		// Nothing lost: the words of the input are all there, in order.
		if got, want := strings.Fields(strings.ReplaceAll(strings.Join(parts, " "), "```", "")), strings.Fields(strings.ReplaceAll(tt.in, "```", "")); strings.Join(got, " ") != strings.Join(want, " ") && name != "long line" && name != "no spaces" {
			t.Errorf("%s: words changed after split", name)
		}
		if name == "no spaces" && strings.Join(parts, "") != tt.in {
			t.Errorf("%s: parts do not reassemble", name)
		}
	}
	if parts := splitText("  \n ", 10); parts != nil {
		t.Errorf("splitText(blank) = %q, want nil", parts)
	}
}

func TestRenderLimits(t *testing.T) {
	msgs := render(strings.Repeat("some words in a line\n", 5000)) // ~105k chars
	if len(msgs) < 3 {
		t.Fatalf("render gave %d messages, want >= 3", len(msgs))
	}
	for i, m := range msgs {
		if n := utf8.RuneCountInString(m.text); n > 40000 {
			t.Errorf("message %d has %d chars, want <= 40000", i, n)
		}
		if len(m.blocks) == 0 || len(m.blocks) > maxBlocks {
			t.Errorf("message %d has %d blocks, want 1..%d", i, len(m.blocks), maxBlocks)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg     Config
		wantErr string
	}{
		"ok socket":      {Config{BotToken: "xoxb-1", AppToken: "xapp-1"}, ""},
		"ok http":        {Config{BotToken: "xoxb-1", SigningSecret: "s"}, ""},
		"no bot token":   {Config{AppToken: "xapp-1"}, "SLACK_BOT_TOKEN"},
		"swapped tokens": {Config{BotToken: "xapp-1", AppToken: "xoxb-1"}, "app-level token"},
		"user token":     {Config{BotToken: "xoxp-1", AppToken: "xapp-1"}, "must start with xoxb-"},
		"bad app token":  {Config{BotToken: "xoxb-1", AppToken: "abc"}, "must start with xapp-"},
		"bot as app":     {Config{BotToken: "xoxb-1", AppToken: "xoxb-2"}, "bot token"},
		"no transport":   {Config{BotToken: "xoxb-1"}, "SLACK_APP_TOKEN"},
		"bad url":        {Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "slack.com/api"}, "SLACK_API_URL"},
		"negative":       {Config{BotToken: "xoxb-1", AppToken: "xapp-1", StreamUpdateInterval: -1}, "negative"},
	} {
		_, err := New(tt.cfg, nil)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: New = %v, want nil", name, err)
		case tt.wantErr != "" && (err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: New = %v, want ErrConfig mentioning %q", name, err, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "xoxb-1") {
			t.Errorf("%s: error %q leaks the token", name, err)
		}
	}
	c, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api"}, nil)
	if err != nil || c.cfg.APIURL != "http://127.0.0.1:1/api/" || !c.cfg.requireMention("C1") || !c.cfg.replyInThread() || c.cfg.StreamUpdateInterval != time.Second {
		t.Errorf("defaults = %+v, %v; want trailing slash, require_mention and reply_in_thread on, 1s interval", c.cfg, err)
	}
}

func TestVerifySignature(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"type":"event_callback"}`)
	sign := func(secret string, at time.Time) http.Header {
		h := http.Header{}
		stamp := strconv.FormatInt(at.Unix(), 10)
		h.Set("X-Slack-Request-Timestamp", stamp)
		h.Set("X-Slack-Signature", slacktest.Sign(secret, stamp, body))
		return h
	}
	for name, tt := range map[string]struct {
		h    http.Header
		want bool
	}{
		"valid":        {sign("s3cret", now), true},
		"4m old":       {sign("s3cret", now.Add(-4*time.Minute)), true},
		"6m old":       {sign("s3cret", now.Add(-6*time.Minute)), false},
		"wrong secret": {sign("other", now), false},
		"missing":      {http.Header{}, false},
		"garbage":      {http.Header{"X-Slack-Signature": {"v0=zz"}, "X-Slack-Request-Timestamp": {"1700000000"}}, false},
		"bad version":  {http.Header{"X-Slack-Signature": {"v1=00"}, "X-Slack-Request-Timestamp": {"1700000000"}}, false},
	} {
		err := verifySignature(tt.h, body, "s3cret", now)
		if (err == nil) != tt.want || (err != nil && !errors.Is(err, ErrInvalidSignature)) {
			t.Errorf("%s: verifySignature = %v, want ok=%v", name, err, tt.want)
		}
	}
}

func TestReactionMapping(t *testing.T) {
	for in, want := range map[string]string{
		"white_check_mark": echogate.ReactionApprove, "heavy_check_mark": echogate.ReactionApprove,
		"repeat": echogate.ReactionApproveSession, "x": echogate.ReactionDeny,
		"negative_squared_cross_mark": echogate.ReactionDeny, "octagonal_sign": echogate.ReactionStop,
		"stop_sign": echogate.ReactionStop, "thumbsup": "", "heavy_check_mark::skin-tone-2": echogate.ReactionApprove,
	} {
		got, ok := canonicalReaction(in)
		if got != want || ok != (want != "") {
			t.Errorf("canonicalReaction(%q) = %q, %v, want %q", in, got, ok, want)
		}
	}
	for in, want := range map[string]string{echogate.ReactionWorking: "eyes", echogate.ReactionDeny: "x", ":tada:": "tada", "🙂": ""} {
		if got, _ := slackEmojiName(in); got != want {
			t.Errorf("slackEmojiName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeepLines(t *testing.T) {
	for in, want := range map[string]string{
		"<@UBOT> hello":               "hello",
		"<@UBOT|echogate> hi <@U2>":   "hi <@U2>",
		"a &lt;b&gt; &amp; c <@UBOT>": "a <b> & c",
		"<@UBOT>\n```\ncode  \n```":   "```\ncode\n```",
	} {
		if got := keepLines(in, "UBOT"); got != want {
			t.Errorf("keepLines(%q) = %q, want %q", in, got, want)
		}
	}
}

// manualClock is a fake clock advanced by hand.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }
func (c *manualClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.now = c.now.Add(d) // advance as if the wait had passed
	ch <- c.now
	return ch
}

func TestBudgets(t *testing.T) {
	clk := &manualClock{now: time.Unix(1000, 0)}
	b := newBudgets(clk, 1, 4)
	// Low priority keeps one token for finals.
	lows := 0
	for b.tryLow("C1") {
		lows++
	}
	if lows != 3 {
		t.Fatalf("low-priority slots from a full bucket = %d, want 3 (one kept for finals)", lows)
	}
	if err := b.waitHigh(context.Background(), "C1"); err != nil {
		t.Fatalf("waitHigh = %v", err)
	}
	if !b.tryLow("C2") {
		t.Fatalf("another channel's budget was touched; want independent budgets")
	}
	start := clk.now
	b.block("C1", 3*time.Second)
	if b.tryLow("C1") {
		t.Fatalf("tryLow during Retry-After = true, want false")
	}
	if err := b.waitHigh(context.Background(), "C1"); err != nil {
		t.Fatalf("waitHigh = %v", err)
	}
	if waited := clk.now.Sub(start); waited < 3*time.Second {
		t.Errorf("waitHigh returned after %s, want >= Retry-After 3s", waited)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.block("C3", time.Hour)
	if err := b.waitHigh(ctx, "C3"); err == nil {
		t.Errorf("waitHigh with cancelled ctx = nil, want error")
	}
}

func TestEventsBodyErrorsSayWhy(t *testing.T) {
	for name, tt := range map[string]struct {
		err  error
		code int
	}{
		"over the limit":                  {&http.MaxBytesError{Limit: 1 << 20}, http.StatusRequestEntityTooLarge},
		"trickled past the body deadline": {fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout},
		"cut off":                         {io.ErrUnexpectedEOF, http.StatusBadRequest},
	} {
		if code, msg := bodyError(tt.err); code != tt.code || msg == "" {
			t.Errorf("%s: bodyError = %d %q, want %d", name, code, msg, tt.code)
		}
	}
}
