package memory

import (
	"context"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/memrec"
)

// reembedBatch is how many memories one embedding request carries during Reembed.
const reembedBatch = 32

// IsStale reports whether m's vector is missing or was made by another embedder than the
// configured one, so that vector search does not find m until it is re-embedded. It is false
// when the service tracks no embedder.
func (s *Service) IsStale(m memrec.Memory) bool {
	return s.emb != nil && s.cfg.EmbedModel != "" && m.EmbedModel != s.cfg.EmbedModel
}

// EmbedModel is the configured embedder's name ("" when none is tracked).
func (s *Service) EmbedModel() string { return s.cfg.EmbedModel }

// staleFilter selects the current memories whose vectors are stale (see IsStale).
func (s *Service) staleFilter(limit int) memrec.MemoryFilter {
	return memrec.MemoryFilter{Current: true, Now: s.cfg.Now(), StaleFor: s.cfg.EmbedModel, Limit: limit}
}

// Stale lists up to limit (<= 0: all) current memories (not superseded, not expired) whose
// vectors are stale (see IsStale), most recently updated first, and counts them all. It blocks on
// the store; nothing is stale when the service tracks no embedder.
func (s *Service) Stale(ctx context.Context, limit int) ([]memrec.Memory, int, error) {
	if s.emb == nil || s.cfg.EmbedModel == "" {
		return nil, 0, nil
	}
	n, err := s.store.CountMemories(ctx, s.staleFilter(0))
	if err != nil || n == 0 {
		return nil, 0, wrapStale(err)
	}
	ms, err := s.store.ListMemories(ctx, s.staleFilter(limit))
	if err != nil {
		return nil, 0, wrapStale(err)
	}
	return ms, n, nil
}

func wrapStale(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("memory: stale memories: %w", err)
}

// Reembed re-embeds every stale memory with the configured embedder, reembedBatch texts per
// request (memories are read a batch at a time, not all at once), and records the embedder with
// each new vector. progress (optional) is called after each batch with the memories done and the
// total. It stops at the first embedding or store error, returning how many were re-embedded;
// running it again continues where it stopped. A memory changed while it runs may lose that
// change (it is rewritten whole), so run it while the gateway is quiet. Embedding usage is
// reported with trigger consolidation (background work on memory).
func (s *Service) Reembed(ctx context.Context, progress func(done, total int)) (int, error) {
	if s.emb == nil || s.cfg.EmbedModel == "" {
		return 0, fmt.Errorf("memory: reembed: %w", ErrNoEmbedder)
	}
	batch, total, err := s.Stale(ctx, reembedBatch)
	if err != nil {
		return 0, fmt.Errorf("memory: reembed: %w", err)
	}
	done := 0
	// Each round re-reads the stale memories: the ones just written are no longer stale. The
	// bound on rounds guards against a store that does not record the embedder.
	for round := 0; len(batch) > 0 && round <= total/reembedBatch+1; round++ {
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
			return done, fmt.Errorf("memory: reembed (%d of %d done): %w", done, total, err)
		}
		for i, m := range batch {
			if len(vs[i]) == 0 {
				return done, fmt.Errorf("memory: reembed %s: the embedder returned an empty vector", m.ID)
			}
			m.Embedding, m.EmbedModel = vs[i], s.cfg.EmbedModel
			err := s.store.PutMemory(ctx, m)
			s.ver.bump(m.Owner) // also after a failed write: it may have committed
			if err != nil {
				return done, fmt.Errorf("memory: reembed %s: %w", m.ID, err)
			}
			done++
		}
		if progress != nil {
			progress(done, max(total, done))
		}
		if batch, err = s.store.ListMemories(ctx, s.staleFilter(reembedBatch)); err != nil {
			return done, fmt.Errorf("memory: reembed: %w", err)
		}
	}
	return done, nil
}
