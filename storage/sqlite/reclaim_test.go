package sqlite

import (
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

func TestReclaimConformance(t *testing.T) {
	storagetest.RunReclaim(t, func(t *testing.T) storagetest.Reclaimer { return openTemp(t, Config{}) })
}
