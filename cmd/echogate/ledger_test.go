package main

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// TestLedgerUsageExactlyOnce: a turn with two model calls (a tool call, then the answer) and one
// compression, followed by its session's consolidation job, leaves exactly those four model-side
// entries in the ledger — the turn's three sum to what the turn record reports, and the
// consolidation's one is attributed to the session with trigger consolidation. (Embedding calls
// are metered too; they are entries of kind embedding and are checked separately.)
func TestLedgerUsageExactlyOnce(t *testing.T) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{EmbeddingDims: testDims})
	defer fake.Close()
	var mu sync.Mutex
	summaries, consolidations := 0, 0
	fake.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		sys := systemPrompt(req)
		last := req.Messages[len(req.Messages)-1]
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(sys, "You condense"):
			summaries++
			return agenttest.Answer{Text: "## Goal\nChat about notes.\n## Key facts\nThe user shared long notes.", PromptTokens: 300, CompletionTokens: 40}, true
		case strings.Contains(sys, "long-term memory of a chat assistant"):
			consolidations++
			return agenttest.Answer{Text: `[{"text":"Asks for the time often","kind":"fact","importance":0.3}]`, PromptTokens: 200, CompletionTokens: 20}, true
		case last.Role == "tool":
			return agenttest.Answer{Text: "It is noon.", PromptTokens: 120, CompletionTokens: 5}, true
		case strings.Contains(fmt.Sprint(last.Content), "what time"):
			return agenttest.Answer{ToolCalls: []echogate.ToolCall{{Name: "current_time", Arguments: `{}`}}, PromptTokens: 110, CompletionTokens: 7}, true
		}
		return agenttest.Answer{Text: "noted", PromptTokens: 90, CompletionTokens: 2}, true
	})
	dir := t.TempDir()
	cfg := writeConfigIn(t, dir, fmt.Sprintf(`
models:
  default: chat-model
  providers: [{name: fake, base_url: %q, api_key: k, max_retries: -1}]
  context_windows: {chat-model: 4000}
  prices: {chat-model: {input_per_mtok: 1, output_per_mtok: 2}}
embeddings: {model: embed-model, dimensions: %d}
memory: {enabled: true, consolidation: {debounce: 300ms, poll_interval: 50ms}}
agent: {keep_turns: 1, compress_threshold: 0.6}
`, fake.URL(), testDims))
	base, logs, stop := startServe(t, map[string]string{"ECHOGATE_DATA_DIR": dir}, "--config", cfg)
	defer stop()

	const session = "ledger"
	note := strings.Repeat("These are my long meeting notes about the roadmap. ", 40) // ~530 tokens
	for i := 0; i < 2; i++ {
		if evs := postChat(t, base, session, fmt.Sprintf("note %d: %s", i, note)); evs[len(evs)-1].Data["text"] != "noted" {
			t.Fatalf("prefill turn %d answered %v", i, evs[len(evs)-1].Data)
		}
	}
	mu.Lock()
	before := summaries
	mu.Unlock()
	evs := postChat(t, base, session, "what time is it? "+note)
	done := evs[len(evs)-1]
	if done.Data["text"] != "It is noon." {
		t.Fatalf("measured turn answered %v\n%s", done.Data, logs.String())
	}
	turnID := done.Data["turn"].(string)
	mu.Lock()
	turnSummaries := summaries - before
	mu.Unlock()
	if turnSummaries != 1 {
		t.Fatalf("the measured turn compressed %d times, want once (adjust the prefill sizes)", turnSummaries)
	}

	// The consolidation job of the session runs after its debounce.
	deadline := time.Now().Add(waitTimeout)
	for {
		mu.Lock()
		c := consolidations
		mu.Unlock()
		if c > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consolidation within %s\n%s", waitTimeout, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var recs []echogate.UsageRecord
	for {
		var got struct {
			Records []echogate.UsageRecord `json:"records"`
		}
		getJSON(t, base+"/api/usage?session="+url.QueryEscape("web:"+session)+"&limit=1000", &got)
		recs = got.Records
		n := 0
		for _, r := range recs {
			if r.Trigger == echogate.TriggerConsolidation && r.Usage.Kind != echogate.UsageEmbedding {
				n++
			}
		}
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	var turnEntries, consolidation []echogate.UsageRecord
	for _, r := range recs {
		switch {
		case r.Usage.Kind == echogate.UsageEmbedding:
			if r.Usage.InputTokens == 0 {
				t.Errorf("embedding entry without tokens: %+v", r)
			}
		case r.Turn == turnID:
			turnEntries = append(turnEntries, r)
		case r.Trigger == echogate.TriggerConsolidation:
			consolidation = append(consolidation, r)
		}
	}
	kinds := map[echogate.UsageKind]int{}
	var in, out int64
	var cost float64
	for _, r := range turnEntries {
		kinds[r.Usage.Kind]++
		in += r.Usage.InputTokens
		out += r.Usage.OutputTokens
		cost += r.Usage.CostUSD
	}
	if len(turnEntries) != 3 || kinds[echogate.UsageModel] != 2 || kinds[echogate.UsageCompression] != 1 {
		t.Errorf("the turn's ledger entries = %+v, want 2 model calls and 1 compression", turnEntries)
	}
	if len(consolidation) != 1 || consolidation[0].Usage.InputTokens != 200 || consolidation[0].Usage.Kind != echogate.UsageConsolidation && consolidation[0].Usage.Kind != echogate.UsageModel {
		t.Errorf("consolidation entries = %+v, want exactly one, with its real usage", consolidation)
	}
	var turns []echogate.TurnRecord
	getJSON(t, base+"/api/turns?session="+url.QueryEscape("web:"+session), &turns)
	for _, tr := range turns {
		if tr.ID != turnID {
			continue
		}
		if tr.InputTokens != in || tr.OutputTokens != out || math.Abs(tr.CostUSD-cost) > 1e-12 {
			t.Errorf("turn record reports %d/%d tokens $%g; its ledger entries sum to %d/%d $%g", tr.InputTokens, tr.OutputTokens, tr.CostUSD, in, out, cost)
		}
		if want := int64(110 + 120 + 300); in != want {
			t.Errorf("the turn's input tokens = %d, want %d (two model calls and one compression, each once)", in, want)
		}
	}
}
