package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ storagetest.Store = (*postgres.Store)(nil)

// TestConformance runs the stores' conformance suite, each subtest on a freshly migrated schema
// of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.Run(t, func(t *testing.T) storagetest.Store { return newStore(t) })
}

// TestConformanceSharedStore runs the suite again on one store shared by all subtests, as
// replicas share one database in production.
func TestConformanceSharedStore(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	storagetest.Run(t, func(*testing.T) storagetest.Store { return st })
}
