package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/compress"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools"
)

// memCheckpoints is an in-memory compress.CheckpointStore.
type memCheckpoints struct {
	mu    sync.Mutex
	saved []echogate.StoredMessage
	reads int // LatestCheckpoint calls
}

func (m *memCheckpoints) SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved = append(m.saved, cp)
	return nil
}

func (m *memCheckpoints) LatestCheckpoint(ctx context.Context, key echogate.SessionKey) (echogate.StoredMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	for i := len(m.saved) - 1; i >= 0; i-- {
		if m.saved[i].Session == key {
			return m.saved[i], nil
		}
	}
	return echogate.StoredMessage{}, fmt.Errorf("checkpoint of %s: %w", key, echogate.ErrNotFound)
}

func (m *memCheckpoints) all() []echogate.StoredMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]echogate.StoredMessage(nil), m.saved...)
}

// requestTokens estimates a whole request as the compressor counts: messages and tool definitions.
func requestTokens(req agent.Request) int {
	n := compress.EstimateMessages(req.Messages, nil)
	for _, s := range req.Tools {
		n += compress.EstimateText(s.Name) + compress.EstimateText(s.Description) + compress.EstimateText(string(s.Parameters)) + compress.ToolCallOverhead
	}
	return n
}

// toolPairsIntact reports the first tool result that does not directly follow its call.
func toolPairsIntact(msgs []echogate.Message) error {
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == echogate.RoleTool {
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result %s without its call", i, m.ToolCallID)
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

func pad(tag string, n int) string {
	s := tag + " " + strings.Repeat("and some more detail ", n/21+1)
	return s[:n]
}

// TestLongConversationIsCompressed runs a conversation far longer than a 2000-token context
// window through the whole pipeline: every turn is answered, every request stays under the
// window with tool calls and results together, the checkpoint appears in the requests with the
// last turns verbatim after it, later turns start from the stored checkpoint, and each summary's
// usage is in the ledger exactly once, attributed to its turn.
func TestLongConversationIsCompressed(t *testing.T) {
	const (
		window    = 2000
		keepTurns = 2
		turns     = 26
		session   = "long"
	)
	checkpoints := &memCheckpoints{}
	summarizer := agenttest.NewScriptedModel()
	summarizer.SetDefault(agenttest.Step{
		Text:  "## Goal\nAnswer the user's travel questions.\n## Constraints\nnone\n## Key facts\nOslo was 3°C.\n## Tool results\nweather: Oslo 3°C\n## Open items\nnone",
		Usage: echogate.Usage{InputTokens: 700, OutputTokens: 40},
	})
	weather := newTool("weather", tools.Safe, "Oslo: 3°C, light snow")

	var steps []agenttest.Step
	question := func(i int) string { return pad(fmt.Sprintf("question %d:", i), 240) }
	answer := func(i int) string { return pad(fmt.Sprintf("answer %d:", i), 240) }
	for i := range turns {
		if i == 1 {
			steps = append(steps, agenttest.CallTool("weather", `{"city":"Oslo"}`))
		}
		steps = append(steps, agenttest.Reply(answer(i)))
	}
	h := start(t, opts{
		cfg:   pipeline.Config{Model: "chat-model", HistoryMessages: 80},
		tools: []tools.Tool{weather},
		deps: func(d *pipeline.Deps) {
			c, err := compress.New(compress.Config{
				ContextWindows:   map[string]int{"chat-model": window},
				ChatModel:        "chat-model",
				Model:            "summarizer",
				KeepTurns:        keepTurns,
				SummaryMaxTokens: 150,
			}, summarizer, checkpoints, nil)
			if err != nil {
				t.Fatalf("compress.New: %v", err)
			}
			d.Compactor = c
		},
	}, steps...)

	for i := range turns {
		h.submit(msg(session, "ann", question(i)))
		if d := h.waitDone(); d.Status != "done" || d.Text != answer(i) {
			t.Fatalf("turn %d: done = %s %.30q, want done with answer %d", i, d.Status, d.Text, i)
		}
	}

	reqs := h.model.Requests()
	if len(reqs) != turns+1 {
		t.Fatalf("chat model saw %d requests, want %d", len(reqs), turns+1)
	}
	firstCP := -1
	for i, req := range reqs {
		if n := requestTokens(req); n > window {
			t.Errorf("request %d: %d tokens, want at most the %d-token window", i, n, window)
		}
		if err := toolPairsIntact(req.Messages); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		if len(req.Messages) > 1 && compress.IsCheckpoint(req.Messages[1]) && firstCP < 0 {
			firstCP = i
		}
	}
	if firstCP < 0 {
		t.Fatal("no request carries a checkpoint")
	}
	if testing.Verbose() {
		for i, req := range reqs {
			cp := ""
			if compress.IsCheckpoint(req.Messages[1]) {
				cp = " (checkpoint)"
			}
			t.Logf("request %2d: %4d tokens, %2d messages%s", i, requestTokens(req), len(req.Messages), cp)
		}
	}
	// The first compressed request: system, checkpoint, ack, then the last turns verbatim.
	turn := firstCP - 1 // request 2 is turn 1's second call (after the tool)
	req := reqs[firstCP]
	kept := req.Messages[3:]
	var users []string
	for _, m := range kept {
		if m.Role == echogate.RoleUser {
			users = append(users, m.Content)
		}
	}
	want := []string{question(turn - 1), question(turn)}
	if strings.Join(users, "|") != strings.Join(want, "|") {
		t.Errorf("kept user messages after the checkpoint = %.40q, want the last %d turns verbatim", users, keepTurns)
	}
	if kept[1].Content != answer(turn-1) {
		t.Errorf("kept answer = %.30q, want %.30q verbatim", kept[1].Content, answer(turn-1))
	}
	if !strings.Contains(req.Messages[1].Content, "Answer the user's travel questions.") {
		t.Errorf("checkpoint = %.200q, want the summary in it", req.Messages[1].Content)
	}

	// Later turns start from the stored checkpoint.
	saved := checkpoints.all()
	if len(saved) < 2 || summarizer.Calls() != len(saved) {
		t.Fatalf("%d summaries, %d checkpoints saved; want at least 2 and one per summary", summarizer.Calls(), len(saved))
	}
	next := reqs[firstCP+1]
	if !compress.IsCheckpoint(next.Messages[1]) || next.Messages[1].Content != saved[0].Message.Content {
		t.Errorf("next turn starts with %.60q, want the stored checkpoint", next.Messages[1].Content)
	}
	if got := next.Messages[len(next.Messages)-1].Content; got != question(turn+1) {
		t.Errorf("next turn ends with %.30q, want its question", got)
	}
	if saved[0].Seq <= 0 {
		t.Errorf("checkpoint covers seq %d, want the summarized transcript", saved[0].Seq)
	}
	// The checkpoint is read from the store only while the history cache has not served the
	// conversation yet: later turns know it from their predecessor (read or stored by it).
	checkpoints.mu.Lock()
	if reads := checkpoints.reads; reads > 2 {
		t.Errorf("LatestCheckpoint read %d times in %d turns, want at most 2 (before the history is cached)", reads, turns)
	}
	checkpoints.mu.Unlock()
	// The transcript itself is untouched: every question and answer is stored.
	if got := len(h.transcript(session)); got != 2*turns+2 {
		t.Errorf("transcript has %d messages, want %d", got, 2*turns+2)
	}

	// Usage: each summary once in the ledger, as compression, within its turn's total.
	ctx := context.Background()
	ledger, err := h.store.ListUsage(ctx, echogate.UsageFilter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	perTurn := map[string][]echogate.UsageRecord{}
	compressions := 0
	for _, r := range ledger {
		perTurn[r.Turn] = append(perTurn[r.Turn], r)
		if r.Usage.Kind == echogate.UsageCompression {
			compressions++
			if r.Usage.Model != "summarizer" || r.Usage.InputTokens != 700 || r.Usage.OutputTokens != 40 {
				t.Errorf("compression usage = %+v, want summarizer 700/40", r.Usage)
			}
		}
	}
	if compressions != summarizer.Calls() {
		t.Errorf("ledger has %d compression entries, want %d (one per summary)", compressions, summarizer.Calls())
	}
	for id, recs := range perTurn {
		var kinds []string
		var in, out int64
		for _, r := range recs {
			kinds = append(kinds, string(r.Usage.Kind))
			in += r.Usage.InputTokens
			out += r.Usage.OutputTokens
		}
		tr, err := h.store.GetTurn(ctx, id)
		if err != nil {
			t.Fatalf("GetTurn(%s): %v", id, err)
		}
		if tr.InputTokens != in || tr.OutputTokens != out {
			t.Errorf("turn %s: record %d/%d tokens, ledger (%s) sums to %d/%d", id, tr.InputTokens, tr.OutputTokens, strings.Join(kinds, ","), in, out)
		}
		if slicesCount(kinds, "compression") > 1 {
			t.Errorf("turn %s: ledger kinds %v, want at most one compression", id, kinds)
		}
	}
}

func slicesCount(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}
