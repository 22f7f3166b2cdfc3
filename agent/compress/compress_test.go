package compress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
)

// memCheckpoints is a CheckpointStore in memory with error injection.
type memCheckpoints struct {
	mu      sync.Mutex
	saved   []echogate.StoredMessage
	saveErr error
	loadErr error
}

func (m *memCheckpoints) SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saveErr != nil {
		return m.saveErr
	}
	m.saved = append(m.saved, cp)
	return nil
}

func (m *memCheckpoints) LatestCheckpoint(ctx context.Context, session echogate.SessionKey) (echogate.StoredMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loadErr != nil {
		return echogate.StoredMessage{}, m.loadErr
	}
	for i := len(m.saved) - 1; i >= 0; i-- {
		if m.saved[i].Session == session {
			return m.saved[i], nil
		}
	}
	return echogate.StoredMessage{}, fmt.Errorf("checkpoint of %s: %w", session, echogate.ErrNotFound)
}

func (m *memCheckpoints) all() []echogate.StoredMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]echogate.StoredMessage(nil), m.saved...)
}

// usages records reported usage.
type usages struct {
	mu sync.Mutex
	us []echogate.Usage
}

func (u *usages) report(x echogate.Usage) { u.mu.Lock(); u.us = append(u.us, x); u.mu.Unlock() }
func (u *usages) list() []echogate.Usage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]echogate.Usage(nil), u.us...)
}

func user(s string) echogate.Message { return echogate.Message{Role: echogate.RoleUser, Content: s} }
func assistant(s string) echogate.Message {
	return echogate.Message{Role: echogate.RoleAssistant, Content: s}
}
func call(id, name string) echogate.Message {
	return echogate.Message{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: id, Name: name, Arguments: "{}"}}}
}
func result(id, name, content string) echogate.Message {
	return echogate.Message{Role: echogate.RoleTool, ToolCallID: id, Name: name, Content: content}
}

// words returns n bytes of ASCII text that starts with tag.
func words(tag string, n int) string {
	s := tag + " " + strings.Repeat("lorem ipsum ", n/12+1)
	return s[:max(n, len(tag))]
}

// stored numbers msgs as a transcript from seq 1.
func stored(session echogate.SessionKey, msgs []echogate.Message) []echogate.StoredMessage {
	out := make([]echogate.StoredMessage, len(msgs))
	for i, m := range msgs {
		out[i] = echogate.StoredMessage{Seq: int64(i + 1), Session: session, Message: m}
	}
	return out
}

func roles(msgs []echogate.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch {
		case IsCheckpoint(m):
			b.WriteString("C")
		case isAck(m):
			b.WriteString("k")
		case m.Role == echogate.RoleUser:
			b.WriteString("u")
		case m.Role == echogate.RoleAssistant && len(m.ToolCalls) > 0:
			b.WriteString("c")
		case m.Role == echogate.RoleAssistant:
			b.WriteString("a")
		case m.Role == echogate.RoleTool:
			b.WriteString("t")
		default:
			b.WriteString("?")
		}
	}
	return b.String()
}

// wellFormed checks that every tool result directly follows its call's assistant message (or a
// sibling result), and every call is answered.
func wellFormed(msgs []echogate.Message) error {
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == echogate.RoleTool {
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result %s without its call right before", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d: calls %v unanswered", i, open)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	return nil
}

func TestEstimateText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{strings.Repeat("x", 400), 100},
		{"héllo", 2},    // 4 ASCII bytes (1) + é (1)
		{"日本語のテキスト", 8}, // one per character
		{"\xff\xfe", 2}, // invalid bytes count as characters
	} {
		if got := EstimateText(tt.in); got != tt.want {
			t.Errorf("EstimateText(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestEstimateMessage(t *testing.T) {
	for name, tt := range map[string]struct {
		m    echogate.Message
		want int
	}{
		"empty":     {echogate.Message{Role: echogate.RoleUser}, MessageOverhead},
		"text":      {user(strings.Repeat("x", 40)), MessageOverhead + 10},
		"named":     {echogate.Message{Role: echogate.RoleUser, Content: "abcd", Name: "ann"}, MessageOverhead + 1 + 1 + 1},
		"tool call": {echogate.Message{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "c1", Name: "time", Arguments: `{"tz":"UTC"}`}}}, MessageOverhead + ToolCallOverhead + 1 + 1 + 3},
		"result":    {result("c1", "time", "noon"), MessageOverhead + 1 + 1 + 1 + 1},
		"image":     {echogate.Message{Role: echogate.RoleUser, Images: []echogate.ImagePart{{URL: "https://x/y.png"}}}, MessageOverhead + ImageTokens},
	} {
		if got := EstimateMessage(tt.m); got != tt.want {
			t.Errorf("%s: EstimateMessage = %d, want %d", name, got, tt.want)
		}
	}
	msgs := []echogate.Message{user("abcd"), assistant("abcd")}
	if got, want := EstimateMessages(msgs, nil), ReplyPriming+2*(MessageOverhead+1); got != want {
		t.Errorf("EstimateMessages = %d, want %d", got, want)
	}
	if got, want := EstimateMessages(msgs, func(echogate.Message) int { return 10 }), ReplyPriming+20; got != want {
		t.Errorf("EstimateMessages(custom) = %d, want %d", got, want)
	}
}

func TestSplit(t *testing.T) {
	unit := func(echogate.Message) int { return 10 } // every message costs 10
	conv := []echogate.Message{
		user("u1"), assistant("a1"),
		user("u2"), call("c1", "t"), result("c1", "t", "r1"), assistant("a2"),
		user("u3"), call("c2", "t"), result("c2", "t", "r2"), result("c2b", "t", "r2b"), assistant("a3"),
		user("u4"), assistant("a4"),
	}
	conv[7].ToolCalls = append(conv[7].ToolCalls, echogate.ToolCall{ID: "c2b", Name: "t"})
	withHead := append([]echogate.Message{{Role: echogate.RoleUser, Content: CheckpointTitle + "\n\nold"}, assistant(ackText)}, conv[6:]...)
	current := []echogate.Message{
		user("u1"), assistant("a1"),
		user("u2"), call("c1", "t"), result("c1", "t", "r1"), call("c2", "t"), result("c2", "t", "r2"), call("c3", "t"), result("c3", "t", "r3"),
	}
	for name, tt := range map[string]struct {
		msgs   []echogate.Message
		keep   int
		budget int
		want   string // roles of summarize|tail
		pinned bool
	}{
		"keep two turns":            {conv, 2, 1000, "uaucta|ucttaua", false},
		"keep four turns":           {conv, 4, 1000, "ua|uctaucttaua", false}, // the oldest goes: something must
		"keep more than there are":  {conv, 9, 1000, "ua|uctaucttaua", false},
		"fewer turns when too big":  {conv, 4, 60, "uauctauctta|ua", false},
		"old checkpoint summarized": {withHead, 1, 1000, "Ckuctta|ua", false},
		"current turn fits":         {current, 1, 70, "ua|uctctct", false},
		"current turn pinned":       {current, 1, 50, "uact|uctct", true},
		"pinned, last group only":   {current, 1, 40, "uactct|uct", true},
		"nothing fits: last group":  {current, 1, 20, "uactct|uct", true},
	} {
		p := split(tt.msgs, unit, tt.keep, tt.budget)
		if got := roles(p.summarize) + "|" + roles(p.tail); got != tt.want {
			t.Errorf("%s: split = %s, want %s", name, got, tt.want)
		}
		if err := wellFormed(p.tail); err != nil {
			t.Errorf("%s: tail %s is not well formed: %v", name, roles(p.tail), err)
		}
		if p.pinned != tt.pinned {
			t.Errorf("%s: pinned = %v, want %v", name, p.pinned, tt.pinned)
		}
		if len(p.summarize)+len(p.tail) != len(tt.msgs) {
			t.Errorf("%s: split %d+%d messages, want %d", name, len(p.summarize), len(p.tail), len(tt.msgs))
		}
	}
}

// TestSplitNeverSeparatesToolResults tries every budget and keep count on a conversation full of
// parallel tool calls: the kept part is always well formed and starts with a user message.
func TestSplitNeverSeparatesToolResults(t *testing.T) {
	var conv []echogate.Message
	for i := range 6 {
		conv = append(conv, user(words(fmt.Sprintf("q%d", i), 40+i*30)))
		for j := range i % 3 {
			id1, id2 := fmt.Sprintf("c%d_%d_a", i, j), fmt.Sprintf("c%d_%d_b", i, j)
			conv = append(conv, echogate.Message{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: id1, Name: "t"}, {ID: id2, Name: "t"}}},
				result(id1, "t", words("r", 200)), result(id2, "t", words("r", 90)))
		}
		conv = append(conv, assistant(words(fmt.Sprintf("a%d", i), 100)))
	}
	for keep := 1; keep <= 6; keep++ {
		for budget := 10; budget <= 800; budget += 7 {
			p := split(conv, EstimateMessage, keep, budget)
			if err := wellFormed(p.tail); err != nil {
				t.Fatalf("split(keep %d, budget %d): tail %s: %v", keep, budget, roles(p.tail), err)
			}
			if len(p.tail) == 0 || p.tail[0].Role != echogate.RoleUser {
				t.Fatalf("split(keep %d, budget %d): tail %s, want it to start with the user message", keep, budget, roles(p.tail))
			}
			if p.truncated == 0 && budget >= 90 { // 90: the last request and its final group
				if n := EstimateMessages(p.tail, nil) - ReplyPriming; n > budget {
					t.Fatalf("split(keep %d, budget %d): tail of %d tokens, want it within the budget", keep, budget, n)
				}
			}
		}
	}
}

func TestTruncateToFit(t *testing.T) {
	big := words("big", 20000)
	msgs := []echogate.Message{user("question"), call("c1", "fetch"), result("c1", "fetch", big)}
	out, n := truncateToFit(msgs, EstimateMessage, 500)
	if n != 1 {
		t.Errorf("truncateToFit cut %d messages, want 1", n)
	}
	if got := EstimateMessages(out, nil) - ReplyPriming; got > 500 {
		t.Errorf("truncateToFit: %d tokens, want <= 500", got)
	}
	if msgs[2].Content != big {
		t.Error("truncateToFit changed its input")
	}
	if !strings.HasPrefix(out[2].Content, "big lorem") || !strings.Contains(out[2].Content, "left out by context compression") {
		t.Errorf("truncated content = %.80q…, want its beginning and a marker", out[2].Content)
	}
	if out, n := truncateToFit(msgs[:2], EstimateMessage, 500); n != 0 || len(out) != 2 {
		t.Errorf("truncateToFit(fitting) = %d messages, %d cut; want unchanged", len(out), n)
	}
}

func TestTruncateMiddle(t *testing.T) {
	s := strings.Repeat("日本語", 200) // 1800 bytes of 3-byte runes
	for _, n := range []int{1, 2, 100, 101, 1000, 1799} {
		got := truncateMiddle(s, n)
		if !utf8.ValidString(got) {
			t.Errorf("truncateMiddle(%d) is not valid UTF-8", n)
		}
		if len(got) > n+len(truncMarker)+8 {
			t.Errorf("truncateMiddle(%d) = %d bytes, want about %d", n, len(got), n)
		}
	}
	if got := truncateMiddle("short", 10); got != "short" {
		t.Errorf("truncateMiddle(short) = %q, want it unchanged", got)
	}
	if got := truncateEnd("日本語", 4); !utf8.ValidString(got) || !strings.HasPrefix(got, "日") {
		t.Errorf("truncateEnd = %q, want a valid prefix", got)
	}
}

const testSession = echogate.SessionKey("web:s1")

// conversation returns n user turns of about 128 tokens each (a 240-byte question and answer).
func conversation(n int) []echogate.Message {
	var msgs []echogate.Message
	for i := range n {
		msgs = append(msgs, user(words(fmt.Sprintf("question %d", i), 240)), assistant(words(fmt.Sprintf("answer %d", i), 240)))
	}
	return msgs
}

func newTestCompressor(t *testing.T, cfg Config, steps ...agenttest.Step) (*Compressor, *agenttest.ScriptedModel, *memCheckpoints) {
	t.Helper()
	if cfg.ContextWindows == nil {
		cfg.ContextWindows = map[string]int{"chat": 2000}
	}
	if cfg.ChatModel == "" {
		cfg.ChatModel = "chat"
	}
	if cfg.KeepTurns == 0 {
		cfg.KeepTurns = 3
	}
	cfg.Now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	model := agenttest.NewScriptedModel(steps...)
	store := &memCheckpoints{}
	c, err := New(cfg, model, store, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, model, store
}

const summaryText = "## Goal\nPlan the trip.\n## Constraints\nnone\n## Key facts\nquestion 0 was asked first.\n## Tool results\nnone\n## Open items\nnone"

// longTurn returns a conversation of 13 turns (seq 1..26) and a new user message that takes the
// prompt (about 1730 tokens) over the test limit of 1600.
func longTurn() (hist []echogate.StoredMessage, next echogate.Message) {
	return stored(testSession, conversation(13)), user(words("question 13", 240))
}

// startTurn simulates the ContextStage: Rebuild on the stored history, then the new message.
func startTurn(c *Compressor, hist []echogate.StoredMessage, next echogate.Message) []echogate.Message {
	head, rest := c.Rebuild(context.Background(), testSession, hist)
	msgs := append([]echogate.Message(nil), head...)
	for _, sm := range rest {
		msgs = append(msgs, sm.Message)
	}
	return append(msgs, next)
}

func TestCompactUnderLimitIsANoOp(t *testing.T) {
	c, model, store := newTestCompressor(t, Config{})
	var u usages
	msgs := conversation(5) // about 640 tokens, limit 1600
	out, changed, err := c.Compact(context.Background(), testSession, msgs, u.report)
	if err != nil || changed || len(out) != len(msgs) {
		t.Fatalf("Compact(small) = %d messages, %v, %v; want unchanged, false, nil", len(out), changed, err)
	}
	if model.Calls() != 0 || len(u.list()) != 0 || len(store.all()) != 0 {
		t.Errorf("Compact(small): %d model calls, %d usages, %d checkpoints; want none", model.Calls(), len(u.list()), len(store.all()))
	}
}

func TestCompactSummarizesIntoACheckpoint(t *testing.T) {
	var req agent.Request
	c, model, store := newTestCompressor(t, Config{}, agenttest.Step{
		Text:  summaryText,
		Usage: echogate.Usage{InputTokens: 900, OutputTokens: 60},
		Expect: func(r agent.Request) error {
			req = r
			return nil
		},
	})
	var u usages
	hist, next := longTurn()
	msgs := startTurn(c, hist, next)
	if n := EstimateMessages(msgs, nil); n <= c.Limit() {
		t.Fatalf("test conversation is %d tokens, want it over the limit %d", n, c.Limit())
	}

	out, changed, err := c.Compact(context.Background(), testSession, msgs, u.report)
	if err != nil || !changed {
		t.Fatalf("Compact = %v, %v; want changed, nil", changed, err)
	}
	if got, want := roles(out), "Ck"+"uaua"+"u"; got != want {
		t.Fatalf("Compact roles = %s, want %s (checkpoint, ack, the last 3 user turns verbatim)", got, want)
	}
	for i, m := range out[2:] {
		if want := msgs[len(msgs)-5+i]; m.Content != want.Content || m.Role != want.Role {
			t.Errorf("kept message %d = %.30q, want %.30q verbatim", i, m.Content, want.Content)
		}
	}
	if n := EstimateMessages(out, nil); n > c.Limit() {
		t.Errorf("compacted prompt = %d tokens, want <= limit %d", n, c.Limit())
	}
	if !strings.HasPrefix(out[0].Content, CheckpointTitle) || !strings.Contains(out[0].Content, summaryText) {
		t.Errorf("checkpoint = %q, want the title and the summary", out[0].Content)
	}

	// The summarizer was asked for the structure, with the old turns as data.
	if model.Calls() != 1 {
		t.Fatalf("model calls = %d, want 1", model.Calls())
	}
	if req.Model != "chat" || req.MaxTokens != c.cfg.summaryTokens() || len(req.Messages) != 2 {
		t.Errorf("summary request = model %q, max %d, %d messages; want chat, %d, 2", req.Model, req.MaxTokens, len(req.Messages), c.cfg.summaryTokens())
	}
	for _, s := range []string{"## Goal", "## Constraints", "## Key facts", "## Tool results", "## Open items"} {
		if !strings.Contains(req.Messages[0].Content, s) {
			t.Errorf("summary instructions lack %q", s)
		}
	}
	if tr := req.Messages[1].Content; !strings.Contains(tr, "question 0") || !strings.Contains(tr, "answer 10") || strings.Contains(tr, "question 11") {
		t.Errorf("summarized transcript = %.200q…, want questions 0-10 and not the kept turns", tr)
	}

	// Usage: once, as compression.
	us := u.list()
	if len(us) != 1 || us[0].Kind != echogate.UsageCompression || us[0].Model != "chat" || us[0].InputTokens != 900 || us[0].OutputTokens != 60 || us[0].Failed {
		t.Errorf("usage = %+v, want exactly one compression usage of chat, 900 in, 60 out", us)
	}

	// The checkpoint is stored, covering the summarized transcript (seq 1..22).
	saved := store.all()
	if len(saved) != 1 || saved[0].Seq != 22 || saved[0].Session != testSession || saved[0].Message.Content != out[0].Content {
		t.Fatalf("saved checkpoints = %+v, want one covering seq 22", saved)
	}

	// The next turn rebuilds from the checkpoint: the transcript grew by the new message and
	// its answer (seq 27, 28); the history window holds the last 20 messages.
	all := stored(testSession, append(conversation(13), next, assistant("answer 13")))
	head, rest := c.Rebuild(context.Background(), testSession, all[len(all)-20:])
	if len(head) != 2 || head[0].Content != out[0].Content || !isAck(head[1]) {
		t.Fatalf("Rebuild head = %s, want the checkpoint and its acknowledgement", roles(head))
	}
	if len(rest) != 6 || rest[0].Seq != 23 {
		t.Errorf("Rebuild rest = %d messages from seq %d, want 6 from seq 23", len(rest), rest[0].Seq)
	}
}

func TestCompactKeepsLatestToolResultsVerbatim(t *testing.T) {
	c, model, _ := newTestCompressor(t, Config{KeepToolResults: 2}, agenttest.Reply(summaryText))
	var conv []echogate.Message
	conv = append(conv, user("what is the weather in Oslo and Rome?"),
		echogate.Message{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "w1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "w2", Name: "weather", Arguments: `{"city":"Rome"}`}}},
		result("w1", "weather", "Oslo: 3°C, snow"), result("w2", "weather", "Rome: 17°C, sun"), assistant("Oslo is cold, Rome is mild."))
	conv = append(conv, conversation(12)...)
	msgs := startTurn(c, stored(testSession, conv), user("and tomorrow?"))
	var u usages
	out, changed, err := c.Compact(context.Background(), testSession, msgs, u.report)
	if err != nil || !changed {
		t.Fatalf("Compact = %v, %v; want changed", changed, err)
	}
	cp := out[0].Content
	for _, s := range []string{"## Latest tool results (verbatim)", "### weather (call w1)\nOslo: 3°C, snow", "### weather (call w2)\nRome: 17°C, sun"} {
		if !strings.Contains(cp, s) {
			t.Errorf("checkpoint lacks %q:\n%s", s, cp)
		}
	}
	if tr := model.Requests()[0].Messages[1].Content; !strings.Contains(tr, `[calls tool weather with {"city":"Oslo"}]`) || !strings.Contains(tr, "--- tool result of weather ---\nRome: 17°C, sun") {
		t.Errorf("transcript does not render tool calls and results:\n%.600s", tr)
	}
	if err := wellFormed(out); err != nil {
		t.Errorf("compacted conversation: %v", err)
	}
}

func TestCompactFallsBackWhenTheSummaryFails(t *testing.T) {
	for name, step := range map[string]agenttest.Step{
		"model error":   agenttest.Fail(errors.New("503 from upstream")),
		"empty summary": agenttest.Reply("   "),
	} {
		t.Run(name, func(t *testing.T) {
			c, _, store := newTestCompressor(t, Config{}, step)
			var u usages
			hist, next := longTurn()
			msgs := startTurn(c, hist, next)
			out, changed, err := c.Compact(context.Background(), testSession, msgs, u.report)
			if err != nil || !changed {
				t.Fatalf("Compact = %v, %v; want changed, nil (the turn goes on)", changed, err)
			}
			if out[0].Content != omittedText || !isAck(out[1]) {
				t.Errorf("fallback head = %q, want the omitted note", out[0].Content)
			}
			if last := out[len(out)-1]; last.Content != next.Content {
				t.Errorf("fallback lost the new message: last = %.30q", last.Content)
			}
			if n := EstimateMessages(out, nil); n > c.Limit() {
				t.Errorf("fallback prompt = %d tokens, want <= %d", n, c.Limit())
			}
			us := u.list()
			if len(us) != 1 || us[0].Kind != echogate.UsageCompression {
				t.Errorf("usage = %+v, want one compression usage", us)
			}
			if name == "model error" && !us[0].Failed {
				t.Errorf("usage of a failed call = %+v, want Failed", us[0])
			}
			if len(store.all()) != 0 {
				t.Errorf("saved %d checkpoints, want none", len(store.all()))
			}
		})
	}
}

func TestCompactSummaryTimeout(t *testing.T) {
	gate := make(chan struct{}) // never opened: the call hangs until its deadline
	c, _, _ := newTestCompressor(t, Config{Timeout: 20 * time.Millisecond}, agenttest.Step{Text: summaryText, Gate: gate})
	var u usages
	hist, next := longTurn()
	msgs := startTurn(c, hist, next)
	out, changed, err := c.Compact(context.Background(), testSession, msgs, u.report)
	if err != nil || !changed || out[0].Content != omittedText {
		t.Fatalf("Compact(hung summarizer) = %v, %v, head %.40q; want the drop-oldest fallback", changed, err, out[0].Content)
	}
	if us := u.list(); len(us) != 1 || !us[0].Failed {
		t.Errorf("usage = %+v, want one failed compression usage", us)
	}
}

func TestCompactEndsWithTheTurn(t *testing.T) {
	c, _, _ := newTestCompressor(t, Config{}, agenttest.Reply(summaryText))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hist, next := longTurn()
	_, changed, err := c.Compact(ctx, testSession, startTurn(c, hist, next), nil)
	if !errors.Is(err, context.Canceled) || changed {
		t.Errorf("Compact(cancelled) = %v, %v; want context.Canceled", changed, err)
	}
}

func TestCompactWithoutRebuildDoesNotStore(t *testing.T) {
	c, _, store := newTestCompressor(t, Config{}, agenttest.Reply(summaryText))
	out, changed, err := c.Compact(context.Background(), "web:other", append(conversation(13), user("and now?")), nil)
	if err != nil || !changed || !IsCheckpoint(out[0]) {
		t.Fatalf("Compact = %v, %v; want a checkpoint", changed, err)
	}
	if len(store.all()) != 0 {
		t.Errorf("stored %d checkpoints without knowing the transcript positions, want 0", len(store.all()))
	}
}

func TestCompactStoreFailureKeepsTheTurnGoing(t *testing.T) {
	c, _, store := newTestCompressor(t, Config{}, agenttest.Reply(summaryText))
	store.saveErr = errors.New("disk full")
	hist, next := longTurn()
	msgs := startTurn(c, hist, next)
	var u usages
	out, changed, err := c.Compact(context.Background(), testSession, msgs, u.report)
	if err != nil || !changed || !IsCheckpoint(out[0]) || len(u.list()) != 1 {
		t.Errorf("Compact(store failing) = %v, %v, %d usages; want the checkpoint and one usage", changed, err, len(u.list()))
	}
}

// TestCompactAgainMergesTheCheckpoint: a second compression summarizes the first checkpoint with
// the turns after it and covers further.
func TestCompactAgainMergesTheCheckpoint(t *testing.T) {
	c, model, store := newTestCompressor(t, Config{}, agenttest.Reply(summaryText), agenttest.Reply("## Goal\nsecond"))
	hist, next := longTurn()
	msgs := startTurn(c, hist, next)
	if _, _, err := c.Compact(context.Background(), testSession, msgs, nil); err != nil {
		t.Fatal(err)
	}
	// Ten more turns later (seq 27..48), the next turn starts from the checkpoint (which
	// covers seq 22) and compresses again.
	full := append(append(conversation(13), next, assistant("answer 13")), conversation(10)...)
	all := stored(testSession, full)
	msgs = startTurn(c, all[len(all)-38:], user("one more question"))
	if roles(msgs[:2]) != "Ck" {
		t.Fatalf("second turn starts with %s, want the checkpoint", roles(msgs[:3]))
	}
	out, changed, err := c.Compact(context.Background(), testSession, msgs, nil)
	if err != nil || !changed || !strings.Contains(out[0].Content, "second") {
		t.Fatalf("second Compact = %v, %v; want the second checkpoint", changed, err)
	}
	tr := model.Requests()[1].Messages[1].Content
	if !strings.HasPrefix(tr, "Conversation to condense into a checkpoint:\n\n--- earlier checkpoint ---\n") || !strings.Contains(tr, "Plan the trip.") {
		t.Errorf("second transcript = %.300q, want it to start with the earlier checkpoint", tr)
	}
	saved := store.all()
	if len(saved) != 2 || saved[1].Seq != int64(len(full)-4) {
		t.Errorf("second checkpoint covers seq %d, want %d", saved[len(saved)-1].Seq, len(full)-4)
	}
}

func TestCompactCutsAnOversizedCurrentTurn(t *testing.T) {
	c, model, _ := newTestCompressor(t, Config{}, agenttest.Reply(summaryText))
	msgs := []echogate.Message{user("fetch the page"), call("f1", "http_fetch"), result("f1", "http_fetch", words("page", 40000))}
	out, changed, err := c.Compact(context.Background(), testSession, msgs, nil)
	if err != nil || !changed {
		t.Fatalf("Compact = %v, %v; want changed", changed, err)
	}
	if got := roles(out); got != "uct" {
		t.Errorf("roles = %s, want uct (nothing older to summarize)", got)
	}
	if n := EstimateMessages(out, nil); n > c.Limit() {
		t.Errorf("prompt = %d tokens, want <= %d", n, c.Limit())
	}
	if model.Calls() != 0 {
		t.Errorf("model calls = %d, want 0", model.Calls())
	}
}

// TestCompactPinsTheCurrentRequest: a turn whose own tool loop outgrew the window keeps its
// user message and latest tool results; its earlier tool rounds go into the checkpoint.
func TestCompactPinsTheCurrentRequest(t *testing.T) {
	c, _, _ := newTestCompressor(t, Config{}, agenttest.Reply(summaryText))
	msgs := append(conversation(2), user("research this"))
	for i := range 8 {
		id := fmt.Sprintf("r%d", i)
		msgs = append(msgs, call(id, "search"), result(id, "search", words("hit "+id, 800)))
	}
	out, changed, err := c.Compact(context.Background(), testSession, msgs, nil)
	if err != nil || !changed {
		t.Fatalf("Compact = %v, %v", changed, err)
	}
	if roles(out[:3]) != "Cku" || out[2].Content != "research this" {
		t.Errorf("compacted = %s starting %q, want checkpoint, ack, the pinned request", roles(out), out[2].Content)
	}
	if last := out[len(out)-1]; last.ToolCallID != "r7" {
		t.Errorf("last kept = %q, want the latest tool result r7", last.ToolCallID)
	}
	if err := wellFormed(out); err != nil {
		t.Error(err)
	}
	if n := EstimateMessages(out, nil); n > c.Limit() {
		t.Errorf("prompt = %d tokens, want <= %d", n, c.Limit())
	}
}

func TestRebuild(t *testing.T) {
	hist := stored(testSession, conversation(5)) // seq 1..10
	cp := func(seq int64) echogate.StoredMessage {
		return echogate.StoredMessage{Session: testSession, Seq: seq, Message: echogate.Message{Role: echogate.RoleUser, Content: CheckpointTitle + "\n\nsummary"}}
	}
	for name, tt := range map[string]struct {
		saved    []echogate.StoredMessage
		loadErr  error
		hist     []echogate.StoredMessage
		wantHead int
		wantFrom int64 // first Seq of rest
	}{
		"no checkpoint":        {nil, nil, hist, 0, 1},
		"store error":          {[]echogate.StoredMessage{cp(4)}, errors.New("db down"), hist, 0, 1},
		"checkpoint":           {[]echogate.StoredMessage{cp(4)}, nil, hist, 2, 5},
		"latest wins":          {[]echogate.StoredMessage{cp(2), cp(6)}, nil, hist, 2, 7},
		"before window":        {[]echogate.StoredMessage{cp(4)}, nil, hist[6:], 2, 7},
		"stale: covers all":    {[]echogate.StoredMessage{cp(10)}, nil, hist, 0, 1},
		"stale: beyond":        {[]echogate.StoredMessage{cp(57)}, nil, hist, 0, 1},
		"stale: empty history": {[]echogate.StoredMessage{cp(4)}, nil, nil, 0, 0},
	} {
		c, _, store := newTestCompressor(t, Config{})
		store.saved, store.loadErr = tt.saved, tt.loadErr
		head, rest := c.Rebuild(context.Background(), testSession, tt.hist)
		if len(head) != tt.wantHead {
			t.Errorf("%s: Rebuild head = %s, want %d messages", name, roles(head), tt.wantHead)
		}
		if len(rest) > 0 && rest[0].Seq != tt.wantFrom || len(rest) == 0 && tt.wantFrom != 0 {
			t.Errorf("%s: Rebuild rest = %d messages, want from seq %d", name, len(rest), tt.wantFrom)
		}
		if len(rest) > 0 && rest[len(rest)-1].Seq != 10 {
			t.Errorf("%s: Rebuild rest ends at %d, want 10", name, rest[len(rest)-1].Seq)
		}
	}
}

func TestNewValidates(t *testing.T) {
	model := agenttest.NewScriptedModel()
	store := &memCheckpoints{}
	for name, tt := range map[string]struct {
		cfg   Config
		model agent.Model
		store CheckpointStore
		want  string
	}{
		"ok":             {Config{ChatModel: "m"}, model, store, ""},
		"summary model":  {Config{Model: "s"}, model, store, ""},
		"no model name":  {Config{}, model, store, "set ChatModel"},
		"nil model":      {Config{ChatModel: "m"}, nil, store, "nil agent.Model"},
		"nil store":      {Config{ChatModel: "m"}, model, nil, "nil CheckpointStore"},
		"threshold high": {Config{ChatModel: "m", Threshold: 1.5}, model, store, "Threshold 1.5"},
		"threshold neg":  {Config{ChatModel: "m", Threshold: -0.1}, model, store, "Threshold"},
		"keep turns":     {Config{ChatModel: "m", KeepTurns: -1}, model, store, "KeepTurns -1"},
		"bad window":     {Config{ChatModel: "m", ContextWindows: map[string]int{"m": -5}}, model, store, `model "m" is -5`},
		"tiny window":    {Config{ChatModel: "m", ContextWindows: map[string]int{"m": 100}}, model, store, "too small"},
		"reserve":        {Config{ChatModel: "m", Reserve: -1}, model, store, "Reserve"},
	} {
		_, err := New(tt.cfg, tt.model, tt.store, nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: New = %v, want nil", name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrConfig)):
			t.Errorf("%s: New = %v, want ErrConfig mentioning %q", name, err, tt.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{ChatModel: "gpt-x", ContextWindows: map[string]int{"small": 8000}}.withDefaults()
	if c.limit() != int(128000*0.8) || c.KeepTurns != 4 || c.KeepToolResults != 3 || c.Model != "gpt-x" || c.summaryTokens() != 2000 {
		t.Errorf("defaults: limit %d, keep %d, tool results %d, model %q, summary %d; want 102400, 4, 3, gpt-x, 2000",
			c.limit(), c.KeepTurns, c.KeepToolResults, c.Model, c.summaryTokens())
	}
	c = Config{ChatModel: "small", ContextWindows: map[string]int{"small": 8000}, Reserve: 1400}.withDefaults()
	if c.limit() != 5000 || c.summaryTokens() != 625 {
		t.Errorf("small window: limit %d, summary %d; want 5000, 625", c.limit(), c.summaryTokens())
	}
	if c := (Config{ChatModel: "m", KeepToolResults: -1}).withDefaults(); c.KeepToolResults != 0 || c.toolResultTokens() != 0 {
		t.Errorf("KeepToolResults -1 = %d, want 0 (none)", c.KeepToolResults)
	}
}

func TestRenderTranscriptFitsTheBudget(t *testing.T) {
	msgs := []echogate.Message{
		{Role: echogate.RoleUser, Content: CheckpointTitle + "\n\n" + checkpointIntro + "\n\n" + words("old summary", 2000)},
		assistant(ackText),
		echogate.Message{Role: echogate.RoleUser, Name: "ann", Content: words("question", 4000)},
		call("c1", "fetch"),
		echogate.Message{Role: echogate.RoleTool, ToolCallID: "c1", Name: "fetch", Content: words("page", 40000), IsError: false},
		echogate.Message{Role: echogate.RoleTool, ToolCallID: "c2", Name: "fetch", Content: "404", IsError: true},
		assistant("short answer"),
	}
	for _, budget := range []int{100000, 3000, 1500} {
		got := renderTranscript(msgs, budget)
		if n := EstimateText(got); n > budget+budget/10 {
			t.Errorf("renderTranscript(budget %d) = %d tokens, want about the budget or less", budget, n)
		}
		for _, s := range []string{"--- earlier checkpoint ---\nold summary", "--- user (ann) ---\nquestion", "[calls tool fetch with {}]",
			"--- tool result of fetch ---\npage", "--- tool error of fetch ---\n404", "--- assistant ---\nshort answer"} {
			if !strings.Contains(got, s) {
				t.Errorf("renderTranscript(budget %d) lacks %q", budget, s)
			}
		}
		if strings.Contains(got, ackText) || strings.Contains(got, checkpointIntro) {
			t.Errorf("renderTranscript(budget %d) renders the checkpoint boilerplate", budget)
		}
		if !strings.Contains(got, words("old summary", 2000)) {
			t.Errorf("renderTranscript(budget %d) cut the earlier checkpoint", budget)
		}
	}
	if got := renderTranscript(msgs, 100000); strings.Contains(got, "left out") {
		t.Error("renderTranscript with room to spare cut something")
	}
}

// TestCoverageIsConservative: duplicate messages never make a checkpoint claim to cover a stored
// message it did not summarize.
func TestCoverageIsConservative(t *testing.T) {
	c, _, store := newTestCompressor(t, Config{KeepTurns: 2}, agenttest.Reply(summaryText))
	var conv []echogate.Message
	for i := range 13 {
		conv = append(conv, user("ok"), assistant(words(fmt.Sprintf("answer %d", i), 520)))
	}
	hist := stored(testSession, conv)
	msgs := startTurn(c, hist, user("ok"))
	out, changed, err := c.Compact(context.Background(), testSession, msgs, nil)
	if err != nil || !changed {
		t.Fatalf("Compact = %v, %v", changed, err)
	}
	kept := len(out) - 2 // the tail after the checkpoint pair: its stored part must not be covered
	saved := store.all()
	if len(saved) != 1 {
		t.Fatalf("saved %d checkpoints, want 1", len(saved))
	}
	firstKept := int64(len(hist)) - int64(kept-1) + 1 // the tail holds kept-1 stored messages and the new one
	if kept != 3 || saved[0].Seq != firstKept-1 {
		t.Errorf("checkpoint covers seq %d with %d messages kept, want seq %d (everything before the kept turn)", saved[0].Seq, kept, firstKept-1)
	}
}

func TestSummarizerOverride(t *testing.T) {
	var hints agent.Hints
	step := agenttest.Step{Text: summaryText, Expect: func(r agent.Request) error { hints = r.Hints; return nil }}
	c, _, _ := newTestCompressor(t, Config{Model: "cheap-summarizer"}, step)
	hist, next := longTurn()
	if _, _, err := c.Compact(context.Background(), testSession, startTurn(c, hist, next), nil); err != nil {
		t.Fatal(err)
	}
	if hints.Override != "cheap-summarizer" || hints.Session != testSession {
		t.Errorf("summary hints = %+v, want Override cheap-summarizer for session %s", hints, testSession)
	}
}

// TestConcurrentSessions compresses many sessions at once on one Compressor (run with -race).
func TestConcurrentSessions(t *testing.T) {
	c, model, store := newTestCompressor(t, Config{})
	model.SetDefault(agenttest.Reply(summaryText))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			key := echogate.SessionKey(fmt.Sprintf("web:c%d", i))
			hist, next := longTurn()
			for j := range hist {
				hist[j].Session = key
			}
			head, rest := c.Rebuild(context.Background(), key, hist)
			msgs := append([]echogate.Message(nil), head...)
			for _, sm := range rest {
				msgs = append(msgs, sm.Message)
			}
			msgs = append(msgs, next)
			var u usages
			if _, changed, err := c.Compact(context.Background(), key, msgs, u.report); err != nil || !changed || len(u.list()) != 1 {
				errs <- fmt.Errorf("session %s: changed %v, err %v, %d usages", key, changed, err, len(u.list()))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(store.all()); n != 16 {
		t.Errorf("saved %d checkpoints, want 16", n)
	}
}

// TestCompactShrinksAnOversizedCheckpoint: a stored checkpoint that alone nears the window (made
// for a larger window, say) is summarized again.
func TestCompactShrinksAnOversizedCheckpoint(t *testing.T) {
	c, model, _ := newTestCompressor(t, Config{}, agenttest.Reply(summaryText))
	msgs := []echogate.Message{
		{Role: echogate.RoleUser, Content: CheckpointTitle + "\n\n" + words("huge old summary", 8000)},
		assistant(ackText),
		user("next question"),
	}
	out, changed, err := c.Compact(context.Background(), testSession, msgs, nil)
	if err != nil || !changed || model.Calls() != 1 {
		t.Fatalf("Compact = %v, %v after %d model calls; want a new checkpoint from one call", changed, err, model.Calls())
	}
	if got := roles(out); got != "Cku" || !strings.Contains(out[0].Content, summaryText) {
		t.Errorf("Compact = %s %.80q, want the new checkpoint and the question", got, out[0].Content)
	}
	if n := EstimateMessages(out, nil); n > c.Limit() {
		t.Errorf("prompt = %d tokens, want <= %d", n, c.Limit())
	}
}

// countingCheckpoints counts the store reads.
type countingCheckpoints struct {
	*memCheckpoints
	reads int
}

func (s *countingCheckpoints) LatestCheckpoint(ctx context.Context, session echogate.SessionKey) (echogate.StoredMessage, error) {
	s.reads++
	return s.memCheckpoints.LatestCheckpoint(ctx, session)
}

// RebuildContinued reads the store only when the process does not know the latest checkpoint:
// none read yet, or the last save failed. What it knows is what it read or stored.
func TestRebuildContinuedUsesTheKnownCheckpoint(t *testing.T) {
	c, _, mem := newTestCompressor(t, Config{}, agenttest.Step{Text: summaryText})
	store := &countingCheckpoints{memCheckpoints: mem}
	c.store = store
	ctx := context.Background()
	hist, next := longTurn()

	c.RebuildContinued(ctx, testSession, hist) // nothing known: reads (none)
	c.RebuildContinued(ctx, testSession, hist) // knows there is none
	if store.reads != 1 {
		t.Fatalf("reads after two turns without a checkpoint = %d, want 1", store.reads)
	}
	msgs := append(append([]echogate.Message(nil), messagesOf(hist)...), next)
	if _, changed, err := c.Compact(ctx, testSession, msgs, nil); err != nil || !changed {
		t.Fatalf("Compact = %v, %v; want changed", changed, err)
	}
	all := stored(testSession, append(conversation(13), next, assistant("answer 13")))
	head, rest := c.RebuildContinued(ctx, testSession, all[len(all)-20:])
	if store.reads != 1 || len(head) != 2 || head[0].Content != mem.all()[0].Message.Content || rest[0].Seq != 23 {
		t.Fatalf("after the compaction: %d reads, head %s, rest from seq %d; want 1 read, the stored checkpoint, seq 23",
			store.reads, roles(head), rest[0].Seq)
	}
	// Rebuild (a transcript the caller cannot vouch for) always reads.
	c.Rebuild(ctx, testSession, all[len(all)-20:])
	if store.reads != 2 {
		t.Errorf("reads after Rebuild = %d, want 2", store.reads)
	}
	// A failed save leaves the checkpoint unknown: the next turn reads it.
	mem.saveErr = errors.New("disk full")
	c.noteCheckpoint(testSession, echogate.StoredMessage{}, false)
	c.RebuildContinued(ctx, testSession, all[len(all)-20:])
	if store.reads != 3 {
		t.Errorf("reads after a failed save = %d, want 3", store.reads)
	}
}

func messagesOf(hist []echogate.StoredMessage) []echogate.Message {
	out := make([]echogate.Message, len(hist))
	for i, sm := range hist {
		out[i] = sm.Message
	}
	return out
}

// fingerprint tells apart messages that differ in any field, also where the fields meet.
func TestFingerprintSeparatesFields(t *testing.T) {
	base := echogate.Message{Role: echogate.RoleAssistant, Content: "ab", ToolCallID: "c1", Name: "n",
		ToolCalls: []echogate.ToolCall{{ID: "a", Name: "b", Arguments: `{"x":1}`}}}
	variants := map[string]func(m *echogate.Message){
		"content":        func(m *echogate.Message) { m.Content = "ac" },
		"shifted border": func(m *echogate.Message) { m.Content, m.ToolCallID = "abc", "1" },
		"role":           func(m *echogate.Message) { m.Role = echogate.RoleUser },
		"call arguments": func(m *echogate.Message) {
			m.ToolCalls = []echogate.ToolCall{{ID: "a", Name: "b", Arguments: `{"x":2}`}}
		},
		"call border": func(m *echogate.Message) {
			m.ToolCalls = []echogate.ToolCall{{ID: "ab", Name: "", Arguments: `{"x":1}`}}
		},
	}
	same := base
	if fingerprint(same) != fingerprint(base) {
		t.Fatal("fingerprint of equal messages differs")
	}
	for name, change := range variants {
		m := base
		change(&m)
		if fingerprint(m) == fingerprint(base) {
			t.Errorf("%s: fingerprint = the original's, want a different one", name)
		}
	}
}
