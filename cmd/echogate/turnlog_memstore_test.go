package main

import (
	"testing"

	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/storage/storagetest"
)

// The in-memory store the pipeline's tests use keeps the turn log as the real stores do.
func TestMemStoreTurnLog(t *testing.T) {
	storagetest.RunTurnLog(t, func(*testing.T) storagetest.Store { return pipelinetest.NewMemStore() })
}
