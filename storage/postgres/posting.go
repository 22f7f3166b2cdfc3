package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/jackc/pgx/v5"
)

const (
	qRecordPosting = `UPDATE turns SET posting = $1 WHERE id = $2`
	qGetPosting    = `SELECT posting FROM turns WHERE id = $1`
)

// RecordPosting records ref as the message turn's streamed answer was created as (see
// pipeline.TurnLog). An unknown turn wraps ErrNotFound.
func (s *Store) RecordPosting(ctx context.Context, turn string, ref echogate.MessageRef) error {
	if turn == "" || ref.IsZero() {
		return fmt.Errorf("postgres: record posting of turn %q: %w: empty turn or message id", turn, ErrInvalid)
	}
	body, err := json.Marshal(ref)
	if err != nil {
		return fmt.Errorf("postgres: record posting of turn %q: encode: %w", turn, err)
	}
	p, err := s.pool(ctx, fmt.Sprintf("record posting of turn %q", turn))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, qRecordPosting, string(body), turn)
	if err != nil {
		return fail(ctx, err, "record posting of turn %q", turn)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: record posting of turn %q: %w", turn, ErrNotFound)
	}
	return nil
}

// GetPosting returns what RecordPosting recorded for turn: a zero ref when nothing was. An
// unknown turn wraps ErrNotFound.
func (s *Store) GetPosting(ctx context.Context, turn string) (echogate.MessageRef, error) {
	p, err := s.pool(ctx, fmt.Sprintf("get posting of turn %q", turn))
	if err != nil {
		return echogate.MessageRef{}, err
	}
	var body string
	err = p.QueryRow(ctx, qGetPosting, turn).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return echogate.MessageRef{}, fmt.Errorf("postgres: get posting of turn %q: %w", turn, ErrNotFound)
	}
	if err != nil {
		return echogate.MessageRef{}, fail(ctx, err, "get posting of turn %q", turn)
	}
	var ref echogate.MessageRef
	if body != "" {
		if err := json.Unmarshal([]byte(body), &ref); err != nil {
			return echogate.MessageRef{}, fmt.Errorf("postgres: get posting of turn %q: decode: %w", turn, err)
		}
	}
	return ref, nil
}
