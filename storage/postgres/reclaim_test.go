package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

func TestReclaimConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunReclaim(t, func(t *testing.T) storagetest.Reclaimer { return newStore(t) })
}
