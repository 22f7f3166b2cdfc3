package pipelinetest

import (
	"context"

	"github.com/echogate/echogate/internal/turnstart"
)

// BeginTurn begins a turn as SQLite does (one process owns the store): the record is written
// at once, the input deferred (turnstart.Deferred).
func (s *MemStore) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.Deferred(ctx, b, turnstart.Blocking(s), turnstart.DefaultDelay)
}
