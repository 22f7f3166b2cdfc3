package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

var (
	_ storagetest.MemoryStore    = (*postgres.Store)(nil)
	_ storagetest.KnowledgeStore = (*postgres.Store)(nil)
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunMemory(t, func(t *testing.T) storagetest.MemoryStore { return newStore(t) })
}

// TestMemoryConformanceSharedStore runs the memory suite on one store shared by all subtests, as
// replicas share one database (the consolidation claims then compete across subtests).
func TestMemoryConformanceSharedStore(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	storagetest.RunMemory(t, func(*testing.T) storagetest.MemoryStore { return st })
}

func TestKnowledgeConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunKnowledge(t, func(t *testing.T) storagetest.KnowledgeStore { return newStore(t) })
}
