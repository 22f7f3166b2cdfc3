package postgres_test

import (
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

func TestRetentionConformance(t *testing.T) {
	t.Parallel()
	requireURL(t)
	storagetest.RunRetention(t, func(t *testing.T) storagetest.Retainer { return newStore(t) })
}
