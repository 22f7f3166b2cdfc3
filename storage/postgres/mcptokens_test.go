package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/internal/mcptoken"
	"github.com/echogate/echogate/storage/postgres"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ mcptoken.Store = (*postgres.Store)(nil)

func TestMCPTokensConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunMCPTokens(t, func(t *testing.T) (mcptoken.Store, mcptoken.Store) {
		a, b := openReplicas(t)
		return a.(*postgres.Store), b.(*postgres.Store)
	})
}
