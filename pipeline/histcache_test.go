package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// countingStore counts the transcript reads of the pipeline.
type countingStore struct {
	*pipelinetest.MemStore
	history, since atomic.Int64
}

func (s *countingStore) History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error) {
	s.history.Add(1)
	return s.MemStore.History(ctx, key, limit)
}

func (s *countingStore) HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error) {
	s.since.Add(1)
	return s.MemStore.HistorySince(ctx, key, after, limit)
}

// contentsOf renders the non-system messages of a model request.
func contentsOf(req agent.Request) string {
	var out []string
	for _, m := range req.Messages {
		if m.Role != echogate.RoleSystem {
			out = append(out, string(m.Role)+":"+m.Content)
		}
	}
	return strings.Join(out, "|")
}

// lockingStore declares a store shared by replicas (a SessionLocker that always grants the
// lock): the pipeline then checks its cached transcripts against the store at every turn.
type lockingStore struct{ pipeline.Store }

func (lockingStore) TryLockSession(ctx context.Context, key echogate.SessionKey) (func(), bool, error) {
	return func() {}, true, nil
}

// With replicas, a turn asks the store only for what follows the newest cached entry.
func TestHistoryCacheReadsOnlyNewerEntries(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	cs := &countingStore{MemStore: mem}
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = lockingStore{cs} }},
		agenttest.Reply("one"), agenttest.Reply("two"), agenttest.Reply("three"))
	for _, text := range []string{"a", "b", "c"} {
		h.submit(msg("s1", "ann", text))
		h.waitDone()
	}
	reqs := h.model.Requests()
	if got, want := contentsOf(reqs[2]), "user:a|assistant:one|user:b|assistant:two|user:c"; got != want {
		t.Errorf("third turn's request = %s, want %s", got, want)
	}
	// Turn 1 reads the window whole (empty, or just its own message when that was written
	// first); from then on a turn asks only for what follows the newest cached entry.
	if h, s := cs.history.Load(), cs.since.Load(); h < 1 || s < 1 || h+s != 3 {
		t.Errorf("History called %d times and HistorySince %d; want one read per turn, the third (at least) through HistorySince", h, s)
	}
}

// In the only process writing its store, a turn that ended done writes its entries through
// to the history cache: the next turn reads nothing. Any other end (here a failed model call)
// drops the entry, and the next turn reads the transcript whole.
func TestHistoryCacheWrittenThrough(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	cs := &countingStore{MemStore: mem}
	h := start(t, opts{store: mem, tools: []tools.Tool{newTool("current_time", tools.Safe, "12:00")}, deps: func(d *pipeline.Deps) { d.Store = cs }},
		agenttest.Reply("one"), agenttest.Reply("two"), agenttest.CallTool("current_time", "{}"), agenttest.Reply("three"),
		agenttest.Reply("four"), agenttest.Step{Err: errors.New("model down")}, agenttest.Reply("six"), agenttest.Reply("seven"))
	turn := func(text string) {
		t.Helper()
		h.submit(msg("s1", "ann", text))
		h.waitDone()
	}
	for _, text := range []string{"a", "b", "c", "d"} {
		turn(text)
	}
	// Turns 1 and 2 read (nothing was cached to continue); turns 3 and 4 continue the cache.
	if h, s := cs.history.Load(), cs.since.Load(); h != 2 || s != 0 {
		t.Errorf("after 4 turns: History %d, HistorySince %d; want 2 and 0", h, s)
	}
	reqs := h.model.Requests()
	if got, want := contentsOf(reqs[4]), "user:a|assistant:one|user:b|assistant:two|user:c|assistant:|tool:12:00|assistant:three|user:d"; got != want {
		t.Errorf("fourth turn's request = %s, want %s (the tool turn's call and result in between)", got, want)
	}
	if got, want := contentsOf(reqs[4]), transcriptOf(t, mem, "web:s1", "d"); got != want {
		t.Errorf("fourth turn's request = %s, want the stored transcript %s", got, want)
	}
	turn("e") // fails: its entries are not written through
	turn("f")
	if h := cs.history.Load(); h != 3 {
		t.Errorf("History reads after a failed turn = %d, want 3 (the next turn reads whole)", h)
	}
	turn("g")
	if h, s := cs.history.Load(), cs.since.Load(); h != 3 || s != 0 {
		t.Errorf("after the turn after it: History %d, HistorySince %d; want 3 and 0", h, s)
	}
	reqs = h.model.Requests()
	if got, want := contentsOf(reqs[len(reqs)-1]), transcriptOf(t, mem, "web:s1", "g"); got != want {
		t.Errorf("last request = %s, want the stored transcript %s", got, want)
	}
}

// transcriptOf renders the session's stored transcript up to and including the user message
// text, as contentsOf renders a request.
func transcriptOf(t *testing.T, mem *pipelinetest.MemStore, key echogate.SessionKey, text string) string {
	t.Helper()
	hist, err := mem.History(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sm := range hist {
		out = append(out, string(sm.Message.Role)+":"+sm.Message.Content)
		if sm.Message.Role == echogate.RoleUser && sm.Message.Content == text {
			break
		}
	}
	return strings.Join(out, "|")
}

func TestHistoryCacheSeesChangesMadeElsewhere(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = lockingStore{mem} }}, agenttest.Reply("one"), agenttest.Reply("two"), agenttest.Reply("three"), agenttest.Reply("four"))
	ctx := context.Background()
	key := echogate.SessionKey("web:s1")
	for _, text := range []string{"a", "b"} {
		h.submit(msg("s1", "ann", text))
		h.waitDone()
	}
	// Another replica answers in the session: its messages are part of the next turn.
	if err := h.store.AppendMessages(ctx, key, "t_other", []echogate.Message{{Role: echogate.RoleUser, Content: "x"}, {Role: echogate.RoleAssistant, Content: "from elsewhere"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.submit(msg("s1", "ann", "c"))
	h.waitDone()
	if got, want := contentsOf(h.model.Requests()[2]), "user:a|assistant:one|user:b|assistant:two|user:x|assistant:from elsewhere|user:c"; got != want {
		t.Errorf("request after another replica's turn = %s, want %s", got, want)
	}
	// The session is deleted and started again elsewhere, with as many messages as before:
	// nothing of the old transcript may reach the model.
	if err := h.store.DeleteSession(ctx, key); err != nil {
		t.Fatal(err)
	}
	var fresh []echogate.Message
	for i := 0; i < 8; i++ {
		fresh = append(fresh, echogate.Message{Role: echogate.RoleUser, Content: "new"})
	}
	if err := h.store.AppendMessages(ctx, key, "t_new", fresh, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.submit(msg("s1", "ann", "d"))
	h.waitDone()
	got := contentsOf(h.model.Requests()[3])
	if strings.Contains(got, "one") || strings.Contains(got, "elsewhere") || !strings.HasSuffix(got, "user:new|user:d") {
		t.Errorf("request after the session was deleted and started again = %s, want only the new transcript", got)
	}
}
