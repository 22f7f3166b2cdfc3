package sqlite

import (
	"context"

	"github.com/echogate/echogate/internal/turnstart"
)

// BeginTurn begins a turn (pipeline.TurnLog): the record's insert is queued to the writer
// (StartTurn, no goroutine waits for it), and the input is deferred: one process owns this
// file, so nobody else needs the question before the turn's end, which appends it with the
// answer in the commit it makes anyway. It is written earlier when the turn needs it durable
// (a tool is about to run), or after turnstart.DefaultDelay.
func (s *Store) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.Deferred(ctx, b, s, turnstart.DefaultDelay)
}
