package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// KnowledgeStore is the method set knowledge.Store needs.
type KnowledgeStore interface {
	EnsureEmbeddingDims(ctx context.Context, dims int) error
	GetDocument(ctx context.Context, idOrSource string) (memrec.Document, error)
	PutDocument(ctx context.Context, doc memrec.Document, chunks []memrec.Chunk) error
	ListDocuments(ctx context.Context, limit int) ([]memrec.Document, error)
	DeleteDocument(ctx context.Context, idOrSource string) error
	SearchChunksVector(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
	SearchChunksText(ctx context.Context, q memrec.PassageQuery) ([]memrec.Passage, error)
}

// RunKnowledge runs the knowledge store conformance suite.
func RunKnowledge(t *testing.T, open func(t *testing.T) KnowledgeStore) {
	t.Helper()
	run := randomHex(t, 6)
	base := time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)
	t.Run("PutSearchReplaceDelete", func(t *testing.T) {
		s := open(t)
		ctx := ctxT(t)
		if err := s.EnsureEmbeddingDims(ctx, TestDims); err != nil {
			t.Fatal(err)
		}
		p := "kt-" + run + "-"
		doc := memrec.Document{ID: p + "d1", Source: "/kb/" + p + "install.md", Title: "Install", MIME: "text/markdown", ContentHash: "h1", Bytes: 100, EmbedModel: "openai:text-embedding-3-small@8", AddedAt: base, UpdatedAt: base}
		chunks := []memrec.Chunk{
			{Seq: 0, Heading: "Install › Linux", Text: "zebraword Run the installer with sudo", Start: 0, End: 40, Embedding: unit(3, 0)},
			{Seq: 1, Heading: "Install › macOS", Text: "quokkaword Use Homebrew to install", Start: 40, End: 80, Embedding: unit(5, 0)},
		}
		if err := s.PutDocument(ctx, doc, chunks); err != nil {
			t.Fatalf("PutDocument = %v", err)
		}
		got, err := s.GetDocument(ctx, doc.Source)
		if err != nil || got.ID != doc.ID || got.Chunks != 2 || got.ContentHash != "h1" || !got.AddedAt.Equal(base) {
			t.Errorf("GetDocument(source) = %+v, %v; want id %s, 2 chunks, hash h1", got, err, doc.ID)
		}
		if got.EmbedModel != doc.EmbedModel {
			t.Errorf("GetDocument EmbedModel = %q, want %q (the embedder of its vectors is recorded)", got.EmbedModel, doc.EmbedModel)
		}
		if got, err := s.GetDocument(ctx, doc.ID); err != nil || got.Source != doc.Source {
			t.Errorf("GetDocument(id) = %+v, %v", got, err)
		}
		vs, err := s.SearchChunksVector(ctx, memrec.PassageQuery{Vector: unit(5, 0), Limit: 1})
		if err != nil || len(vs) != 1 || vs[0].DocID != doc.ID || vs[0].Seq != 1 || vs[0].Source != doc.Source || vs[0].Heading != "Install › macOS" || vs[0].Start != 40 || vs[0].End != 80 || vs[0].EmbedModel != doc.EmbedModel {
			t.Errorf("SearchChunksVector = %+v, %v; want chunk 1 of %s with source, heading, offsets and embed model", vs, err, doc.ID)
		}
		ts, err := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "zebraword?", Limit: 5})
		if err != nil || len(ts) == 0 || ts[0].Seq != 0 || ts[0].DocID != doc.ID {
			t.Errorf("SearchChunksText = %+v, %v; want chunk 0 first", ts, err)
		}
		// Re-adding replaces the chunks.
		doc.ContentHash, doc.UpdatedAt, doc.AddedAt = "h2", base.Add(time.Hour), base.Add(time.Hour)
		if err := s.PutDocument(ctx, doc, []memrec.Chunk{{Seq: 0, Text: "walrusword only chunk now", Embedding: unit(3, 0)}}); err != nil {
			t.Fatalf("PutDocument(replace) = %v", err)
		}
		got, _ = s.GetDocument(ctx, doc.ID)
		if got.Chunks != 1 || got.ContentHash != "h2" || !got.AddedAt.Equal(base) {
			t.Errorf("after replace GetDocument = %+v, want 1 chunk, hash h2, first AddedAt kept", got)
		}
		if ts, _ := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "quokkaword"}); len(ts) != 0 {
			t.Errorf("old chunk still found after replace: %+v", ts)
		}
		list, err := s.ListDocuments(ctx, 0)
		found := false
		for _, d := range list {
			found = found || d.ID == doc.ID
		}
		if err != nil || !found {
			t.Errorf("ListDocuments = %v, %v; want it to hold %s", len(list), err, doc.ID)
		}
		if _, err := s.SearchChunksVector(ctx, memrec.PassageQuery{Vector: []float32{1}}); !errors.Is(err, memrec.ErrDims) {
			t.Errorf("SearchChunksVector(1 dim) = %v, want ErrDims", err)
		}
		if err := s.DeleteDocument(ctx, doc.ID); err != nil {
			t.Fatalf("DeleteDocument = %v", err)
		}
		if ts, _ := s.SearchChunksText(ctx, memrec.PassageQuery{Text: "walrusword"}); len(ts) != 0 {
			t.Errorf("chunk found after DeleteDocument: %+v", ts)
		}
		if err := s.DeleteDocument(ctx, doc.ID); !errors.Is(err, echogate.ErrNotFound) {
			t.Errorf("DeleteDocument(again) = %v, want ErrNotFound", err)
		}
		if _, err := s.GetDocument(ctx, doc.ID); !errors.Is(err, echogate.ErrNotFound) {
			t.Errorf("GetDocument(deleted) = %v, want ErrNotFound", err)
		}
	})
}
