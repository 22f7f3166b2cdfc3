package knowledge

import (
	"context"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// oneHitStore answers every vector search with one passage made by embedder model.
type oneHitStore struct{ model string }

func (s oneHitStore) GetDocument(context.Context, string) (memrec.Document, error) {
	return memrec.Document{}, echogate.ErrNotFound
}
func (s oneHitStore) PutDocument(context.Context, memrec.Document, []memrec.Chunk) error { return nil }
func (s oneHitStore) ListDocuments(context.Context, int) ([]memrec.Document, error) {
	return []memrec.Document{{ID: "d_1", Source: "/kb/a.md", EmbedModel: s.model}}, nil
}
func (s oneHitStore) DeleteDocument(context.Context, string) error { return nil }
func (s oneHitStore) SearchChunksVector(context.Context, memrec.PassageQuery) ([]memrec.Passage, error) {
	return []memrec.Passage{{DocID: "d_1", Seq: 0, Text: "vector hit", Score: 0.99, EmbedModel: s.model}}, nil
}
func (s oneHitStore) SearchChunksText(context.Context, memrec.PassageQuery) ([]memrec.Passage, error) {
	return nil, nil
}

type constEmbedder struct{}

func (constEmbedder) Embed(_ context.Context, texts []string) ([][]float32, echogate.Usage, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, echogate.Usage{}, nil
}

// TestVectorsOfAnotherEmbedderAreNotSearched: a vector hit made by another embedder is dropped
// (its similarity to this embedder's query means nothing) and its document is listed as stale.
func TestVectorsOfAnotherEmbedderAreNotSearched(t *testing.T) {
	for _, tt := range []struct {
		stored, current string
		wantHit         bool
	}{
		{"openai:text-embedding-3-small@8", "openai:text-embedding-3-small@8", true},
		{"demo:hash@8", "openai:text-embedding-3-small@8", false},
		{"", "openai:text-embedding-3-small@8", false}, // recorded before models were
		{"openai:text-embedding-3-small@8", "openai:text-embedding-3-large@8", false},
	} {
		s, err := New(Config{EmbedModel: tt.current}, oneHitStore{model: tt.stored}, constEmbedder{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, err := s.Search(context.Background(), "anything", 3)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(ps) == 1; got != tt.wantHit {
			t.Errorf("stored %q, current %q: vector hit returned = %v, want %v", tt.stored, tt.current, got, tt.wantHit)
		}
		stale, err := s.Stale(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(stale) == 1; got == tt.wantHit {
			t.Errorf("stored %q, current %q: Stale lists it = %v, want %v", tt.stored, tt.current, got, !tt.wantHit)
		}
	}
}
