package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
)

const (
	qRecordPosting = `UPDATE turns SET posting = ? WHERE id = ?`
	qGetPosting    = `SELECT posting FROM turns WHERE id = ?`
)

// RecordPosting records ref as the message turn's streamed answer was created as (see
// pipeline.TurnLog). An unknown turn wraps ErrNotFound.
func (s *Store) RecordPosting(ctx context.Context, turn string, ref echogate.MessageRef) error {
	if turn == "" || ref.IsZero() {
		return fmt.Errorf("sqlite: record posting of turn %q: %w: empty turn or message id", turn, ErrInvalid)
	}
	body, err := json.Marshal(ref)
	if err != nil {
		return fmt.Errorf("sqlite: record posting of turn %q: encode: %w", turn, err)
	}
	d, err := s.conns(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: record posting of turn %q: %w", turn, err)
	}
	var n int64
	err = d.write(ctx, func(tx *wtx) (err error) {
		n, err = tx.rowsAffected(qRecordPosting, string(body), turn)
		return err
	})
	if err != nil {
		return fail(ctx, err, "record posting of turn %q", turn)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: record posting of turn %q: %w", turn, ErrNotFound)
	}
	return nil
}

// GetPosting returns what RecordPosting recorded for turn: a zero ref when nothing was. An
// unknown turn wraps ErrNotFound.
func (s *Store) GetPosting(ctx context.Context, turn string) (echogate.MessageRef, error) {
	d, err := s.conns(ctx)
	if err != nil {
		return echogate.MessageRef{}, fmt.Errorf("sqlite: get posting of turn %q: %w", turn, err)
	}
	st, err := d.read(ctx, qGetPosting)
	if err != nil {
		return echogate.MessageRef{}, fail(ctx, err, "get posting of turn %q", turn)
	}
	var body string
	err = st.QueryRowContext(ctx, turn).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return echogate.MessageRef{}, fmt.Errorf("sqlite: get posting of turn %q: %w", turn, ErrNotFound)
	}
	if err != nil {
		return echogate.MessageRef{}, fail(ctx, err, "get posting of turn %q", turn)
	}
	var ref echogate.MessageRef
	if body != "" {
		if err := json.Unmarshal([]byte(body), &ref); err != nil {
			return echogate.MessageRef{}, fmt.Errorf("sqlite: get posting of turn %q: decode: %w", turn, err)
		}
	}
	return ref, nil
}
