package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/provider/openai"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/skills"
)

// fakeMemory is a VersionedContext like the memory service: its snapshot depends on the query
// (relevant memories), and its version changes when a memory is written.
type fakeMemory struct {
	version atomic.Uint64
	calls   atomic.Int64
}

func (m *fakeMemory) ContextSection(ctx context.Context, q echogate.ContextQuery) (string, string, error) {
	m.calls.Add(1)
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "- fact %d of v%d about the user, relevant to %q (preference)\n", i, m.version.Load(), q.Text)
	}
	return "What you remember about this user", b.String(), nil
}

func (m *fakeMemory) ContextVersion(echogate.ContextQuery) uint64 { return m.version.Load() }

// fakeKnowledge returns different passages for every message, about 1 KB.
type fakeKnowledge struct{}

func (fakeKnowledge) ContextSection(ctx context.Context, q echogate.ContextQuery) (string, string, error) {
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, "[d_%x#%d] A passage found for %q: %s\n", len(q.Text), i, q.Text, strings.Repeat("lorem ipsum ", 18))
	}
	return "Knowledge base", b.String(), nil
}

// specTool is a tool with a schema of realistic size; it is never called.
type specTool struct{ name string }

func (s specTool) Spec() tools.Spec {
	params, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		"query": map[string]string{"type": "string", "description": "What to look for, in the user's words " + strings.Repeat("and more detail ", 8)},
		"limit": map[string]string{"type": "integer", "description": "How many results to return at most"},
	}, "required": []string{"query"}})
	return tools.Spec{Name: s.name, Description: "Looks things up for the user. " + strings.Repeat("Use it when the answer needs facts. ", 6),
		Parameters: params, Safety: tools.Safe}
}

func (s specTool) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	return tools.Result{Content: "nothing"}, nil
}

// TestPromptPrefixIsCacheable: 20 turns of one session with a memory snapshot and per-turn
// knowledge hits, through the real OpenAI provider against a model that applies OpenAI's
// prefix-caching rule. Every request starts with the same bytes (tools and system prompt, the
// snapshot included), each request extends the previous one's history, and at least 85% of the
// input tokens are cache reads. A memory write changes the snapshot once. With skills
// installed, their catalogue is part of that prefix and the share still holds.
func TestPromptPrefixIsCacheable(t *testing.T) {
	t.Run("no skills", func(t *testing.T) { checkPromptCache(t, false) })
	t.Run("skills installed", func(t *testing.T) { checkPromptCache(t, true) })
}

func checkPromptCache(t *testing.T, withSkills bool) {
	fake := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{PrefixCache: true,
		Default: &agenttest.Answer{Text: "Here is a short answer to that."}})
	defer fake.Close()
	model, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "sk-test", PromptCacheKey: openai.CacheKeyOn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := &fakeMemory{}
	var toolset []tools.Tool
	for _, n := range []string{"search_docs", "lookup_user", "find_ticket", "read_page", "list_items", "weather",
		"open_issue", "close_issue", "post_note", "schedule", "translate", "summarize"} {
		toolset = append(toolset, specTool{n})
	}
	var lib *skills.Library
	if withSkills {
		set, ps := skills.Load(skills.Config{Dirs: []string{"../examples/skills"}})
		if len(set.Skills()) == 0 || skills.Errors(ps) {
			t.Fatalf("examples/skills: %d skills, problems %v", len(set.Skills()), ps)
		}
		lib = skills.NewLibrary(set)
		st, _ := skills.NewSkillTool(lib)
		ft, _ := skills.NewFileTool(lib, skills.ToolConfig{})
		toolset = append(toolset, st, ft)
	}
	system := "You are the team's assistant. " + strings.Repeat("Follow the team's conventions and answer precisely. ", 80)
	store := pipelinetest.NewMemStore()
	h := start(t, opts{store: store, tools: toolset, cfg: pipeline.Config{SystemPrompt: system, Model: "gpt-4o-mini"}, deps: func(d *pipeline.Deps) {
		d.Model = model
		d.Context = []pipeline.ContextProvider{mem, fakeKnowledge{}}
		if lib != nil {
			d.Skills = lib
		}
	}})

	const turns = 20
	for i := range turns {
		if i == 10 {
			mem.version.Add(1) // the user's memories changed: the snapshot is rendered again
		}
		h.submit(msg("s1", "ann", fmt.Sprintf("question number %d about the project", i)))
		if d := h.waitDone(); d.Status != string(echogate.TurnDoneSt) {
			tr, _ := store.ListTurns(context.Background(), "web:s1", 1)
			t.Fatalf("turn %d ended %s: %s (%+v)", i, d.Status, d.Text, tr)
		}
		h.advance(61e9) // a minute per turn: the note's time changes, the prefix must not
	}

	reqs := fake.ChatRequests()
	if len(reqs) != turns {
		t.Fatalf("model requests = %d, want %d", len(reqs), turns)
	}
	if got := mem.calls.Load(); got != 2 {
		t.Errorf("memory snapshot rendered %d times, want 2 (first turn, after the write)", got)
	}
	key := reqs[0].PromptCacheKey
	for i, r := range reqs {
		if r.PromptCacheKey == "" || r.PromptCacheKey != key {
			t.Errorf("request %d prompt_cache_key = %q, want the session's %q on every request", i, r.PromptCacheKey, key)
		}
		prev := reqs[max(i-1, 0)]
		if i == 10 {
			prev = r // the snapshot changed here, once
		}
		if r.Messages[0].Content != prev.Messages[0].Content || !sameTools(r, reqs[0]) {
			t.Errorf("request %d: system prompt or tools differ from request %d", i, i-1)
		}
		if !strings.Contains(r.Messages[0].Content, "What you remember") || strings.Contains(r.Messages[0].Content, "Knowledge base") {
			t.Errorf("request %d: system prompt must hold the memory snapshot and no knowledge hits", i)
		}
		if got := strings.Contains(r.Messages[0].Content, "## Skills\n") && strings.Contains(r.Messages[0].Content, "- incident-runbook: "); got != withSkills {
			t.Errorf("request %d: skill catalogue in the system prompt = %v, want %v", i, got, withSkills)
		}
		n := len(r.Messages)
		if note := r.Messages[n-2]; note.Role != "system" || !strings.Contains(note.Content, "Knowledge base") || !strings.Contains(note.Content, "Current time") {
			t.Errorf("request %d: message before the user's = %s %.60q, want the note with the time and knowledge", i, note.Role, note.Content)
		}
		if i > 0 {
			// The history of request i is request i-1 without its note, plus its answer.
			p := reqs[i-1].Messages
			for j := 1; j < len(p)-2; j++ {
				if r.Messages[j].Content != p[j].Content {
					t.Errorf("request %d message %d differs from request %d's", i, j, i-1)
					break
				}
			}
		}
	}

	usage, err := store.SumUsage(context.Background(), echogate.UsageFilter{Session: "web:s1"})
	if err != nil {
		t.Fatal(err)
	}
	share := float64(usage.CachedInputTokens) / float64(usage.InputTokens)
	t.Logf("input tokens %d, cached %d: cache-read share %.1f%%", usage.InputTokens, usage.CachedInputTokens, 100*share)
	if share < 0.85 {
		t.Errorf("cache-read share = %.1f%% of %d input tokens, want >= 85%%", 100*share, usage.InputTokens)
	}
	// Each turn's record carries its cached input tokens, summed like its input tokens.
	recs, err := store.ListTurns(context.Background(), "web:s1", 0)
	if err != nil || len(recs) != turns {
		t.Fatalf("ListTurns = %d records, %v; want %d", len(recs), err, turns)
	}
	var recCached int64
	for _, rec := range recs {
		led, err := store.SumUsage(context.Background(), echogate.UsageFilter{Turn: rec.ID})
		if err != nil || rec.InputTokens != led.InputTokens || rec.CachedInputTokens != led.CachedInputTokens {
			t.Errorf("turn %s record in/cached = %d/%d, ledger %d/%d (%v)", rec.ID, rec.InputTokens, rec.CachedInputTokens, led.InputTokens, led.CachedInputTokens, err)
		}
		recCached += rec.CachedInputTokens
	}
	if recCached != usage.CachedInputTokens {
		t.Errorf("turn records' cached tokens sum to %d, want the session's %d", recCached, usage.CachedInputTokens)
	}
}

func sameTools(a, b agenttest.ChatRequest) bool {
	ja, _ := json.Marshal(a.Tools)
	jb, _ := json.Marshal(b.Tools)
	return string(ja) == string(jb)
}
