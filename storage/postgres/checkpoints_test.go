package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ storagetest.CheckpointStore = (*postgres.Store)(nil)

// TestCheckpoints runs the checkpoint conformance suite, each subtest on a freshly migrated
// schema of its own.
func TestCheckpoints(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunCheckpoints(t, func(t *testing.T) storagetest.CheckpointStore { return newStore(t) })
}

// TestCheckpointsSharedStore runs it again on one store shared by all subtests.
func TestCheckpointsSharedStore(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	storagetest.RunCheckpoints(t, func(*testing.T) storagetest.CheckpointStore { return st })
}
