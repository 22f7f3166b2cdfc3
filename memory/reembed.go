package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// reembedBatch is how many memories one embedding request carries during Reembed.
const reembedBatch = 32

// ErrNoEmbedder: Reembed was asked of a service without an embedder or without a recorded
// embedder name (nothing to re-embed with).
var ErrNoEmbedder = errors.New("no embedder configured")

// IsStale reports whether m's vector is missing or was made by another embedder than the
// configured one, so that vector search does not find m until it is re-embedded. It is false
// when the service tracks no embedder.
func (s *Service) IsStale(m memrec.Memory) bool {
	return s.emb != nil && s.cfg.EmbedModel != "" && m.EmbedModel != s.cfg.EmbedModel
}

// EmbedModel is the configured embedder's name ("" when none is tracked).
func (s *Service) EmbedModel() string { return s.cfg.EmbedModel }

// Stale lists the current memories (not superseded, not expired) whose vectors are stale (see
// IsStale), most recently updated first. It blocks on the store.
func (s *Service) Stale(ctx context.Context) ([]memrec.Memory, error) {
	if s.emb == nil || s.cfg.EmbedModel == "" {
		return nil, nil
	}
	ms, err := s.store.ListMemories(ctx, memrec.MemoryFilter{Current: true, Now: s.cfg.Now()})
	if err != nil {
		return nil, fmt.Errorf("memory: stale memories: %w", err)
	}
	out := ms[:0]
	for _, m := range ms {
		if s.IsStale(m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// Reembed re-embeds every stale memory with the configured embedder, reembedBatch texts per
// request, and records the embedder with each new vector. progress (optional) is called after
// each batch with the memories done and the total. It stops at the first embedding or store
// error, returning how many were re-embedded; running it again continues where it stopped.
// Embedding usage is reported (trigger consolidation: background work on the owner's memory).
func (s *Service) Reembed(ctx context.Context, progress func(done, total int)) (int, error) {
	if s.emb == nil || s.cfg.EmbedModel == "" {
		return 0, fmt.Errorf("memory: reembed: %w", ErrNoEmbedder)
	}
	stale, err := s.Stale(ctx)
	if err != nil {
		return 0, fmt.Errorf("memory: reembed: %w", err)
	}
	done := 0
	for len(stale) > 0 {
		batch := stale[:min(reembedBatch, len(stale))]
		stale = stale[len(batch):]
		texts := make([]string, len(batch))
		for i, m := range batch {
			texts[i] = m.Text
		}
		vs, u, err := s.emb.Embed(ctx, texts)
		s.report(ctx, u, echogate.TriggerConsolidation, "", "", "")
		if err == nil && len(vs) != len(batch) {
			err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vs), len(batch))
		}
		if err != nil {
			return done, fmt.Errorf("memory: reembed (%d of %d done): %w", done, done+len(batch)+len(stale), err)
		}
		for i, m := range batch {
			m.Embedding, m.EmbedModel = vs[i], s.cfg.EmbedModel
			err := s.store.PutMemory(ctx, m)
			s.ver.bump(m.Owner) // also after a failed write: it may have committed
			if err != nil {
				return done, fmt.Errorf("memory: reembed %s: %w", m.ID, err)
			}
			done++
		}
		if progress != nil {
			progress(done, done+len(stale))
		}
	}
	return done, nil
}
