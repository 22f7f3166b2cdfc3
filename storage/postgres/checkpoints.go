package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
	"github.com/jackc/pgx/v5"
)

// keepCheckpoints is how many checkpoints per session SaveCheckpoint keeps (the newest).
const keepCheckpoints = 3

const (
	qInsertCheckpoint = `INSERT INTO checkpoints (session, covers_seq, turn, body, created_at) VALUES ($1, $2, $3, $4, $5)`
	// The subquery is NULL while the session has at most keepCheckpoints rows: nothing goes.
	qPruneCheckpoints = `DELETE FROM checkpoints WHERE session = $1 AND id <
  (SELECT id FROM checkpoints WHERE session = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`
	qLatestCheckpoint = `SELECT covers_seq, turn, body, created_at FROM checkpoints WHERE session = $1 ORDER BY id DESC LIMIT 1`
)

// SaveCheckpoint stores cp as the newest checkpoint of cp.Session: cp.Seq is the last transcript
// Seq it summarizes, cp.Message the checkpoint message, cp.Turn the turn that made it (may be
// empty), cp.At when (zero: now). Older checkpoints beyond the newest few are removed in the same
// transaction. Deleting the session removes its checkpoints.
func (s *Store) SaveCheckpoint(ctx context.Context, cp echogate.StoredMessage) error {
	switch {
	case cp.Session == "":
		return fmt.Errorf("postgres: save checkpoint: %w: empty session key", ErrInvalid)
	case cp.Seq < 0:
		return fmt.Errorf("postgres: save checkpoint of %q: %w: negative covered seq %d", cp.Session, ErrInvalid, cp.Seq)
	case cp.Message.Content == "":
		return fmt.Errorf("postgres: save checkpoint of %q: %w: empty checkpoint text", cp.Session, ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("save checkpoint of %q", cp.Session))
	if err != nil {
		return err
	}
	body, err := json.Marshal(cp.Message)
	if err != nil {
		return fmt.Errorf("postgres: save checkpoint of %q: encode message: %w", cp.Session, err)
	}
	key := string(cp.Session)
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qInsertCheckpoint, key, cp.Seq, cp.Turn, string(body), utc(s.stamp(cp.At))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, qPruneCheckpoints, key, keepCheckpoints-1)
		return err
	})
	if err != nil {
		return fail(ctx, err, "save checkpoint of %q", cp.Session)
	}
	return nil
}

// LatestCheckpoint returns the newest checkpoint of the session (fields as SaveCheckpoint
// describes), or an error wrapping ErrNotFound when it has none.
func (s *Store) LatestCheckpoint(ctx context.Context, key echogate.SessionKey) (echogate.StoredMessage, error) {
	p, err := s.pool(ctx, fmt.Sprintf("latest checkpoint of %q", key))
	if err != nil {
		return echogate.StoredMessage{}, err
	}
	c, _ := s.scanCheckpoint(ctx, key, p.QueryRow(ctx, qLatestCheckpoint, string(key)))
	return c.Msg, c.Err
}

// scanCheckpoint reads the row of qLatestCheckpoint for key: the checkpoint, or in Err one
// wrapping ErrNotFound when there is none, or the read's error, which is also returned when
// the row could not be read (a database error; not a checkpoint that does not decode).
func (s *Store) scanCheckpoint(ctx context.Context, key echogate.SessionKey, row pgx.Row) (turnstart.Checkpoint, error) {
	cp := echogate.StoredMessage{Session: key}
	var body []byte
	err := row.Scan(&cp.Seq, &cp.Turn, &body, &cp.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return turnstart.Checkpoint{Err: fmt.Errorf("postgres: latest checkpoint of %q: %w", key, ErrNotFound)}, nil
	}
	if err != nil {
		err = fail(ctx, err, "latest checkpoint of %q", key)
		return turnstart.Checkpoint{Err: err}, err
	}
	if err := json.Unmarshal(body, &cp.Message); err != nil {
		return turnstart.Checkpoint{Err: fmt.Errorf("postgres: latest checkpoint of %q: decode message: %w", key, err)}, nil
	}
	cp.At = cp.At.UTC()
	return turnstart.Checkpoint{Msg: cp}, nil
}
