package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/memory"
	"github.com/echogate/echogate/memory/memorytest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// factExtractor is the consolidation model: it extracts the facts it recognises in the new
// conversation of the prompt, and records every prompt.
type factExtractor struct {
	mu      sync.Mutex
	prompts []string
}

var knownFacts = map[string]string{"X123": "Passport number is X123", "Helix": "Favourite editor is Helix"}

func (x *factExtractor) Extract(ctx context.Context, system, user string) (string, echogate.Usage, error) {
	x.mu.Lock()
	x.prompts = append(x.prompts, user)
	x.mu.Unlock()
	_, convo, _ := strings.Cut(user, "NEW CONVERSATION")
	var facts []map[string]any
	for _, word := range []string{"X123", "Helix"} {
		if strings.Contains(convo, word) {
			facts = append(facts, map[string]any{"text": knownFacts[word], "kind": "fact", "importance": 0.8})
		}
	}
	b, err := json.Marshal(facts)
	if facts == nil {
		b = []byte("[]")
	}
	return string(b), echogate.Usage{}, err
}

func memoryTexts(mems *memorytest.Store, user string) []string {
	var out []string
	for _, m := range mems.Memories("user:slack:" + user) {
		out = append(out, m.Text)
	}
	slices.Sort(out)
	return out
}

// Finding 3 of issue 36: in a shared thread, consolidation credits each person with their own
// words only. UA's passport becomes UA's memory, never that of UB who spoke last (and whose
// message quotes UA's as thread context); UB's editor becomes UB's, so nobody can write into
// another's memory.
func TestConsolidationCreditsEachPersonOnlyTheirWords(t *testing.T) {
	store := pipelinetest.NewMemStore()
	mems := memorytest.New(store)
	x := &factExtractor{}
	var clock sync.Mutex
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	mem, err := memory.New(memory.Config{Now: at}, mems, nil, x, memory.Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	h := start(t, opts{store: store, deps: func(d *pipeline.Deps) {
		withSlack(slack)(d)
		d.AfterTurn = append(d.AfterTurn, func(ctx context.Context, s pipeline.TurnSummary) {
			if err := mem.Enqueue(ctx, s.Session, s.UserID, s.Channel); err != nil {
				t.Errorf("Enqueue(%s) = %v", s.UserID, err)
			}
		})
	}})
	h.model.SetDefault(agenttest.Reply("noted"))

	h.submit(threadMsg("UA", "for the visa form: my passport is X123"))
	<-slack.Done
	ub := threadMsg("UB", "and my favourite editor is Helix")
	ub.ThreadContext = []echogate.ThreadMessage{{Author: "UA", Text: "for the visa form: my passport is X123"}, {Author: "echogate", Text: "noted", IsBot: true}}
	h.submit(ub)
	<-slack.Done
	h.submit(threadMsg("UA", "thanks"))
	<-slack.Done

	clock.Lock()
	now = now.Add(time.Hour) // past the debounce
	clock.Unlock()
	ctx := context.Background()
	for range 10 {
		did, err := mem.RunOnce(ctx)
		if err != nil {
			t.Fatalf("RunOnce = %v", err)
		}
		if !did {
			break
		}
	}
	for user, want := range map[string][]string{"UA": {"Passport number is X123"}, "UB": {"Favourite editor is Helix"}} {
		if got := memoryTexts(mems, user); !slices.Equal(got, want) {
			t.Errorf("memories of %s = %q, want %q (their own words only)", user, got, want)
		}
	}
	if len(x.prompts) != 2 {
		t.Errorf("extraction prompts = %d, want 2 (one job per person)", len(x.prompts))
	}
}
