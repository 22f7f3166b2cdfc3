package pipeline_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
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

func TestHistoryCacheReadsOnlyNewerEntries(t *testing.T) {
	mem := pipelinetest.NewMemStore()
	cs := &countingStore{MemStore: mem}
	h := start(t, opts{store: mem, deps: func(d *pipeline.Deps) { d.Store = cs }},
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

func TestHistoryCacheSeesChangesMadeElsewhere(t *testing.T) {
	h := start(t, opts{}, agenttest.Reply("one"), agenttest.Reply("two"), agenttest.Reply("three"), agenttest.Reply("four"))
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
