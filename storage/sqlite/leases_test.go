package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/echogate/echogate/internal/lease"
	"github.com/echogate/echogate/storage/storagetest"
)

func TestLeasesConformance(t *testing.T) {
	storagetest.RunLeases(t, func(t *testing.T) (lease.Store, lease.Store) {
		p := filepath.Join(t.TempDir(), "echogate.db")
		return openTemp(t, Config{Path: p}), openTemp(t, Config{Path: p})
	})
}
