package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// staleStore keeps memories in a map and implements what Reembed reads and writes (the other
// Store methods are nil and must not be called).
type staleStore struct {
	Store
	mu sync.Mutex
	ms map[string]memrec.Memory
}

func (s *staleStore) selected(f memrec.MemoryFilter) []memrec.Memory {
	var out []memrec.Memory
	for _, m := range s.ms {
		if f.StaleFor == "" || len(m.Embedding) == 0 || m.EmbedModel != f.StaleFor {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b memrec.Memory) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (s *staleStore) CountMemories(_ context.Context, f memrec.MemoryFilter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.selected(f)), nil
}

func (s *staleStore) ListMemories(_ context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.selected(f)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (s *staleStore) PutMemory(_ context.Context, m memrec.Memory) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ms[m.ID] = m
	return nil
}

// flakyEmbedder fails the call numbered failAt (1-based) and embeds every other one.
type flakyEmbedder struct {
	calls, failAt int
}

func (e *flakyEmbedder) Embed(_ context.Context, texts []string) ([][]float32, echogate.Usage, error) {
	e.calls++
	if e.calls == e.failAt {
		return nil, echogate.Usage{}, errors.New("endpoint down")
	}
	vs := make([][]float32, len(texts))
	for i := range vs {
		vs[i] = []float32{1, 0}
	}
	return vs, echogate.Usage{}, nil
}

// TestReembedResumes: 40 stale memories (demo vectors, and none) are re-embedded in batches;
// an embedding failure on the second batch stops the run after the first with an error, and
// running it again re-embeds only the rest.
func TestReembedResumes(t *testing.T) {
	const cur = "e:new@2"
	st := &staleStore{ms: map[string]memrec.Memory{}}
	for i := range 40 {
		m := memrec.Memory{ID: fmt.Sprintf("m%02d", i), Owner: "user:u", Text: fmt.Sprintf("fact %d", i)}
		if i%2 == 0 {
			m.Embedding, m.EmbedModel = []float32{0, 1}, "demo:hash@2"
		}
		st.ms[m.ID] = m
	}
	st.ms["ok"] = memrec.Memory{ID: "ok", Owner: "user:u", Text: "current", Embedding: []float32{1, 0}, EmbedModel: cur}
	emb := &flakyEmbedder{failAt: 2}
	s, err := New(Config{EmbedModel: cur}, st, emb, nil, Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := s.Stale(context.Background(), 1); n != 40 || err != nil {
		t.Fatalf("Stale = %d, %v; want 40", n, err)
	}
	var seen [][2]int
	done, err := s.Reembed(context.Background(), func(d, total int) { seen = append(seen, [2]int{d, total}) })
	if done != reembedBatch || err == nil || !strings.Contains(err.Error(), "endpoint down") {
		t.Fatalf("Reembed with a failing second batch = %d, %v; want %d and the endpoint's error", done, err, reembedBatch)
	}
	if !slices.Equal(seen, [][2]int{{reembedBatch, 40}}) {
		t.Errorf("progress = %v, want [[%d 40]]", seen, reembedBatch)
	}
	seen = nil
	if done, err = s.Reembed(context.Background(), func(d, total int) { seen = append(seen, [2]int{d, total}) }); done != 40-reembedBatch || err != nil {
		t.Fatalf("Reembed again = %d, %v; want the remaining %d", done, err, 40-reembedBatch)
	}
	if !slices.Equal(seen, [][2]int{{40 - reembedBatch, 40 - reembedBatch}}) {
		t.Errorf("progress of the second run = %v", seen)
	}
	for id, m := range st.ms {
		if m.EmbedModel != cur || len(m.Embedding) != 2 {
			t.Errorf("memory %s after reembed: model %q, vector %v; want %s", id, m.EmbedModel, m.Embedding, cur)
		}
	}
	if _, n, _ := s.Stale(context.Background(), 1); n != 0 {
		t.Errorf("Stale after reembed = %d, want 0", n)
	}
}

// TestReembedNeedsAnEmbedder: without an embedder name there is nothing to re-embed with.
func TestReembedNeedsAnEmbedder(t *testing.T) {
	s, err := New(Config{}, &staleStore{}, &flakyEmbedder{}, nil, Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reembed(context.Background(), nil); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("Reembed without EmbedModel = %v, want ErrNoEmbedder", err)
	}
}
