package sqlite

import (
	"testing"

	"github.com/echogate/echogate/storage/storagetest"
)

func TestRenewClaimsConformance(t *testing.T) {
	storagetest.RunRenewClaims(t, func(t *testing.T) storagetest.Renewer { return openTemp(t, Config{}) })
}
