package sqlite

import (
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

func TestRetentionConformance(t *testing.T) {
	storagetest.RunRetention(t, func(t *testing.T) storagetest.Retainer { return openTemp(t, Config{}) })
}
