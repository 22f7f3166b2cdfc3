package storagetest

import (
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/memrec"
)

// memEmbedModel pins the embedder record of memories: it round-trips, a memory without a vector
// records none, MemoryFilter.StaleFor selects the others (ListMemories, CountMemories), vector search with MemoryQuery.EmbedModel compares only that embedder's vectors
// (text search finds them all), and a consolidation update with a vector records its embedder
// while one without keeps the old record.
func memEmbedModel(t *testing.T, s MemoryStore, p string, base time.Time) {
	ctx := ctxT(t)
	const cur, old = "openai:text-embedding-3-small@8", "demo:hash@8"
	mk := func(id, text, model string, v []float32) memrec.Memory {
		m := mem(p, id, "user:u1", text, base)
		m.Embedding, m.EmbedModel = v, model
		return m
	}
	ms := []memrec.Memory{
		mk("cur", "capybara lives near the river", cur, unit(0, 0.1)),
		mk("old", "capybara eats grass", old, unit(0, 0)), // nearest, but another embedder's
		mk("none", "capybara swims well", cur, nil),       // no vector: no embedder recorded
	}
	for _, m := range ms {
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatalf("PutMemory(%s) = %v", m.ID, err)
		}
	}
	for id, want := range map[string]string{"cur": cur, "old": old, "none": ""} {
		if got, err := s.GetMemory(ctx, p+id); err != nil || got.EmbedModel != want {
			t.Errorf("GetMemory(%s).EmbedModel = %q, %v; want %q", id, got.EmbedModel, err, want)
		}
	}
	stale := memrec.MemoryFilter{Owners: []string{p + "user:u1"}, Current: true, Now: base, StaleFor: cur}
	if got, err := s.ListMemories(ctx, stale); err != nil || !slices.Equal(ids(got), []string{p + "old", p + "none"}) && !slices.Equal(ids(got), []string{p + "none", p + "old"}) {
		t.Errorf("ListMemories(StaleFor %s) = %v, %v; want old and none (another embedder's vector, no vector)", cur, ids(got), err)
	}
	if n, err := s.CountMemories(ctx, stale); err != nil || n != 2 {
		t.Errorf("CountMemories(StaleFor %s) = %d, %v; want 2", cur, n, err)
	}
	stale.Limit = 1
	if got, err := s.ListMemories(ctx, stale); err != nil || len(got) != 1 {
		t.Errorf("ListMemories(StaleFor, limit 1) = %v, %v; want 1", ids(got), err)
	}
	if n, err := s.CountMemories(ctx, stale); err != nil || n != 2 {
		t.Errorf("CountMemories(limit 1) = %d, %v; want 2 (the limit does not apply)", n, err)
	}
	q := memrec.MemoryQuery{Owners: []string{p + "user:u1"}, Vector: unit(0, 0), Now: base, Limit: 5}
	all, err := s.SearchMemoriesVector(ctx, q)
	if g := scoredIDs(all); err != nil || !slices.Equal(g, []string{p + "old", p + "cur"}) {
		t.Errorf("SearchMemoriesVector(no embedder) = %v, %v; want old, cur (every vector compared)", g, err)
	}
	q.EmbedModel = cur
	got, err := s.SearchMemoriesVector(ctx, q)
	if g := scoredIDs(got); err != nil || !slices.Equal(g, []string{p + "cur"}) {
		t.Errorf("SearchMemoriesVector(EmbedModel %s) = %v, %v; want only cur (another embedder's vector is not compared)", cur, g, err)
	}
	q.Text = "capybara"
	txt, err := s.SearchMemoriesText(ctx, q)
	if err != nil || len(txt) != 3 {
		t.Errorf("SearchMemoriesText(capybara, EmbedModel set) = %v, %v; want all 3 (full text ignores the embedder)", scoredIDs(txt), err)
	}

	// Consolidation: an update with a vector records the new embedder, one without keeps it.
	sess := p + "s"
	if err := s.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: sess, DueAt: base}, base.Add(time.Minute)); err != nil {
		t.Fatalf("EnqueueConsolidation = %v", err)
	}
	j := claimOwn(t, s, p+"w", sess, base.Add(time.Second))
	reemb, kept := ms[1], ms[0]
	reemb.Embedding, reemb.EmbedModel = unit(1, 0), cur
	kept.Text, kept.Embedding, kept.EmbedModel = "capybara lives by the river", nil, ""
	if err := s.CompleteConsolidation(ctx, j, memrec.ConsolidationResult{Update: []memrec.Memory{reemb, kept}, Cursor: 1}); err != nil {
		t.Fatalf("CompleteConsolidation = %v", err)
	}
	for id, want := range map[string]string{"old": cur, "cur": cur} {
		if got, err := s.GetMemory(ctx, p+id); err != nil || got.EmbedModel != want || len(got.Embedding) != TestDims {
			t.Errorf("after update, GetMemory(%s) = model %q, %d dims, %v; want %q with its vector", id, got.EmbedModel, len(got.Embedding), err, want)
		}
	}
}
