package sqlite

import (
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

var (
	_ storagetest.MemoryStore    = (*Store)(nil)
	_ storagetest.KnowledgeStore = (*Store)(nil)
)

func TestMemoryConformance(t *testing.T) {
	storagetest.RunMemory(t, func(t *testing.T) storagetest.MemoryStore { return openTemp(t, Config{}) })
}

func TestKnowledgeConformance(t *testing.T) {
	storagetest.RunKnowledge(t, func(t *testing.T) storagetest.KnowledgeStore { return openTemp(t, Config{}) })
}
