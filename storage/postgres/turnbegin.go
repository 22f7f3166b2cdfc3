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

// BeginTurn begins a turn (pipeline.TurnLog): the record is written in the round trip that
// reads what the turn's context needs (the checkpoint, the transcript after the history cache),
// and the input waits (turnstart.DeferredBatch): in most turns it is appended with the answer
// in the end's one write, so a plain turn makes one write transaction and one transcript append
// less. It is written before a tool runs or the answer is posted, or after
// turnstart.DefaultDelay. A replica that takes the event over after this process died finds the
// running turn (its record is durable before anything is posted) and whether the question was
// saved (its messages under the turn's id), as a restarted single process does.
func (s *Store) BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start {
	return turnstart.DeferredBatch(ctx, b, batchBegin{Writer: turnstart.Blocking(s), s: s}, turnstart.DefaultDelay)
}

// batchBegin is the store as a turnstart.BatchWriter.
type batchBegin struct {
	turnstart.Writer
	s *Store
}

func (b batchBegin) BeginWithInput(ctx context.Context, rec echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads) (turnstart.Read, error) {
	return b.s.BeginWithInput(ctx, rec, input, at, reads)
}

// BeginWithInput inserts the turn t and appends input (none: the record alone) to its session
// under t.ID in one batch:
// CreateTurn and AppendMessages in one round trip and one implicit transaction (both or
// neither; turnstart.BatchWriter). An id that exists already wraps ErrExists, and no input is
// appended. What reads asks for is read first in the same batch, before the writes: the
// session's newest checkpoint (as LatestCheckpoint: its Err wraps ErrNotFound when there is
// none) and the transcript entries after reads.Since (as HistorySince).
func (s *Store) BeginWithInput(ctx context.Context, t echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads) (turnstart.Read, error) {
	var rd turnstart.Read
	err := s.beginWithInput(ctx, t, input, at, reads, &rd)
	return rd, err
}

func (s *Store) beginWithInput(ctx context.Context, t echogate.TurnRecord, input []echogate.Message, at time.Time, reads turnstart.Reads, rd *turnstart.Read) error {
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
	if reads.Checkpoint {
		batch.Queue(qLatestCheckpoint, string(t.Session))
	}
	if reads.Since != nil {
		batch.Queue(qHistorySince, string(t.Session), reads.Since.Seq, historySinceLimit(reads.SinceLimit))
	}
	batch.Queue(qCreateTurn, t.ID, string(t.Session), t.EventKey, t.UserID, t.Agent, string(t.Status), t.Model,
		t.RouteReason, t.Error, t.InputTokens, t.OutputTokens, t.CachedInputTokens, t.CostUSD, utc(s.stamp(t.StartedAt)), optTime(t.EndedAt), echogate.JoinSkills(t.Skills))
	if len(input) > 0 {
		batch.Queue(qAppend, string(t.Session), int64(len(input)), t.ID, utc(s.stamp(at)), roles, bodies)
	}
	br := p.SendBatch(ctx, batch)
	defer br.Close()
	if reads.Checkpoint {
		if rd.Checkpoint, err = s.scanCheckpoint(ctx, t.Session, br.QueryRow()); err != nil {
			return err
		}
	}
	if reads.Since != nil {
		rows, err := br.Query()
		if err != nil {
			return fail(ctx, err, "begin turn %q: history since %d", t.ID, reads.Since.Seq)
		}
		h := &rd.Since
		if h.Entries, h.OK, h.Err = scanHistorySince(ctx, t.Session, *reads.Since, reads.SinceLimit, rows); h.Err != nil {
			return h.Err
		}
	}
	if _, err := br.Exec(); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("postgres: begin turn %q: %w", t.ID, ErrExists)
		}
		return fail(ctx, err, "begin turn %q", t.ID)
	}
	if len(input) > 0 {
		tag, err := br.Exec()
		if err != nil {
			return fail(ctx, err, "begin turn %q: append %d messages", t.ID, len(input))
		}
		if tag.RowsAffected() != int64(len(input)) {
			return fmt.Errorf("postgres: begin turn %q: append %d messages: inserted %d rows", t.ID, len(input), tag.RowsAffected())
		}
	}
	if err := br.Close(); err != nil {
		return fail(ctx, err, "begin turn %q", t.ID)
	}
	return nil
}
