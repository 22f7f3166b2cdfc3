package postgres

import (
	"context"

	"github.com/echogate/echogate/internal/turnstart"
)

// BeginTurn begins a turn (pipeline.TurnLog): the record and the input are both written at
// once, and the turn's Ready waits for them before the model is called. The database is
// shared by replicas: one that takes the event over after this process died finds the running
// turn, closes it and knows whether the question was saved.
func (s *Store) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.AtOnce(ctx, b, turnstart.Blocking(s))
}
