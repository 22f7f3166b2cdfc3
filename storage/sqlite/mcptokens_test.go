package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/echogate/echogate/internal/mcptoken"
	"github.com/echogate/echogate/storage/storagetest"
)

var _ mcptoken.Store = (*Store)(nil)

func TestMCPTokensConformance(t *testing.T) {
	storagetest.RunMCPTokens(t, func(t *testing.T) (mcptoken.Store, mcptoken.Store) {
		p := filepath.Join(t.TempDir(), "echogate.db")
		return openTemp(t, Config{Path: p}), openTemp(t, Config{Path: p})
	})
}
