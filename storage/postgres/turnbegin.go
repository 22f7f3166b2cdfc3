package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/jackc/pgx/v5"
)

// BeginTurn begins a turn (pipeline.TurnLog): the record and the input are written together,
// in one batch (one round trip, one transaction), and the turn's Ready waits for them before
// the model is called. The database is shared by replicas: one that takes the event over after
// this process died finds the running turn, closes it and knows whether the question was saved.
func (s *Store) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.Together(ctx, b, batchBegin{Writer: turnstart.Blocking(s), s: s})
}

// batchBegin is the store as a turnstart.BatchWriter.
type batchBegin struct {
	turnstart.Writer
	s *Store
}

func (b batchBegin) BeginWithInput(ctx context.Context, rec echogate.TurnRecord, input []echogate.Message, at time.Time, readCheckpoint bool) (turnstart.Checkpoint, error) {
	return b.s.BeginWithInput(ctx, rec, input, at, readCheckpoint)
}

// BeginWithInput inserts the turn t and appends input to its session under t.ID in one batch:
// CreateTurn and AppendMessages in one round trip and one implicit transaction (both or
// neither; turnstart.BatchWriter). An id that exists already wraps ErrExists, and no input is
// appended. With readCheckpoint the session's newest checkpoint is read first in the same
// batch (as LatestCheckpoint: its Err wraps ErrNotFound when there is none).
func (s *Store) BeginWithInput(ctx context.Context, t echogate.TurnRecord, input []echogate.Message, at time.Time, readCheckpoint bool) (turnstart.Checkpoint, error) {
	var cp turnstart.Checkpoint
	err := s.beginWithInput(ctx, t, input, at, readCheckpoint, &cp)
	return cp, err
}

func (s *Store) beginWithInput(ctx context.Context, t echogate.TurnRecord, input []echogate.Message, at time.Time, readCheckpoint bool, cp *turnstart.Checkpoint) error {
	if t.ID == "" {
		return fmt.Errorf("postgres: begin turn: %w: empty id", ErrInvalid)
	}
	if t.Session == "" {
		return fmt.Errorf("postgres: begin turn %q: %w: empty session key", t.ID, ErrInvalid)
	}
	roles := make([]string, len(input))
	bodies := make([]string, len(input))
	for i, m := range input {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("postgres: begin turn %q: encode message %d: %w", t.ID, i, err)
		}
		roles[i], bodies[i] = string(m.Role), string(b)
	}
	p, err := s.pool(ctx, fmt.Sprintf("begin turn %q", t.ID))
	if err != nil {
		return err
	}
	batch := &pgx.Batch{}
	if readCheckpoint {
		batch.Queue(qLatestCheckpoint, string(t.Session))
	}
	batch.Queue(qCreateTurn, t.ID, string(t.Session), t.EventKey, t.UserID, t.Agent, string(t.Status), t.Model,
		t.RouteReason, t.Error, t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, utc(s.stamp(t.StartedAt)), optTime(t.EndedAt), echogate.JoinSkills(t.Skills))
	batch.Queue(qAppend, string(t.Session), int64(len(input)), t.ID, utc(s.stamp(at)), roles, bodies)
	br := p.SendBatch(ctx, batch)
	defer br.Close()
	if readCheckpoint {
		if *cp, err = s.scanCheckpoint(ctx, t.Session, br.QueryRow()); err != nil {
			return err
		}
	}
	if _, err := br.Exec(); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("postgres: begin turn %q: %w", t.ID, ErrExists)
		}
		return fail(ctx, err, "begin turn %q", t.ID)
	}
	tag, err := br.Exec()
	if err != nil {
		return fail(ctx, err, "begin turn %q: append %d messages", t.ID, len(input))
	}
	if tag.RowsAffected() != int64(len(input)) {
		return fmt.Errorf("postgres: begin turn %q: append %d messages: inserted %d rows", t.ID, len(input), tag.RowsAffected())
	}
	if err := br.Close(); err != nil {
		return fail(ctx, err, "begin turn %q", t.ID)
	}
	return nil
}
