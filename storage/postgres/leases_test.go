package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/internal/lease"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

func TestLeasesConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunLeases(t, func(t *testing.T) (lease.Store, lease.Store) {
		a, b := openReplicas(t)
		return a.(*postgres.Store), b.(*postgres.Store)
	})
}
